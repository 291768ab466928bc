//! The supervisor of a child rein starts outside its own namespaces (a command under full
//! access, an approved escalation, bubblewrap or Landlock without namespaces; an MCP stdio
//! server): what ties the child, and everything it starts, to rein's lifetime.
//!
//! ```text
//! rein ── supervisor (subreaper) ── command ── …  (`setsid` children, daemons)
//! ```
//!
//! The spawned child becomes the supervisor: it marks itself a child subreaper, so every
//! orphan below it (a `setsid` child, a double-forked daemon) is re-parented to it rather
//! than to init, and forks the command, which gets a parent-death signal from the
//! supervisor. A parent-death signal fires when the *thread* that forked dies; the
//! supervisor is single-threaded, while rein forks from whichever runtime thread ran the
//! spawn, so rein's death is seen instead through the life pipe (its write end only rein
//! holds): rein gone, even by SIGKILL, the supervisor kills every descendant. When the
//! command ends, the supervisor kills what it left behind and ends the way it ended, so
//! the exit status rein reads is the command's.
//!
//! The children only make raw syscalls ([`sys`]) on data prepared in the parent, as
//! required between fork and exec in a multi-threaded process.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

pub mod sys;

/// How often the supervisor reaps orphans that died while the command runs (and, where
/// `pidfd_open` is missing, how late it may notice the command's end).
const REAP_INTERVAL_MS: libc::c_int = 250;

/// Prepared in the parent; applied in the spawned child before exec.
#[derive(Clone, Copy, Debug)]
pub struct Supervisor {
    rein_alive: RawFd,
    /// rein's process group, which the supervisor joins (see [`supervise`]).
    rein_group: libc::pid_t,
}

impl Supervisor {
    pub fn new() -> io::Result<Self> {
        Ok(Self::from_pipe(life_pipe()?))
    }

    /// With the read end of the life pipe already opened.
    pub fn from_pipe(rein_alive: RawFd) -> Self {
        // SAFETY: getpgrp cannot fail.
        let rein_group = unsafe { libc::getpgrp() };
        Self {
            rein_alive,
            rein_group,
        }
    }

    /// With the descriptor that tells rein is gone (a life pipe's read end or a pidfd of
    /// rein) and rein's process group, for a supervisor that is not a fork of rein (the
    /// sandbox's trampoline).
    pub fn with_group(rein_alive: RawFd, rein_group: libc::pid_t) -> Self {
        Self {
            rein_alive,
            rein_group,
        }
    }

    /// In the spawned child: fork the command and supervise it. Returns only in the
    /// command, which goes on to exec.
    pub fn apply(self) -> io::Result<()> {
        sys::prctl(libc::PR_SET_CHILD_SUBREAPER, 1)?;
        // SAFETY: getpid cannot fail.
        let supervisor = unsafe { libc::getpid() };
        let command = sys::fork()?;
        if command > 0 {
            supervise(command, self.rein_alive, self.rein_group);
        }
        sys::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong)?;
        // SAFETY: getppid cannot fail.
        if unsafe { libc::getppid() } != supervisor {
            sys::exit(137);
        }
        Ok(())
    }
}

/// The pipe that tells monitors rein is gone: its write end stays open in rein (close-on-
/// exec, so no command inherits it) until the process ends.
pub fn life_pipe() -> io::Result<RawFd> {
    static PIPE: OnceLock<Result<(OwnedFd, OwnedFd), i32>> = OnceLock::new();
    let pipe = PIPE.get_or_init(|| {
        let mut fds = [0; 2];
        // SAFETY: the kernel writes two descriptors into our array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO));
        }
        // SAFETY: both descriptors were just created and are owned here.
        Ok(unsafe {
            use std::os::fd::FromRawFd;
            (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
        })
    });
    match pipe {
        Ok((read, _write)) => Ok(read.as_raw_fd()),
        Err(errno) => Err(io::Error::from_raw_os_error(*errno)),
    }
}

/// Wait for the command's end or rein's, reaping orphans meanwhile; then kill every
/// descendant and exit. Never returns.
///
/// rein ends a command by SIGKILLing its process group (timeout, interrupt, a dropped
/// call). The supervisor leaves that group for rein's own, so such a kill reaches the
/// command but not the supervisor, which then sees the command end and kills what
/// escaped the group (`setsid` children) as well. It ignores the signals a terminal or a
/// group-wide kill of rein's group would send: its life is rein's and the command's.
fn supervise(command: libc::pid_t, rein_alive: RawFd, rein_group: libc::pid_t) -> ! {
    sys::reset_signal_handlers();
    // SAFETY: moving ourselves to an existing group of our session; failing that (rein
    // gone already) we stay, and the life pipe says rein is gone.
    unsafe { libc::setpgid(0, rein_group) };
    sys::ignore_signals(&[
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTERM,
        libc::SIGTSTP,
        libc::SIGTTIN,
        libc::SIGTTOU,
        libc::SIGPIPE,
    ]);
    // A pidfd wakes the poll the moment the command ends; without one (Linux < 5.3) the
    // reap interval notices it.
    let exited = sys::pidfd_open(command).unwrap_or(-1);
    sys::close_all_except(&[rein_alive, exited]);
    loop {
        let mut fds = [
            libc::pollfd {
                fd: rein_alive,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: exited,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two pollfds we own (a negative fd is ignored by poll).
        unsafe { libc::poll(fds.as_mut_ptr(), 2, REAP_INTERVAL_MS) };
        if fds[0].revents != 0 {
            // rein is gone: so is everything it started.
            kill_descendants();
            sys::exit(137);
        }
        while let Some((pid, status)) = sys::try_wait_any() {
            if pid == command {
                kill_descendants();
                sys::exit_like(status);
            }
        }
    }
}

/// SIGKILL every descendant: the children listed in `/proc/thread-self/children`, again
/// and again, since a killed child's own children are re-parented here as it dies; done
/// when no child is left to wait for.
fn kill_descendants() {
    let mut buf = [0u8; 4096];
    loop {
        let Ok(n) = sys::read_file(c"/proc/thread-self/children", &mut buf) else {
            // No list to read (a kernel without it): the process group kill rein sends
            // remains; waiting here for children never killed would hang.
            return;
        };
        for pid in buf[..n]
            .split(u8::is_ascii_whitespace)
            .filter_map(parse_pid)
        {
            // SAFETY: a signal to our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        if sys::wait(-1).is_err() {
            return;
        }
    }
}

/// A decimal pid (as `/proc` names a process), without allocating; `None` for anything
/// but a positive pid that fits.
pub fn parse_pid(digits: &[u8]) -> Option<libc::pid_t> {
    if digits.is_empty() {
        return None;
    }
    let mut pid: libc::pid_t = 0;
    for d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        pid = pid
            .checked_mul(10)?
            .checked_add(libc::pid_t::from(d - b'0'))?;
    }
    (pid > 0).then_some(pid)
}
