//! Thin wrappers over the raw syscalls a process makes between fork and exec (the
//! supervisor here, and rein-tools' sandbox, which re-exports them). Each is one syscall
//! (or a few), allocates nothing and touches no lock, so they are safe in the child of a
//! multi-threaded process; each returns the `errno` as an `io::Error`.

use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;

/// A syscall's return value, or the `errno` it set.
pub fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// [`check`] for the calls that return an `int`.
pub fn check_int(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
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
