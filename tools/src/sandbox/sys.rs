//! Thin wrappers over the raw syscalls the sandbox makes between fork and exec (the
//! process ones live in rein-supervise, shared with MCP servers' supervisor). Each is
//! one syscall (or a few), allocates nothing and touches no lock, so they are safe in the
//! child of a multi-threaded process; each returns the `errno` as an `io::Error`.

use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;

pub use rein_supervise::sys::{
    check, check_int, close, close_all_except, exit, exit_like, fork, prctl, reset_signal_handlers,
    wait,
};

/// The new mount API (Linux 5.2 / 5.12), spelled out here: libc has no wrappers.
pub const OPEN_TREE_CLONE: libc::c_uint = 1;
pub const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
pub const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub const MOUNT_ATTR_NODEV: u64 = 0x4;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// A detached copy of the mount tree at `path` (with its submounts).
pub fn open_tree_clone(path: &CStr) -> io::Result<RawFd> {
    let flags =
        OPEN_TREE_CLONE | libc::AT_RECURSIVE as libc::c_uint | libc::O_CLOEXEC as libc::c_uint;
    // SAFETY: a NUL-terminated path and plain flags.
    let fd =
        check(unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) })?;
    Ok(fd as RawFd)
}

/// Attach the detached tree `fd` at `target`.
pub fn move_mount(fd: RawFd, target: &CStr) -> io::Result<()> {
    // SAFETY: an empty path relative to our descriptor, a NUL-terminated target.
    check(unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            fd,
            c"".as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    })?;
    Ok(())
}

/// Set and clear mount attributes of the mount at `path` (and its submounts when
/// `recursive`), or of the detached tree `fd` when `path` is empty.
pub fn mount_setattr(
    fd: RawFd,
    path: &CStr,
    recursive: bool,
    set: u64,
    clear: u64,
) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    let mut flags: libc::c_uint = 0;
    if recursive {
        flags |= libc::AT_RECURSIVE as libc::c_uint;
    }
    if path.is_empty() {
        flags |= libc::AT_EMPTY_PATH as libc::c_uint;
    }
    // SAFETY: the attribute struct outlives the call and its size is passed.
    check(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            fd,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    })?;
    Ok(())
}

/// `mount(2)` with optional source, type and data.
pub fn mount(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> io::Result<()> {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: NUL-terminated strings or null pointers, as mount(2) accepts.
    check_int(unsafe {
        libc::mount(
            ptr(source),
            target.as_ptr(),
            ptr(fstype),
            flags,
            ptr(data).cast(),
        )
    })?;
    Ok(())
}

/// Create an empty file (a bind-mount target) if nothing is there.
pub fn touch(path: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: a NUL-terminated path.
    let fd = check_int(unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            mode as libc::c_uint,
        )
    })?;
    close(fd);
    Ok(())
}

pub fn mkdir(path: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: a NUL-terminated path.
    match check_int(unsafe { libc::mkdir(path.as_ptr(), mode) }) {
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
        other => other.map(drop),
    }
}

pub fn symlink(target: &CStr, link: &CStr) -> io::Result<()> {
    // SAFETY: NUL-terminated paths.
    check_int(unsafe { libc::symlink(target.as_ptr(), link.as_ptr()) })?;
    Ok(())
}

pub fn chdir(path: &CStr) -> io::Result<()> {
    // SAFETY: a NUL-terminated path.
    check_int(unsafe { libc::chdir(path.as_ptr()) })?;
    Ok(())
}

pub fn unshare(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: plain flags.
    check_int(unsafe { libc::unshare(flags) })?;
    Ok(())
}

/// A connected pair of stream sockets, both close-on-exec.
pub fn socketpair() -> io::Result<[RawFd; 2]> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: the kernel writes two descriptors into our array.
    check_int(unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    })?;
    Ok(fds)
}

/// open + write + close, for `/proc/self/*` files.
pub fn write_file(path: &CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: a NUL-terminated path; the buffer outlives the write.
    unsafe {
        let fd = check_int(libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC))?;
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let err = io::Error::last_os_error();
        close(fd);
        if usize::try_from(written).ok() != Some(data.len()) {
            return Err(err);
        }
    }
    Ok(())
}
