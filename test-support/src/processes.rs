//! The processes a test's commands left behind, found by a marker in their command line,
//! and waiting for them to die on their pidfds (readable once a process has exited) rather
//! than by polling `/proc`. Shared by the end-to-end and the kernel sandbox tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::process::{pidfd_open, Pid, PidfdFlags};

/// The pids of the processes in this PID namespace.
fn pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
}

/// Pids (in this PID namespace) of live processes whose command line contains `marker`.
pub fn processes_with(marker: &str) -> Vec<i32> {
    pids().filter(|&pid| is_marked(pid, marker)).collect()
}

/// The command lines of the processes whose working directory is `dir`.
pub fn processes_in(dir: &std::path::Path) -> Vec<String> {
    pids()
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == dir))
        .map(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .unwrap_or_default()
                .replace('\0', " ")
        })
        .collect()
}

/// Whether `pid` is alive (not a zombie) and carries `marker` in its command line.
fn is_marked(pid: i32, marker: &str) -> bool {
    let dir = format!("/proc/{pid}");
    let cmdline = std::fs::read(format!("{dir}/cmdline")).unwrap_or_default();
    let stat = std::fs::read_to_string(format!("{dir}/stat")).unwrap_or_default();
    let zombie = stat
        .rsplit(')')
        .next()
        .is_some_and(|r| r.trim_start().starts_with('Z'));
    !stat.is_empty() && !zombie && String::from_utf8_lossy(&cmdline).contains(marker)
}

/// Pidfds of the marked processes. Each is checked again once its pidfd is open, so a pid
/// that died and was reused in between is not waited for.
fn pidfds_of(marker: &str) -> Vec<OwnedFd> {
    processes_with(marker)
        .into_iter()
        .filter_map(|pid| {
            let fd = pidfd_open(Pid::from_raw(pid)?, PidfdFlags::empty()).ok()?;
            is_marked(pid, marker).then_some(fd)
        })
        .collect()
}

/// Waits until no process carries `marker`, for at most `patience` (a guard against a
/// hang, never a synchronisation point): blocks on the pidfds of the marked processes
/// until each has exited, then looks again for any started meanwhile.
pub fn all_gone_within(marker: &str, patience: Duration) -> bool {
    let deadline = Instant::now() + patience;
    loop {
        let fds = pidfds_of(marker);
        if fds.is_empty() {
            return true;
        }
        if !exited_by(&fds, deadline) {
            return false;
        }
    }
}

/// Blocks on `fds` (pidfds) until each process has exited, or `deadline` passes (false).
fn exited_by(fds: &[OwnedFd], deadline: Instant) -> bool {
    let mut fds: Vec<&OwnedFd> = fds.iter().collect();
    while !fds.is_empty() {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return false;
        };
        let timeout = Timespec::try_from(left).unwrap();
        let mut polled: Vec<PollFd<'_>> = fds
            .iter()
            .map(|fd| PollFd::new(*fd, PollFlags::IN))
            .collect();
        match poll(&mut polled, Some(&timeout)) {
            Ok(0) => return false,
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => panic!("poll on pidfds: {e}"),
        }
        let exited: Vec<bool> = polled.iter().map(|p| !p.revents().is_empty()).collect();
        drop(polled);
        let mut exited = exited.into_iter();
        fds.retain(|_| !exited.next().unwrap_or(false));
    }
    true
}

/// Pidfds of `pids` (those still alive; a pid already gone has nothing to wait for).
pub fn pidfds(pids: &[i32]) -> Vec<OwnedFd> {
    pids.iter()
        .filter_map(|&pid| pidfd_open(Pid::from_raw(pid)?, PidfdFlags::empty()).ok())
        .collect()
}

/// Waits until every process behind `fds` (from [`pidfds`], opened while they were known
/// to be the processes meant) has exited, for at most `patience`.
pub fn exited_within(fds: &[OwnedFd], patience: Duration) -> bool {
    exited_by(fds, Instant::now() + patience)
}

/// SIGKILLs the processes behind `fds` (a control run's survivors).
pub fn kill_fds(fds: &[OwnedFd]) {
    for fd in fds {
        let _ = rustix::process::pidfd_send_signal(fd.as_fd(), rustix::process::Signal::KILL);
    }
}

/// [`all_gone_within`] with the tests' usual patience.
pub fn all_gone(marker: &str) -> bool {
    all_gone_within(marker, Duration::from_secs(15))
}

/// SIGKILLs every marked process (a control run's survivors).
pub fn kill_all(marker: &str) {
    for fd in pidfds_of(marker) {
        let _ = rustix::process::pidfd_send_signal(fd.as_fd(), rustix::process::Signal::KILL);
    }
}
