//! File access for patches that a concurrent rename or symlink cannot redirect.
//!
//! A patch runs in rein's own process, outside the sandbox, while sandboxed commands the
//! model started may still be changing the workspace. Checking a path and then writing it by
//! name would let a symlink planted in between carry the write anywhere. So every target's
//! directory is opened once, while the patch is staged, without following any symlink
//! (`openat2` with `RESOLVE_NO_SYMLINKS`, or, where the kernel lacks it, a walk that opens
//! one component at a time with `O_NOFOLLOW`); every later read, write, rename and delete is
//! a single-name operation relative to that open directory. A symlink that appears on the
//! path afterwards can only make the patch fail; it can never redirect it. Paths are never
//! written by name, on any kernel.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, CWD};
use rustix::io::Errno;

/// Files larger than this are not read into memory to be patched.
pub const MAX_PATCHED_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// How directories are opened without following symlinks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// One `openat2(RESOLVE_NO_SYMLINKS)` call (Linux 5.6 and later).
    Openat2,
    /// One `openat(O_NOFOLLOW)` per path component (older kernels, or `openat2` filtered).
    NoFollowWalk,
}

/// 0: not probed yet, 1: openat2, 2: walk.
static MECHANISM: AtomicU8 = AtomicU8::new(0);

/// The mechanism in use: `openat2` when the kernel has it, else the walk.
pub fn mechanism() -> Mechanism {
    match MECHANISM.load(Ordering::Relaxed) {
        1 => Mechanism::Openat2,
        2 => Mechanism::NoFollowWalk,
        _ => {
            let found = probe();
            set_mechanism(found);
            tracing::debug!("apply_patch opens directories with {found:?}");
            found
        }
    }
}

/// Force a mechanism (tests exercise the fallback on kernels that have `openat2`).
#[doc(hidden)]
pub fn set_mechanism(m: Mechanism) {
    let code = match m {
        Mechanism::Openat2 => 1,
        Mechanism::NoFollowWalk => 2,
    };
    MECHANISM.store(code, Ordering::Relaxed);
}

#[cfg(target_os = "linux")]
fn probe() -> Mechanism {
    match openat2_dir(Path::new("/")) {
        Ok(_) => Mechanism::Openat2,
        Err(_) => Mechanism::NoFollowWalk,
    }
}

#[cfg(not(target_os = "linux"))]
fn probe() -> Mechanism {
    Mechanism::NoFollowWalk
}

#[cfg(target_os = "linux")]
fn openat2_dir(path: &Path) -> std::io::Result<OwnedFd> {
    use rustix::fs::ResolveFlags;
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    loop {
        match rustix::fs::openat2(CWD, path, flags, Mode::empty(), resolve) {
            // The kernel asks for a retry when a rename raced the lookup.
            Err(Errno::AGAIN) | Err(Errno::INTR) => continue,
            other => return other.map_err(std::io::Error::from),
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn openat2_dir(_path: &Path) -> std::io::Result<OwnedFd> {
    Err(std::io::Error::from(Errno::NOSYS))
}

/// An open directory: every operation names one entry in it and follows no symlink.
#[derive(Clone, Debug)]
pub struct Dir {
    fd: Arc<OwnedFd>,
    /// Where it was when opened (for messages only; never used to reach it again).
    path: PathBuf,
}

/// A symlink where a directory was when the patch was staged: the path changed under the
/// patch (it was resolved, so it had none).
#[derive(Debug, thiserror::Error)]
#[error("{} is a symlink (it was not when the patch was staged)", path.display())]
pub struct SymlinkOnPath {
    pub path: PathBuf,
}

fn symlink_error(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        SymlinkOnPath {
            path: path.to_path_buf(),
        },
    )
}

/// Whether `e` says a symlink appeared on the path.
pub fn is_symlink_on_path(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(
        <dyn std::error::Error + std::marker::Send + std::marker::Sync + 'static>::is::<
            SymlinkOnPath,
        >,
    )
}

impl Dir {
    /// Open the directory at `path`, which must be absolute and contain no `.`/`..` and no
    /// symlink (a resolved path); any symlink on it makes this fail.
    pub fn open(path: &Path) -> std::io::Result<Dir> {
        if !path.is_absolute()
            || path
                .components()
                .any(|c| matches!(c, Component::CurDir | Component::ParentDir))
        {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} is not a resolved absolute path", path.display()),
            ));
        }
        let fd = match mechanism() {
            Mechanism::Openat2 => openat2_dir(path).map_err(|e| loop_error(e, path))?,
            Mechanism::NoFollowWalk => walk(path)?,
        };
        Ok(Dir {
            fd: Arc::new(fd),
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The subdirectory `name`, not following a symlink.
    pub fn child(&self, name: &OsStr) -> std::io::Result<Dir> {
        let path = self.path.join(name);
        let fd = open_child_dir(&self.fd, name, &path)?;
        Ok(Dir {
            fd: Arc::new(fd),
            path,
        })
    }

    /// Create the subdirectory `name`.
    pub fn mkdir(&self, name: &OsStr) -> std::io::Result<()> {
        rustix::fs::mkdirat(&*self.fd, name, Mode::from_raw_mode(0o777))?;
        Ok(())
    }

    pub fn rmdir(&self, name: &OsStr) -> std::io::Result<()> {
        rustix::fs::unlinkat(&*self.fd, name, AtFlags::REMOVEDIR)?;
        Ok(())
    }

    /// What `name` is, without following it; `None` when absent.
    pub fn kind(&self, name: &OsStr) -> std::io::Result<Option<(FileType, Mode)>> {
        match rustix::fs::statat(&*self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some((
                FileType::from_raw_mode(st.st_mode),
                Mode::from_raw_mode(st.st_mode),
            ))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The content of the regular file `name`, or `None` when there is none. Never blocks
    /// on a FIFO or a device and never reads more than `max` bytes: anything but a regular
    /// file of at most `max` bytes is an error.
    pub fn read(&self, name: &OsStr, max: u64) -> Result<Option<Vec<u8>>, ReadError> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&*self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) => return Err(ReadError::Symlink),
            Err(e) => return Err(ReadError::Io(e.into())),
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| ReadError::Io(e.into()))?;
        let kind = FileType::from_raw_mode(st.st_mode);
        if kind != FileType::RegularFile {
            return Err(ReadError::NotRegular(kind_name(kind)));
        }
        let size = u64::try_from(st.st_size).unwrap_or(0);
        if size > max {
            return Err(ReadError::TooLarge { size, max });
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        // The file may grow while it is read: the cap holds whatever its size said.
        std::fs::File::from(fd)
            .take(max + 1)
            .read_to_end(&mut bytes)
            .map_err(ReadError::Io)?;
        if bytes.len() as u64 > max {
            return Err(ReadError::TooLarge {
                size: bytes.len() as u64,
                max,
            });
        }
        Ok(Some(bytes))
    }

    /// Create `name`, which must not exist, with `content` and `mode` (the process umask
    /// applies when `mode` is `None`).
    pub fn create(&self, name: &OsStr, content: &[u8], mode: Option<Mode>) -> std::io::Result<()> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        let fd = rustix::fs::openat(
            &*self.fd,
            name,
            flags | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        )?;
        let written = (|| {
            if let Some(mode) = mode {
                rustix::fs::fchmod(&fd, mode)?;
            }
            let mut file = std::fs::File::from(fd);
            std::io::Write::write_all(&mut file, content)
        })();
        if written.is_err() {
            let _ = self.remove(name);
        }
        written
    }

    /// Rename `from` to `to`, both in this directory (replacing `to`).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> std::io::Result<()> {
        rustix::fs::renameat(&*self.fd, from, &*self.fd, to)?;
        Ok(())
    }

    /// Remove the entry `name` (a symlink itself, never its target).
    pub fn remove(&self, name: &OsStr) -> std::io::Result<()> {
        rustix::fs::unlinkat(&*self.fd, name, AtFlags::empty())?;
        Ok(())
    }
}

/// Why reading a file to patch failed.
#[derive(Debug)]
pub enum ReadError {
    /// The name is a symlink (the path was resolved, so one appeared since).
    Symlink,
    /// A FIFO, a device, a socket or a directory: never opened for reading.
    NotRegular(&'static str),
    TooLarge {
        size: u64,
        max: u64,
    },
    Io(std::io::Error),
}

pub fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symlink",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "not a regular file",
    }
}

/// Open `name` in `dir` as a directory, refusing a symlink (with a clear error).
fn open_child_dir(dir: &OwnedFd, name: &OsStr, path: &Path) -> std::io::Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => Ok(fd),
        // With O_PATH a symlink fails O_DIRECTORY rather than O_NOFOLLOW: tell them apart.
        Err(Errno::NOTDIR) | Err(Errno::LOOP) => {
            match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                    Err(symlink_error(path))
                }
                _ => Err(Errno::NOTDIR.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// The fallback: open `/`, then each component with `O_NOFOLLOW`.
pub(crate) fn walk(path: &Path) -> std::io::Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut fd = rustix::fs::openat(CWD, "/", flags, Mode::empty())?;
    let mut at = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) => {}
            Component::Normal(name) => {
                at.push(name);
                fd = open_child_dir(&fd, name, &at)?;
            }
            Component::CurDir | Component::ParentDir => {
                return Err(std::io::ErrorKind::InvalidInput.into());
            }
        }
    }
    Ok(fd)
}

fn loop_error(e: std::io::Error, path: &Path) -> std::io::Error {
    if e.raw_os_error() == Some(Errno::LOOP.raw_os_error()) {
        symlink_error(path)
    } else {
        e
    }
}

/// Where a patch target lives: the deepest directory of its path that existed when the
/// patch was staged (held open), the directories still to create under it, and the name.
#[derive(Clone, Debug)]
pub struct Location {
    pub anchor: Dir,
    pub missing: Vec<OsString>,
    pub name: OsString,
}

impl Location {
    /// Pin the directory of the resolved absolute `path`.
    pub fn pin(path: &Path) -> std::io::Result<Location> {
        let name = path
            .file_name()
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{} names no file", path.display()),
                )
            })?
            .to_owned();
        let parent = path.parent().unwrap_or(Path::new("/"));
        // Find the deepest ancestor that exists, then open it without following links.
        let mut missing = Vec::new();
        let mut existing = parent;
        loop {
            match std::fs::symlink_metadata(existing) {
                // A file where a directory must be: creating it will fail, at commit, as
                // it would for any path write.
                Ok(meta) if !meta.is_dir() && !meta.file_type().is_symlink() => {
                    if let Some(n) = existing.file_name() {
                        missing.push(n.to_owned());
                    }
                    existing = existing.parent().unwrap_or(Path::new("/"));
                }
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if let Some(n) = existing.file_name() {
                        missing.push(n.to_owned());
                    }
                    existing = existing.parent().unwrap_or(Path::new("/"));
                }
                Err(e) => return Err(e),
            }
        }
        missing.reverse();
        Ok(Location {
            anchor: Dir::open(existing)?,
            missing,
            name,
        })
    }

    /// The directory holding the file, if it existed at staging.
    pub fn dir(&self) -> Option<&Dir> {
        self.missing.is_empty().then_some(&self.anchor)
    }

    /// The directory holding the file as it is now (the patch may have created it), not
    /// following symlinks; `None` if it does not exist.
    pub fn current_dir(&self) -> std::io::Result<Option<Dir>> {
        let mut dir = self.anchor.clone();
        for name in &self.missing {
            dir = match dir.child(name) {
                Ok(d) => d,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
        }
        Ok(Some(dir))
    }

    /// The directory holding the file, creating what is missing; every directory created
    /// is pushed onto `created` (parent and name, outermost first) so a failure can remove
    /// them. A directory that appeared meanwhile is used if it is a real directory.
    pub fn ensure_dir(&self, created: &mut Vec<(Dir, OsString)>) -> std::io::Result<Dir> {
        let mut dir = self.anchor.clone();
        for name in &self.missing {
            match dir.mkdir(name) {
                Ok(()) => created.push((dir.clone(), name.clone())),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
            dir = dir.child(name)?;
        }
        Ok(dir)
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_mechanisms_refuse_a_symlinked_component() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("d")).unwrap();
        std::os::unix::fs::symlink(real.join("d"), real.join("link")).unwrap();
        assert!(walk(&real.join("d")).is_ok());
        let refused = walk(&real.join("link")).unwrap_err();
        assert!(refused.to_string().contains("symlink"), "{refused}");
        if probe() == Mechanism::Openat2 {
            assert!(openat2_dir(&real.join("d")).is_ok());
            let e = openat2_dir(&real.join("link")).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(Errno::LOOP.raw_os_error()));
        }
    }

    #[test]
    fn reading_refuses_fifos_devices_and_oversized_files_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        let fifo = real.join("fifo");
        rustix::fs::mkfifoat(CWD, &fifo, Mode::from_raw_mode(0o600)).unwrap();
        std::os::unix::fs::symlink("/dev/zero", real.join("zero")).unwrap();
        std::fs::write(real.join("big"), vec![b'x'; 100]).unwrap();
        let d = Dir::open(&real).unwrap();
        assert!(matches!(
            d.read(OsStr::new("fifo"), 10),
            Err(ReadError::NotRegular("a FIFO"))
        ));
        assert!(matches!(
            d.read(OsStr::new("zero"), 10),
            Err(ReadError::Symlink)
        ));
        assert!(matches!(
            d.read(OsStr::new("big"), 10),
            Err(ReadError::TooLarge { size: 100, max: 10 })
        ));
        assert_eq!(d.read(OsStr::new("absent"), 10).unwrap(), None);
    }
}
