//! Read-only places inside writable roots (each root's `.git`). Landlock only grants, so
//! it cannot carve a read-only hole out of a writable tree; instead the child enters a
//! private mount namespace (inside a user namespace when not root) and bind-mounts each
//! such place read-only over itself. Everything the child runs here is prepared in the
//! parent, so the child makes only syscalls.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::SandboxError;

/// The mounts and id maps one child applies.
#[derive(Clone, Debug)]
pub struct ReadOnlyMounts {
    /// Each place with the flags its mount already has (a remount in a user namespace
    /// must keep them).
    places: Vec<(CString, libc::c_ulong)>,
    /// Set when not root: the user namespace maps our own ids.
    id_maps: Option<(Vec<u8>, Vec<u8>)>,
}

impl ReadOnlyMounts {
    pub fn new(places: &[PathBuf]) -> Result<Self, SandboxError> {
        let mut prepared = Vec::new();
        for place in places {
            let path = CString::new(place.as_os_str().as_bytes())
                .map_err(|_| SandboxError::Setup(format!("{} contains NUL", place.display())))?;
            prepared.push((path.clone(), locked_flags(&path)));
        }
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let id_maps = (uid != 0).then(|| {
            (
                format!("{uid} {uid} 1\n").into_bytes(),
                format!("{gid} {gid} 1\n").into_bytes(),
            )
        });
        Ok(Self {
            places: prepared,
            id_maps,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
    }

    /// Enter a private mount namespace and make every place read-only. For `pre_exec`.
    pub fn apply(&self) -> std::io::Result<()> {
        if self.places.is_empty() {
            return Ok(());
        }
        let last = std::io::Error::last_os_error;
        // SAFETY: syscalls with pointers to NUL-terminated strings prepared in the parent.
        unsafe {
            let flags = match self.id_maps {
                Some(_) => libc::CLONE_NEWUSER | libc::CLONE_NEWNS,
                None => libc::CLONE_NEWNS,
            };
            if libc::unshare(flags) != 0 {
                return Err(last());
            }
            if let Some((uid_map, gid_map)) = &self.id_maps {
                write_file(c"/proc/self/setgroups", b"deny")?;
                write_file(c"/proc/self/uid_map", uid_map)?;
                write_file(c"/proc/self/gid_map", gid_map)?;
            }
            let none = std::ptr::null();
            if libc::mount(
                none,
                c"/".as_ptr(),
                none,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return Err(last());
            }
            for (path, locked) in &self.places {
                if libc::mount(
                    path.as_ptr(),
                    path.as_ptr(),
                    none,
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ) != 0
                {
                    return Err(last());
                }
                let remount = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | locked;
                if libc::mount(none, path.as_ptr(), none, remount, std::ptr::null()) != 0 {
                    return Err(last());
                }
            }
        }
        Ok(())
    }
}

/// Flags of the mount holding `path` that an unprivileged remount may not drop.
fn locked_flags(path: &CString) -> libc::c_ulong {
    // SAFETY: statvfs writes into the zeroed struct we pass.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    pairs
        .iter()
        .filter(|(st_flag, _)| st.f_flag & st_flag != 0)
        .fold(0, |acc, (_, ms)| acc | ms)
}

/// open + write + close, for `/proc/self/*` files in the child.
unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> std::io::Result<()> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let written = libc::write(fd, data.as_ptr().cast(), data.len());
    let err = std::io::Error::last_os_error();
    libc::close(fd);
    if usize::try_from(written).ok() != Some(data.len()) {
        return Err(err);
    }
    Ok(())
}
