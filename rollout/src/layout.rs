//! Where rollout files live under `$REIN_HOME`:
//!
//! ```text
//! $REIN_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread-id>.jsonl   listed threads
//! $REIN_HOME/archived_sessions/rollout-<time>-<thread-id>.jsonl     archived threads
//! $REIN_HOME/blobs/<aa>/<sha256>                                    large payloads
//! $REIN_HOME/index.sqlite                                           listing index (a cache)
//! $REIN_HOME/locks/proc-<pid>-<nonce>.lock                          a live process's lock
//! ```
//!
//! Every function takes the home as a parameter; only [`default_home`] reads the
//! environment.

use std::path::{Path, PathBuf};

use rein_protocol::ThreadId;

use super::time::Civil;

pub const SESSIONS_DIR: &str = "sessions";
pub const ARCHIVED_DIR: &str = "archived_sessions";
pub const BLOBS_DIR: &str = "blobs";
pub const INDEX_FILE: &str = "index.sqlite";
pub const LOCKS_DIR: &str = "locks";
pub const HOME_ENV: &str = "REIN_HOME";

/// `$REIN_HOME` if set and non-empty, else `~/.rein`; `None` when there is no home
/// directory to put it in.
pub fn default_home() -> Option<PathBuf> {
    match std::env::var_os(HOME_ENV) {
        Some(home) if !home.is_empty() => Some(PathBuf::from(home)),
        _ => dirs::home_dir().map(|h| h.join(".rein")),
    }
}

/// The file name of a thread's rollout created at `created_ms`.
pub fn file_name(thread: ThreadId, created_ms: u64) -> String {
    format!(
        "rollout-{}-{thread}.jsonl",
        Civil::from_ms(created_ms).file_stamp()
    )
}

/// Where a new thread's rollout goes.
pub fn session_path(home: &Path, thread: ThreadId, created_ms: u64) -> PathBuf {
    let day = Civil::from_ms(created_ms);
    home.join(SESSIONS_DIR)
        .join(format!("{:04}", day.year))
        .join(format!("{:02}", day.month))
        .join(format!("{:02}", day.day))
        .join(file_name(thread, created_ms))
}

pub fn archived_dir(home: &Path) -> PathBuf {
    home.join(ARCHIVED_DIR)
}

pub fn sessions_dir(home: &Path) -> PathBuf {
    home.join(SESSIONS_DIR)
}

/// The thread id a rollout file name ends with, if it is one.
pub fn thread_id_of(path: &Path) -> Option<ThreadId> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_prefix("rollout-")?.strip_suffix(".jsonl")?;
    // A UUID in text form is 36 characters.
    let id = stem.get(stem.len().checked_sub(36)?..)?;
    id.parse().ok()
}

/// Every `rollout-*.jsonl` under `dir` (recursively), in no particular order. A missing
/// directory has none.
pub fn rollout_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                pending.push(path);
            } else if thread_id_of(&path).is_some() {
                found.push(path);
            }
        }
    }
    Ok(found)
}

/// The `rollout-*.jsonl` files directly in `dir` (not below it).
pub fn rollout_files_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut found = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if thread_id_of(&path).is_some() {
            found.push(path);
        }
    }
    Ok(found)
}

/// Directories that hold rollouts (the day directories under `sessions/`, and
/// `archived_sessions/`) whose contents changed at or after `since_ms`.
pub fn dirs_changed_since(home: &Path, since_ms: u64) -> std::io::Result<Vec<PathBuf>> {
    let changed = |dir: &Path| -> std::io::Result<bool> {
        let modified = match std::fs::metadata(dir) {
            Ok(meta) => meta.modified()?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        let ms = modified
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Ok(ms >= since_ms)
    };
    let subdirs = |dir: &Path| -> std::io::Result<Vec<PathBuf>> {
        let mut dirs = Vec::new();
        match std::fs::read_dir(dir) {
            Ok(entries) => {
                for entry in entries {
                    let entry = entry?;
                    if entry.file_type()?.is_dir() {
                        dirs.push(entry.path());
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        Ok(dirs)
    };
    let mut found = Vec::new();
    for year in subdirs(&sessions_dir(home))? {
        for month in subdirs(&year)? {
            for day in subdirs(&month)? {
                if changed(&day)? {
                    found.push(day);
                }
            }
        }
    }
    let archived = archived_dir(home);
    if changed(&archived)? {
        found.push(archived);
    }
    Ok(found)
}

/// Finds a thread's rollout by scanning the listed and archived directories. The index
/// answers this faster; this is the fallback that makes a stale index harmless.
/// Every file found is returned (more than one is a duplicate the caller reports), the
/// listed one first.
pub fn scan_for_thread(home: &Path, thread: ThreadId) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for dir in [sessions_dir(home), archived_dir(home)] {
        let mut files: Vec<PathBuf> = rollout_files(&dir)?
            .into_iter()
            .filter(|p| thread_id_of(p) == Some(thread))
            .collect();
        files.sort();
        found.extend(files);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_path_is_dated_and_names_the_thread() {
        let thread = ThreadId::new();
        let path = session_path(Path::new("/h"), thread, 1_796_008_609_147);
        assert_eq!(
            path,
            PathBuf::from(format!(
                "/h/sessions/2026/11/30/rollout-2026-11-30T03-16-49-{thread}.jsonl"
            ))
        );
        assert_eq!(thread_id_of(&path), Some(thread));
        assert_eq!(thread_id_of(Path::new("/h/rollout-x.jsonl")), None);
    }
}
