//! The command's view of the file system, built in a private mount namespace: every mount
//! read-only and `nosuid`, the writable roots re-attached read-write (`nosuid`, `nodev`),
//! each read-only place inside them (every `.git`, `gitdir:` targets) bound read-only over
//! itself, a minimal `/dev` (null, zero, full, random, urandom, tty and the `fd` links)
//! instead of the host's devices, and a `/proc` of the command's own PID namespace.
//!
//! Read-only mounts make chmod, chown, utime and extended attributes fail with EROFS
//! outside the roots, which Landlock does not cover. Everything here is prepared in the
//! parent; the child only makes syscalls (see `super::sys`).

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::sys::{self, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};
use super::SandboxError;
use crate::policy::WritableRoots;

/// The device files the minimal `/dev` carries (bound from the host's).
const DEVICES: [&std::ffi::CStr; 6] = [
    c"/dev/null",
    c"/dev/zero",
    c"/dev/full",
    c"/dev/random",
    c"/dev/urandom",
    c"/dev/tty",
];

/// The mounts one command's namespace gets.
#[derive(Clone, Debug)]
pub struct MountPlan {
    writable: Vec<CString>,
    read_only: Vec<CString>,
    fresh_proc: bool,
    cwd: CString,
}

pub fn c_path(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| SandboxError::Setup(format!("{} contains NUL", path.display())))
}

impl MountPlan {
    /// `fresh_proc`: mount a `/proc` of the new PID namespace (where the kernel allows it).
    pub fn new(
        writable: &WritableRoots,
        cwd: &Path,
        fresh_proc: bool,
    ) -> Result<Self, SandboxError> {
        Ok(Self {
            writable: outermost(&writable.roots)
                .iter()
                .map(|p| c_path(p))
                .collect::<Result<_, _>>()?,
            read_only: writable
                .read_only
                .iter()
                .map(|p| c_path(p))
                .collect::<Result<_, _>>()?,
            fresh_proc,
            cwd: c_path(cwd)?,
        })
    }

    /// In the child, inside its new mount (and PID) namespace.
    pub fn apply(&self) -> io::Result<()> {
        sys::mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None)?;
        let mut devices: [RawFd; DEVICES.len()] = [-1; DEVICES.len()];
        for (slot, path) in devices.iter_mut().zip(DEVICES) {
            *slot = sys::open_tree_clone(path).unwrap_or(-1);
        }
        sys::mount_setattr(
            libc::AT_FDCWD,
            c"/",
            true,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
            0,
        )?;
        for root in &self.writable {
            let tree = sys::open_tree_clone(root)?;
            let set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
            // Submounts that came read-only from outside stay so (their flag is locked).
            sys::mount_setattr(tree, c"", true, set, MOUNT_ATTR_RDONLY)
                .or_else(|_| sys::mount_setattr(tree, c"", false, set, MOUNT_ATTR_RDONLY))?;
            let attached = sys::move_mount(tree, root);
            sys::close(tree);
            attached?;
        }
        for place in &self.read_only {
            // A place found when the plan was made may be gone by now (another process
            // removed its repository in the shared temp dir): nothing is there to protect,
            // as for a place made later. Anything else stops the command.
            match sys::mount(Some(place), place, None, libc::MS_BIND | libc::MS_REC, None) {
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                bound => bound?,
            }
            sys::mount_setattr(
                libc::AT_FDCWD,
                place,
                true,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                0,
            )?;
        }
        self.minimal_dev(&devices)?;
        if self.fresh_proc {
            sys::mount(
                Some(c"proc"),
                c"/proc",
                Some(c"proc"),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                None,
            )?;
        }
        // The cwd was entered before these mounts; enter it again to be on them.
        sys::chdir(&self.cwd)
    }

    fn minimal_dev(&self, devices: &[RawFd]) -> io::Result<()> {
        sys::mount(
            Some(c"tmpfs"),
            c"/dev",
            Some(c"tmpfs"),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            Some(c"mode=0755,size=64k"),
        )?;
        for (&fd, path) in devices.iter().zip(DEVICES) {
            if fd < 0 {
                continue;
            }
            sys::touch(path, 0o666)?;
            let attached = sys::move_mount(fd, path);
            sys::close(fd);
            attached?;
        }
        for (target, link) in [
            (c"/proc/self/fd", c"/dev/fd"),
            (c"/proc/self/fd/0", c"/dev/stdin"),
            (c"/proc/self/fd/1", c"/dev/stdout"),
            (c"/proc/self/fd/2", c"/dev/stderr"),
        ] {
            sys::symlink(target, link)?;
        }
        sys::mkdir(c"/dev/shm", 0o755)?;
        sys::mkdir(c"/dev/pts", 0o755)?;
        sys::mount_setattr(libc::AT_FDCWD, c"/dev", false, MOUNT_ATTR_RDONLY, 0)
    }
}

/// Roots not inside another root (their mount carries the inner ones).
fn outermost(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut kept: Vec<PathBuf> = Vec::new();
    let mut sorted = roots.to_vec();
    sorted.sort_by_key(|p| p.components().count());
    for root in sorted {
        if root.is_dir() && !kept.iter().any(|k| root.starts_with(k)) {
            kept.push(root);
        }
    }
    kept
}
