//! Waiting for something that files show (a rollout completed, a file closed) on inotify
//! events, never by sleeping between looks.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::fs::inotify::{self, CreateFlags, WatchFlags};

/// Waits until `done()` holds, looking again whenever a file under `root` (which must
/// exist) is created, written, closed after writing, moved in or deleted, for at most `patience`
/// (a guard against a hang). Directories created meanwhile are watched as they appear.
pub fn wait_until_files_show(
    root: &Path,
    patience: Duration,
    mut done: impl FnMut() -> bool,
) -> bool {
    let deadline = Instant::now() + patience;
    let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).unwrap();
    let watched = WatchFlags::CREATE
        | WatchFlags::MODIFY
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::MOVED_TO
        | WatchFlags::DELETE;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // (Re)watch every directory before looking, so no change after the look is missed;
        // watching a directory twice is harmless.
        let mut dirs = vec![root.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            if inotify::add_watch(&fd, &dir, watched).is_err() {
                continue;
            }
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    dirs.push(entry.path());
                }
            }
        }
        if done() {
            return true;
        }
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return false;
        };
        let timeout = Timespec::try_from(left).unwrap();
        match poll(&mut [PollFd::new(&fd, PollFlags::IN)], Some(&timeout)) {
            Ok(0) => return done(),
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => panic!("poll on inotify: {e}"),
        }
        // Drain what arrived; `done` says whether it mattered.
        while rustix::io::read(&fd, &mut buf).is_ok_and(|n| n > 0) {}
    }
}
