//! A spawned command's process group. Every command runs as the leader of its own group
//! (`process_group(0)`), so one signal reaches the command and everything it forked; the
//! guard sends it on timeout, cancellation, and when the guard is dropped (a tool call
//! aborted mid-flight), so nothing the model started outlives its call by accident.

/// Kills the whole group when dropped, unless released.
#[derive(Debug)]
pub struct ProcessGroupGuard {
    pgid: Option<i32>,
}

impl ProcessGroupGuard {
    /// Guards the group led by `leader` (a child spawned with `process_group(0)`).
    pub fn new(leader: u32) -> Self {
        Self {
            pgid: i32::try_from(leader).ok().filter(|&p| p > 0),
        }
    }

    pub fn pgid(&self) -> Option<i32> {
        self.pgid
    }

    /// SIGKILL every process in the group. Idempotent: a group that is gone is fine.
    pub fn kill(&self) {
        if let Some(pgid) = self.pgid {
            kill_group(pgid);
        }
    }

    /// Stop guarding: the group is someone else's to kill now.
    pub fn release(mut self) -> Option<i32> {
        self.pgid.take()
    }
}

impl Drop for ProcessGroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// SIGKILL the process group `pgid`.
pub fn kill_group(pgid: i32) {
    // SAFETY: killpg only sends a signal; a stale or invalid pgid yields ESRCH, which is
    // exactly "already gone".
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

/// Whether any process of the group `pgid` is still alive.
pub fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    unsafe { libc::killpg(pgid, 0) == 0 }
}
