//! The single-writer lock of a thread's rollout: an exclusive `flock` on
//! `<rollout>.lock`, whose content names the holder (`pid <n> on <host>`).
//!
//! `flock` belongs to the open file description, so the kernel drops it when the holder
//! dies: a lock file left by a dead process is simply taken over. Two writers in one
//! process conflict too, since each opens the file itself.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rein_protocol::ThreadId;
use rustix::fs::{flock, FlockOperation};

use crate::recorder::RecorderError;

/// Held for as long as the writer lives; removes the lock file when dropped.
#[derive(Debug)]
pub struct ThreadLock {
    path: PathBuf,
    // Keeps the flock; closing it releases the lock.
    file: File,
}

/// The lock file that guards `rollout`.
pub fn lock_path(rollout: &Path) -> PathBuf {
    let mut name = rollout.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Who this process is, as written into lock files.
pub fn holder_description() -> String {
    let uname = rustix::system::uname();
    let host = uname.nodename().to_string_lossy();
    format!("pid {} on {host}", std::process::id())
}

impl ThreadLock {
    /// Takes the lock of `rollout` for `thread`, or says who holds it.
    pub fn acquire(rollout: &Path, thread: ThreadId) -> Result<Self, RecorderError> {
        let path = lock_path(rollout);
        let io = |source| RecorderError::Io {
            path: path.clone(),
            source,
        };
        // The holder may unlink the file between our open and our flock; then we hold a
        // lock on a dead inode. Retry until the locked file is the one at the path.
        for _ in 0..8 {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io)?;
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {}
                Err(rustix::io::Errno::WOULDBLOCK) => {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    let holder = holder.trim();
                    return Err(RecorderError::Locked {
                        thread,
                        holder: if holder.is_empty() {
                            "another writer (unnamed)".to_owned()
                        } else {
                            holder.to_owned()
                        },
                    });
                }
                Err(errno) => return Err(io(errno.into())),
            }
            let same_file = match std::fs::metadata(&path) {
                Ok(at_path) => {
                    let ours = file.metadata().map_err(io)?;
                    at_path.ino() == ours.ino() && at_path.dev() == ours.dev()
                }
                Err(_) => false,
            };
            if !same_file {
                continue;
            }
            file.set_len(0).map_err(io)?;
            file.rewind().map_err(io)?;
            file.write_all(format!("{}\n", holder_description()).as_bytes())
                .map_err(io)?;
            return Ok(ThreadLock { path, file });
        }
        Err(RecorderError::Locked {
            thread,
            holder: "a writer that keeps replacing the lock file".to_owned(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ThreadLock {
    fn drop(&mut self) {
        // Unlink while still holding the lock, so nobody can lock this inode and believe
        // it guards the path (see the retry in `acquire`).
        let _ = std::fs::remove_file(&self.path);
        let _ = flock(&self.file, FlockOperation::Unlock);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn second_writer_is_refused_with_the_holder_named() {
        let dir = tempfile::tempdir().unwrap();
        let rollout = dir.path().join("r.jsonl");
        let thread = ThreadId::new();
        let first = ThreadLock::acquire(&rollout, thread).unwrap();
        let err = ThreadLock::acquire(&rollout, thread).unwrap_err();
        match err {
            RecorderError::Locked { thread: t, holder } => {
                assert_eq!(t, thread);
                assert_eq!(holder, holder_description());
            }
            other => panic!("expected Locked, got {other:?}"),
        }
        drop(first);
        assert!(!lock_path(&rollout).exists());
        ThreadLock::acquire(&rollout, thread).unwrap();
    }

    #[test]
    fn an_unlocked_leftover_lock_file_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let rollout = dir.path().join("r.jsonl");
        std::fs::write(lock_path(&rollout), "pid 999999 on gone\n").unwrap();
        let lock = ThreadLock::acquire(&rollout, ThreadId::new()).unwrap();
        let content = std::fs::read_to_string(lock.path()).unwrap();
        assert_eq!(content.trim(), holder_description());
    }
}
