//! Consolidation: the accepted memories of one scope written into one `MEMORY.md`
//! (Codex's phase two ends in a `MEMORY.md` under its memories root). The database stays
//! the truth and the file is a projection of it: rendered from the records alone (no
//! clock, no use counts), so the same memories give the same bytes and an unchanged file
//! is not rewritten; written whole through a temporary file, fsync and rename, so a crash
//! leaves the old file or the new one, never half of one; each memory keeps its id and
//! where it came from. Edits to the file are not read back.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rein_core::memory::{MemoryError, MemoryFilter};
use rein_core::store::time::Civil;
use rein_protocol::{MemoryRecord, MemoryScope, MemoryState, RepoKey};
use sha2::{Digest, Sha256};

use super::SqliteMemoryStore;

/// The consolidated file's name, as Codex's.
pub const MEMORY_MD: &str = "MEMORY.md";

/// Which memories one file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Consolidation {
    /// The user's: `$REIN_HOME/memories/user/MEMORY.md`.
    User,
    /// One repository's: `$REIN_HOME/memories/repos/<name>-<hash>/MEMORY.md`.
    Repo(RepoKey),
}

/// What a consolidation did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consolidated {
    pub path: PathBuf,
    /// The accepted memories the file holds.
    pub memories: usize,
    /// False when the file already said exactly this (it was not rewritten).
    pub written: bool,
}

impl Consolidation {
    /// Where its file is under `home`. A repository's directory is its root's name and
    /// a hash of its key (root and remote), so two checkouts never share one.
    pub fn path(&self, home: &Path) -> PathBuf {
        let dir = home.join("memories");
        match self {
            Consolidation::User => dir.join("user").join(MEMORY_MD),
            Consolidation::Repo(repo) => {
                let name = repo
                    .root
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "root".to_owned());
                let digest = Sha256::digest(super::db::repo_key(repo).as_bytes());
                let hash: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
                dir.join("repos")
                    .join(format!("{name}-{hash}"))
                    .join(MEMORY_MD)
            }
        }
    }

    fn filter(&self) -> MemoryFilter {
        let (scope, repo) = match self {
            Consolidation::User => (MemoryScope::User, None),
            Consolidation::Repo(repo) => (MemoryScope::Repo, Some(repo.clone())),
        };
        MemoryFilter {
            scope: Some(scope),
            repo,
            states: vec![MemoryState::Accepted],
            ..MemoryFilter::default()
        }
    }

    fn title(&self) -> String {
        match self {
            Consolidation::User => "# Memory: the user's\n".to_owned(),
            Consolidation::Repo(repo) => format!(
                "# Memory: repository {}{}\n",
                repo.root.display(),
                repo.remote
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ),
        }
    }
}

/// Write the accepted memories of `which` into its file under `home` (blocking).
pub fn consolidate(
    store: &SqliteMemoryStore,
    home: &Path,
    which: &Consolidation,
) -> Result<Consolidated, MemoryError> {
    let mut records = store.with_db(|db| db.list(&which.filter()))?;
    // Oldest first, ties by id: the order does not depend on how the store lists them.
    records.sort_by_key(|r| (r.created_ms, r.id));
    let text = render(which, &records);
    let path = which.path(home);
    let io_error = |e: std::io::Error| MemoryError::Storage {
        path: path.clone(),
        detail: e.to_string(),
    };
    let written = match std::fs::read(&path) {
        Ok(old) if old == text.as_bytes() => false,
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(io_error(e)),
    };
    if written {
        write_atomically(&path, text.as_bytes()).map_err(io_error)?;
    }
    Ok(Consolidated {
        path,
        memories: records.len(),
        written,
    })
}

/// The file's text: a title, what it is, then one entry per memory with its provenance.
pub fn render(which: &Consolidation, records: &[MemoryRecord]) -> String {
    let mut text = which.title();
    text.push_str(
        "\n<!-- Written by `rein memory consolidate` from rein's memory database, which \
         stays the truth: edits here are not read back. -->\n\n",
    );
    if records.is_empty() {
        text.push_str("No accepted memories.\n");
    }
    for record in records {
        let mut lines = record.content.trim().lines();
        text.push_str(&format!("- {}\n", lines.next().unwrap_or_default()));
        for line in lines {
            text.push_str(&format!("  {line}\n"));
        }
        text.push_str(&format!("  <!-- {} -->\n", provenance(record)));
    }
    text
}

/// `id 0193…, kept 2026-12-04, from thread T turn U`.
fn provenance(record: &MemoryRecord) -> String {
    let day = Civil::from_ms(record.created_ms);
    let mut said = format!(
        "id {}, kept {:04}-{:02}-{:02}",
        record.id, day.year, day.month, day.day
    );
    if let Some(thread) = record.thread_id {
        said.push_str(&format!(", from thread {thread}"));
        if let Some(turn) = record.turn_id {
            said.push_str(&format!(" turn {turn}"));
        }
    }
    if !record.keywords.is_empty() {
        said.push_str(&format!(", keywords {}", record.keywords.join(" ")));
    }
    said
}

/// Temporary file beside `path`, written and synced, renamed over it, the directory
/// synced: the file is the old one or the new one whatever happens.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = path.as_os_str().to_owned();
    // Unique per write: two threads of one process may consolidate the same file at once.
    tmp.push(format!(".{}.tmp", uuid::Uuid::now_v7().simple()));
    let tmp = PathBuf::from(tmp);
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        // Nothing half-written is left beside the file.
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    crate::writer::sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(root: &str, remote: Option<&str>) -> Consolidation {
        Consolidation::Repo(RepoKey {
            root: PathBuf::from(root),
            remote: remote.map(str::to_owned),
        })
    }

    #[test]
    fn two_checkouts_of_one_name_get_two_files_and_the_user_one_of_its_own() {
        let home = Path::new("/h");
        let a = repo("/work/app", Some("git@example.com:app.git")).path(home);
        let b = repo("/other/app", Some("git@example.com:app.git")).path(home);
        let c = repo("/work/app", None).path(home);
        assert_ne!(a, b);
        assert_ne!(a, c);
        for path in [&a, &b, &c] {
            let dir = path.parent().unwrap();
            assert_eq!(dir.parent().unwrap(), Path::new("/h/memories/repos"));
            let name = dir.file_name().unwrap().to_str().unwrap();
            assert!(
                name.starts_with("app-") && name.len() == "app-".len() + 12,
                "{name}"
            );
        }
        assert_eq!(
            Consolidation::User.path(home),
            PathBuf::from("/h/memories/user/MEMORY.md")
        );
        // The same key always names the same file.
        assert_eq!(
            a,
            repo("/work/app", Some("git@example.com:app.git")).path(home)
        );
    }
}
