//! Thin wrappers over the raw syscalls the sandbox makes between fork and exec. Each is
//! one syscall (or a few), allocates nothing and touches no lock, so they are safe in the
//! child of a multi-threaded process; each returns the `errno` as an `io::Error`.

use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;

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

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn check_int(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
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

pub fn close(fd: RawFd) {
    // SAFETY: closing a descriptor we own; errors are irrelevant here.
    unsafe {
        libc::close(fd);
    }
}

/// Close every descriptor from 3 up, except those in `keep`.
pub fn close_all_except(keep: &[RawFd]) {
    let mut from: libc::c_uint = 3;
    let mut sorted = [RawFd::MAX; 4];
    for (slot, fd) in sorted.iter_mut().zip(keep) {
        *slot = *fd;
    }
    sorted.sort_unstable();
    for fd in sorted {
        let Ok(fd) = libc::c_uint::try_from(fd) else {
            continue;
        };
        if fd == RawFd::MAX as libc::c_uint {
            break;
        }
        if fd > from {
            // SAFETY: closing a range of descriptors nobody else in this process uses.
            unsafe { libc::syscall(libc::SYS_close_range, from, fd - 1, 0) };
        }
        from = from.max(fd + 1);
    }
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_close_range, from, libc::c_uint::MAX, 0) };
}

pub fn prctl(option: libc::c_int, arg: libc::c_ulong) -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    check_int(unsafe {
        libc::prctl(
            option,
            arg,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    })?;
    Ok(())
}

pub fn unshare(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: plain flags.
    check_int(unsafe { libc::unshare(flags) })?;
    Ok(())
}

/// `fork(2)` without the libc wrapper's atfork handlers (which may take locks).
pub fn fork() -> io::Result<libc::pid_t> {
    // SAFETY: a raw clone with SIGCHLD is fork; the child only makes raw syscalls.
    let pid = check(unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    })?;
    Ok(pid as libc::pid_t)
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

/// Reset every catchable signal to its default action, so no handler of the parent (say,
/// the async runtime's) runs in a process that will never exec.
pub fn reset_signal_handlers() {
    // SAFETY: sigaction with a zeroed struct (SIG_DFL, empty mask) for each signal.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        for sig in 1..libc::SIGRTMAX() {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::sigaction(sig, &action, std::ptr::null_mut());
            }
        }
    }
}

pub fn exit(code: i32) -> ! {
    // SAFETY: _exit runs no atexit handlers and never returns.
    unsafe { libc::_exit(code) }
}

/// Wait for `pid` (or any child with -1), retrying on EINTR.
pub fn wait(pid: libc::pid_t) -> io::Result<(libc::pid_t, libc::c_int)> {
    let mut status = 0;
    loop {
        // SAFETY: the kernel writes the status into our integer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r >= 0 {
            return Ok((r, status));
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
}

/// End this process the way `status` (a wait status) says a process ended: the same exit
/// code, or death by the same signal.
pub fn exit_like(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // SAFETY: default action restored, then the signal sent to ourselves.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
        }
        exit(128 + sig);
    }
    exit(libc::WEXITSTATUS(status));
}

/// A descriptor that polls readable once `pid` (a child) has exited.
pub fn pidfd_open(pid: libc::pid_t) -> io::Result<RawFd> {
    // SAFETY: a pid and no flags; the kernel returns a new descriptor.
    let fd = check(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0 as libc::c_uint) })?;
    RawFd::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))
}

/// Reap one child that has ended, without waiting: its pid and wait status.
pub fn try_wait_any() -> Option<(libc::pid_t, libc::c_int)> {
    let mut status = 0;
    // SAFETY: the kernel writes the status into our integer.
    let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
    (pid > 0).then_some((pid, status))
}

/// open + read + close into `buf`: the bytes read (at most `buf.len()`).
pub fn read_file(path: &CStr, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: a NUL-terminated path; the buffer outlives the read.
    unsafe {
        let fd = check_int(libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC))?;
        let read = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        let err = io::Error::last_os_error();
        close(fd);
        usize::try_from(read).map_err(|_| err)
    }
}

/// Ignore each of `signals`.
pub fn ignore_signals(signals: &[libc::c_int]) {
    // SAFETY: sigaction with a zeroed struct set to SIG_IGN.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_IGN;
        for &sig in signals {
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}
