//! Who may write a thread's rollout: one writer at a time, across processes, without an
//! open file per thread. A writer holds a *claim* on the thread, the file
//! `<rollout>.lock`, whose first line names the holder (`pid <n> on <host>`) and whose
//! second line names the holder's *process lock*, `<home>/locks/proc-<pid>-<nonce>.lock`.
//! Each process holds an exclusive `flock` on its own process lock for as long as it lives
//! (one file descriptor per process and home, however many threads it has), so a claim
//! is alive exactly while that flock is held: the kernel drops it when the holder dies,
//! and a claim left by a crash is taken over. Checking and writing claims happens under
//! `<home>/locks/claims.lock` (a short `flock`), so two processes never both take a stale
//! claim. Two writers in one process conflict too: the check opens the process lock
//! afresh, and `flock`s of different open files exclude each other.
//!
//! A claim file without a second line was written by an older rein, which held a
//! `flock` on the claim file itself; that flock is what is checked for such a file.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use rein_protocol::ThreadId;
use rustix::fs::{flock, FlockOperation};

use rein_core::recorder::RecorderError;

/// The directory of a home's process locks and of the claims mutex (`<home>/locks`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockDir {
    dir: PathBuf,
}

const CLAIMS_MUTEX: &str = "claims.lock";
const PROC_PREFIX: &str = "proc-";
/// The claim line that names the holder's process lock.
const PROC_LINE: &str = "proc ";

impl LockDir {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The lock directory of the home whose blob store is `blobs_dir` (`<home>/blobs`).
    pub fn beside_blobs(blobs_dir: &Path) -> Self {
        Self::new(blobs_dir.parent().unwrap_or(blobs_dir).join("locks"))
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Removes process locks left by processes that are gone (cheap housekeeping; a
    /// stale one is harmless, it only takes a directory entry).
    pub fn sweep(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let _mutex = self.claims_mutex();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with(PROC_PREFIX) && !self.process_alive(name) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    fn claims_mutex(&self) -> Option<File> {
        std::fs::create_dir_all(&self.dir).ok()?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(self.dir.join(CLAIMS_MUTEX))
            .ok()?;
        // Held for microseconds by whoever has it; waiting here is on a store thread.
        flock(&file, FlockOperation::LockExclusive).ok()?;
        Some(file)
    }

    /// Whether the process that holds the process lock `name` of this directory lives.
    fn process_alive(&self, name: &str) -> bool {
        if name.contains('/') || !name.starts_with(PROC_PREFIX) {
            return false;
        }
        if PROCESS_LOCKS
            .get()
            .and_then(|m| m.lock().ok()?.get(&self.dir).map(|p| p.name == name))
            .unwrap_or(false)
        {
            return true;
        }
        held_by_someone(&self.dir.join(name))
    }
}

/// True when another open file holds a `flock` on `path` (false if it does not exist).
fn held_by_someone(path: &Path) -> bool {
    let Ok(file) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    match flock(&file, FlockOperation::NonBlockingLockShared) {
        Ok(()) => false,
        Err(rustix::io::Errno::WOULDBLOCK) => true,
        // Cannot tell: count it as held, refusing is the safe side.
        Err(_) => true,
    }
}

/// This process's lock in one lock directory, held until the process exits.
struct ProcessLock {
    name: String,
    _file: File,
}

static PROCESS_LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<ProcessLock>>>> = OnceLock::new();

fn process_lock(dir: &LockDir) -> Result<Arc<ProcessLock>, RecorderError> {
    let locks = PROCESS_LOCKS.get_or_init(|| Mutex::new(HashMap::new()));
    let mut locks = locks
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(lock) = locks.get(&dir.dir) {
        return Ok(Arc::clone(lock));
    }
    let io = |source| RecorderError::io(dir.dir.clone(), source);
    std::fs::create_dir_all(&dir.dir).map_err(io)?;
    let name = format!(
        "{PROC_PREFIX}{}-{}.lock",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    );
    let path = dir.dir.join(&name);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| RecorderError::io(path.clone(), e))?;
    flock(&file, FlockOperation::NonBlockingLockExclusive)
        .map_err(|e| RecorderError::io(path.clone(), e.into()))?;
    file.write_all(format!("{}\n", holder_description()).as_bytes())
        .map_err(|e| RecorderError::io(path.clone(), e))?;
    let lock = Arc::new(ProcessLock { name, _file: file });
    locks.insert(dir.dir.clone(), Arc::clone(&lock));
    Ok(lock)
}

/// A thread's claim, held for as long as its writer lives; released (the claim file
/// removed) when dropped. Holds no open file.
#[derive(Debug)]
pub struct ThreadLock {
    path: PathBuf,
    locks: LockDir,
    content: String,
}

/// The claim file that guards `rollout`.
pub fn lock_path(rollout: &Path) -> PathBuf {
    let mut name = rollout.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Who this process is, as written into claim files.
pub fn holder_description() -> String {
    let uname = rustix::system::uname();
    let host = uname.nodename().to_string_lossy();
    format!("pid {} on {host}", std::process::id())
}

fn read_claim(path: &Path) -> Option<String> {
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let mut text = String::new();
    // A claim is two short lines; anything longer is not one of ours.
    (&mut file).take(4096).read_to_string(&mut text).ok()?;
    Some(text)
}

impl ThreadLock {
    /// Claims `rollout` for `thread`, or says who holds it.
    pub fn acquire(
        locks: &LockDir,
        rollout: &Path,
        thread: ThreadId,
    ) -> Result<Self, RecorderError> {
        super::io_guard::assert_off_executor("claiming a thread");
        let ours = process_lock(locks)?;
        let path = lock_path(rollout);
        let _mutex = locks.claims_mutex();
        if let Some(existing) = read_claim(&path) {
            let mut lines = existing.lines();
            let holder = lines.next().unwrap_or("").trim().to_owned();
            let proc_name = lines.find_map(|l| l.strip_prefix(PROC_LINE)).map(str::trim);
            let alive = match proc_name {
                Some(name) => locks.process_alive(name),
                None => held_by_someone(&path),
            };
            if alive {
                return Err(RecorderError::Locked {
                    thread,
                    holder: if holder.is_empty() {
                        "another writer (unnamed)".to_owned()
                    } else {
                        holder
                    },
                });
            }
            if let Some(name) = proc_name {
                if !name.contains('/') && name.starts_with(PROC_PREFIX) {
                    let _ = std::fs::remove_file(locks.dir.join(name));
                }
            }
        }
        let content = format!("{}\n{PROC_LINE}{}\n", holder_description(), ours.name);
        write_atomically(&path, content.as_bytes())
            .map_err(|e| RecorderError::io(path.clone(), e))?;
        Ok(ThreadLock {
            path,
            locks: locks.clone(),
            content,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves the claim along with its rollout (archive, unarchive).
    pub fn follow(&mut self, new_rollout: &Path) -> std::io::Result<()> {
        let to = lock_path(new_rollout);
        write_atomically(&to, self.content.as_bytes())?;
        let _ = std::fs::remove_file(&self.path);
        self.path = to;
        Ok(())
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)?;
    file.write_all(bytes)?;
    drop(file);
    std::fs::rename(&tmp, path)
}

impl Drop for ThreadLock {
    fn drop(&mut self) {
        let _mutex = self.locks.claims_mutex();
        // Only our own claim is removed: one taken over after we were presumed dead
        // belongs to its new holder.
        if read_claim(&self.path).as_deref() == Some(self.content.as_str()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn second_writer_is_refused_with_the_holder_named() {
        let dir = tempfile::tempdir().unwrap();
        let locks = LockDir::new(dir.path().join("locks"));
        let rollout = dir.path().join("r.jsonl");
        let thread = ThreadId::new();
        let first = ThreadLock::acquire(&locks, &rollout, thread).unwrap();
        let err = ThreadLock::acquire(&locks, &rollout, thread).unwrap_err();
        match err {
            RecorderError::Locked { thread: t, holder } => {
                assert_eq!(t, thread);
                assert_eq!(holder, holder_description());
            }
            other => panic!("expected Locked, got {other:?}"),
        }
        drop(first);
        assert!(!lock_path(&rollout).exists());
        ThreadLock::acquire(&locks, &rollout, thread).unwrap();
    }

    #[test]
    fn an_unlocked_leftover_lock_file_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let locks = LockDir::new(dir.path().join("locks"));
        let rollout = dir.path().join("r.jsonl");
        std::fs::write(lock_path(&rollout), "pid 999999 on gone\n").unwrap();
        let lock = ThreadLock::acquire(&locks, &rollout, ThreadId::new()).unwrap();
        let content = std::fs::read_to_string(lock.path()).unwrap();
        assert_eq!(content.lines().next().unwrap(), holder_description());
    }

    #[test]
    fn a_claim_naming_a_dead_process_lock_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let locks = LockDir::new(dir.path().join("locks"));
        std::fs::create_dir_all(locks.path()).unwrap();
        let rollout = dir.path().join("r.jsonl");
        std::fs::write(locks.path().join("proc-1-dead.lock"), "pid 1 on gone\n").unwrap();
        std::fs::write(
            lock_path(&rollout),
            "pid 1 on gone\nproc proc-1-dead.lock\n",
        )
        .unwrap();
        ThreadLock::acquire(&locks, &rollout, ThreadId::new()).unwrap();
        assert!(!locks.path().join("proc-1-dead.lock").exists());
    }
}
