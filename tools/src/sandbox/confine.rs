//! What runs between fork and exec of a sandboxed command, and the processes it makes.
//!
//! With namespaces, the spawned child (the *monitor*, in rein's PID namespace) unshares a
//! mount and a PID namespace (inside a user namespace when rein is not root) and forks
//! the namespace's init, which builds the mounts ([`super::mounts`]) and forks the
//! command. The command drops every capability, sets no-new-privs, enters its Landlock
//! domain and installs the seccomp filters, then execs.
//!
//! ```text
//! rein ── monitor (rein's pid ns) ── init (pid 1) ── command (pid 2) ── …
//! ```
//!
//! Lifetimes: when the command exits, init reports its status to the monitor and exits,
//! and the kernel kills whatever is left in the namespace (`setsid` children, double-forked
//! daemons). Killing the monitor (rein's timeout, cancellation, its process-group kill)
//! kills init through its parent-death signal, and the namespace with it. If rein itself
//! dies, even by SIGKILL, the monitor sees rein's end of a pipe close and kills init. The
//! command also gets a session of its own, so it has no controlling terminal.
//!
//! Without namespaces (machines that forbid them) the child becomes a supervisor
//! ([`rein_supervise`]) and the command it forks confines itself in place and execs.
//!
//! Everything is prepared in the parent; the children only make syscalls (see
//! [`super::sys`]), as required between fork and exec in a multi-threaded process.

use std::io;
use std::os::fd::{OwnedFd, RawFd};

use super::caps;
use super::mounts::MountPlan;
use super::seccomp::Filters;
use super::sys;
use super::{landlock, SandboxError, SandboxSpec};
use rein_supervise::{life_pipe, Supervisor};

/// How a command's namespaces are set up.
#[derive(Clone, Debug)]
struct Namespaces {
    /// Set when not root: the user namespace maps our own ids.
    id_maps: Option<(Vec<u8>, Vec<u8>)>,
    mounts: MountPlan,
}

/// Everything the child applies before exec, prepared in the parent.
pub(crate) struct Confinement {
    namespaces: Option<Namespaces>,
    ruleset: OwnedFd,
    filters: Filters,
    last_cap: i32,
    root: bool,
    /// The read end of a pipe whose write end only rein holds (it reads EOF once rein is
    /// gone), or a pidfd of rein (readable once it is gone).
    rein_alive: RawFd,
}

impl Confinement {
    /// `namespaces`: confine in fresh namespaces (else in place); `fresh_proc`: mount the
    /// PID namespace's own `/proc`.
    pub(crate) fn new(
        abi: i32,
        namespaces: bool,
        fresh_proc: bool,
        spec: &SandboxSpec,
        cwd: &std::path::Path,
    ) -> Result<Self, SandboxError> {
        let rein_alive = life_pipe().map_err(|e| SandboxError::Setup(format!("pipe: {e}")))?;
        Self::with_life(abi, namespaces, fresh_proc, spec, cwd, rein_alive)
    }

    /// As [`Confinement::new`], with the descriptor that polls readable once rein is gone
    /// (a pidfd of rein in the trampoline, see [`super::launch`]).
    pub(crate) fn with_life(
        abi: i32,
        namespaces: bool,
        fresh_proc: bool,
        spec: &SandboxSpec,
        cwd: &std::path::Path,
        rein_alive: RawFd,
    ) -> Result<Self, SandboxError> {
        let targets = landlock::write_targets(&spec.writable, !namespaces);
        // SAFETY: geteuid/getegid cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let namespaces = if namespaces {
            Some(Namespaces {
                id_maps: (uid != 0).then(|| {
                    (
                        format!("{uid} {uid} 1\n").into_bytes(),
                        format!("{gid} {gid} 1\n").into_bytes(),
                    )
                }),
                mounts: MountPlan::new(&spec.writable, cwd, fresh_proc)?,
            })
        } else {
            None
        };
        Ok(Self {
            namespaces,
            ruleset: landlock::ruleset(abi, &targets, spec.network)?,
            filters: super::seccomp::filters(spec.network)?,
            last_cap: caps::last_cap(),
            root: uid == 0,
            rein_alive,
        })
    }

    /// In the spawned child, before exec.
    pub(crate) fn apply(&self) -> io::Result<()> {
        let Some(ns) = &self.namespaces else {
            // No PID namespace to end with rein: a supervisor ties the command to it.
            Supervisor::from_pipe(self.rein_alive).apply()?;
            return self.confine_command(self.root);
        };
        sys::reset_signal_handlers();
        let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWPID;
        if ns.id_maps.is_some() {
            flags |= libc::CLONE_NEWUSER;
            // rein is not dumpable, and neither is this copy of it: its /proc files belong
            // to root, so it could not write its own id maps.
            sys::prctl(libc::PR_SET_DUMPABLE, 1)?;
        }
        sys::unshare(flags)?;
        if let Some((uid_map, gid_map)) = &ns.id_maps {
            sys::write_file(c"/proc/self/setgroups", b"deny")?;
            sys::write_file(c"/proc/self/uid_map", uid_map)?;
            sys::write_file(c"/proc/self/gid_map", gid_map)?;
        }
        sys::prctl(libc::PR_SET_DUMPABLE, 0)?;
        let [monitor_end, init_end] = sys::socketpair()?;
        let init = sys::fork()?;
        if init > 0 {
            sys::close(init_end);
            monitor(init, monitor_end, self.rein_alive);
        }
        sys::close(monitor_end);
        sys::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong)?;
        if peer_gone(init_end) {
            sys::exit(137);
        }
        ns.mounts.apply()?;
        let command = sys::fork()?;
        if command > 0 {
            reap(command, init_end);
        }
        // SAFETY: setsid has no arguments; the command is not a group leader here.
        if unsafe { libc::setsid() } < 0 {
            return Err(io::Error::last_os_error());
        }
        // In its own user namespace (or as root) the command holds every capability of
        // that namespace until it drops them here.
        self.confine_command(true)
    }

    /// Drop privileges and enter the Landlock domain and the seccomp filters.
    fn confine_command(&self, privileged: bool) -> io::Result<()> {
        sys::prctl(libc::PR_SET_NO_NEW_PRIVS, 1)?;
        landlock::restrict_self(&self.ruleset)?;
        caps::drop_all(self.last_cap, privileged)?;
        self.filters.install()
    }
}

/// Whether the other end of `socket` is closed (checked without waiting).
fn peer_gone(socket: RawFd) -> bool {
    let mut poll = libc::pollfd {
        fd: socket,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd we own, zero timeout.
    let r = unsafe { libc::poll(&mut poll, 1, 0) };
    r > 0 && poll.revents & (libc::POLLHUP | libc::POLLERR) != 0
}

/// The monitor: wait until init reports the command's status (or dies), or until rein
/// is gone; then end the way the command ended. Never returns.
fn monitor(init: libc::pid_t, from_init: RawFd, rein_alive: RawFd) -> ! {
    sys::close_all_except(&[from_init, rein_alive]);
    let mut fds = [
        libc::pollfd {
            fd: from_init,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: rein_alive,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: two pollfds we own; no timeout.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if r < 0 {
            if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break;
        }
        if fds[1].revents != 0 || fds[0].revents != 0 {
            break;
        }
    }
    if fds[0].revents == 0 {
        // rein is gone: take the namespace down with it.
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(init, libc::SIGKILL) };
        let _ = sys::wait(init);
        sys::exit(137);
    }
    let mut status: libc::c_int = 0;
    // SAFETY: reads at most the size of our integer.
    let got = unsafe {
        libc::read(
            from_init,
            (&mut status as *mut libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>(),
        )
    };
    let init_status = sys::wait(init).map(|(_, s)| s).unwrap_or(0);
    if usize::try_from(got).ok() == Some(std::mem::size_of::<libc::c_int>()) {
        sys::exit_like(status);
    }
    // Init died before the command ended (killed, or its setup failed).
    sys::exit_like(init_status);
}

/// Init: reap every process of the namespace until the command ends, then report its
/// status and exit, which ends the namespace. Never returns.
fn reap(command: libc::pid_t, to_monitor: RawFd) -> ! {
    sys::close_all_except(&[to_monitor]);
    loop {
        match sys::wait(-1) {
            Ok((pid, status)) if pid == command => {
                // SAFETY: writes our integer to the socket.
                unsafe {
                    libc::write(
                        to_monitor,
                        (&status as *const libc::c_int).cast(),
                        std::mem::size_of::<libc::c_int>(),
                    );
                }
                sys::exit(0);
            }
            Ok(_) => {}
            Err(_) => sys::exit(1),
        }
    }
}
