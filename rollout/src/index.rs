//! The listing index: one SQLite row per thread (id, file, created/updated time, cwd,
//! model, title = first user message, name, archived, fork parent), updated by writers as they
//! go and rebuilt from the files by `RolloutStore::reindex`. It is a cache: anything it
//! says can be recomputed from the rollouts, and a thread missing from it is still found
//! by scanning.
//!
//! Listing uses keyset pagination: the cursor is the sort key and id of the last row
//! returned, so a page costs one index range scan however deep it is.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rein_protocol::{GoalStatus, ThreadId};
use rusqlite::{params, Connection, OptionalExtension};

use rein_core::store::{ListQuery, SortKey, ThreadEntry, ThreadKinds, ThreadPage};

use super::RolloutError;

/// Titles are previews; the full message is in the rollout.
const TITLE_CHARS: usize = 200;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS threads (
    thread_id   TEXT PRIMARY KEY,
    path        TEXT NOT NULL,
    created_ms  INTEGER NOT NULL,
    updated_ms  INTEGER NOT NULL,
    cwd         TEXT NOT NULL,
    model       TEXT NOT NULL,
    title       TEXT,
    archived    INTEGER NOT NULL DEFAULT 0,
    forked_from TEXT,
    name        TEXT,
    parent_thread_id TEXT,
    goal        TEXT
);
CREATE TABLE IF NOT EXISTS index_state (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS threads_by_created ON threads (archived, created_ms DESC, thread_id DESC);
CREATE INDEX IF NOT EXISTS threads_by_updated ON threads (archived, updated_ms DESC, thread_id DESC);
CREATE INDEX IF NOT EXISTS threads_by_cwd_updated
    ON threads (cwd, archived, updated_ms DESC, thread_id DESC);
CREATE INDEX IF NOT EXISTS threads_by_cwd_created
    ON threads (cwd, archived, created_ms DESC, thread_id DESC);
";

#[derive(Debug)]
pub struct RolloutIndex {
    conn: Connection,
    path: PathBuf,
}

impl RolloutIndex {
    /// Opens (creating if needed) the index at `path`.
    pub fn open(path: &Path) -> Result<Self, RolloutError> {
        let err = |source: rusqlite::Error| RolloutError::Index {
            path: path.to_path_buf(),
            source: Box::new(source),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(RolloutError::io("creating", dir))?;
        }
        let conn = Connection::open(path).map_err(err)?;
        // Several writers (threads, processes) update it; wait for each other briefly.
        conn.busy_timeout(Duration::from_secs(5)).map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        add_missing_columns(&conn).map_err(err)?;
        Ok(RolloutIndex {
            conn,
            path: path.to_path_buf(),
        })
    }

    fn err(&self) -> impl FnOnce(rusqlite::Error) -> RolloutError + '_ {
        move |source| RolloutError::Index {
            path: self.path.clone(),
            source: Box::new(source),
        }
    }

    /// Inserts or replaces a thread's row.
    pub fn upsert(&self, entry: &ThreadEntry) -> Result<(), RolloutError> {
        upsert_on(&self.conn, entry).map_err(self.err())
    }

    pub fn set_title_if_empty(&self, thread: ThreadId, title: &str) -> Result<(), RolloutError> {
        self.conn
            .execute(
                "UPDATE threads SET title = ?2 WHERE thread_id = ?1 AND title IS NULL",
                params![thread.to_string(), preview(title)],
            )
            .map(drop)
            .map_err(self.err())
    }

    pub fn set_name(&self, thread: ThreadId, name: &str) -> Result<(), RolloutError> {
        self.conn
            .execute(
                "UPDATE threads SET name = ?2 WHERE thread_id = ?1",
                params![thread.to_string(), preview(name)],
            )
            .map(drop)
            .map_err(self.err())
    }

    pub fn set_goal(&self, thread: ThreadId, goal: Option<GoalStatus>) -> Result<(), RolloutError> {
        self.conn
            .execute(
                "UPDATE threads SET goal = ?2 WHERE thread_id = ?1",
                params![thread.to_string(), goal.map(GoalStatus::as_str)],
            )
            .map(drop)
            .map_err(self.err())
    }

    pub fn touch(&self, thread: ThreadId, updated_ms: u64) -> Result<(), RolloutError> {
        self.conn
            .execute(
                "UPDATE threads SET updated_ms = max(updated_ms, ?2) WHERE thread_id = ?1",
                params![thread.to_string(), to_sql(updated_ms)],
            )
            .map(drop)
            .map_err(self.err())
    }

    pub fn set_location(
        &self,
        thread: ThreadId,
        path: &Path,
        archived: bool,
    ) -> Result<(), RolloutError> {
        self.conn
            .execute(
                "UPDATE threads SET path = ?2, archived = ?3 WHERE thread_id = ?1",
                params![thread.to_string(), path.to_string_lossy(), archived],
            )
            .map(drop)
            .map_err(self.err())
    }

    pub fn get(&self, thread: ThreadId) -> Result<Option<ThreadEntry>, RolloutError> {
        self.conn
            .query_row(
                "SELECT thread_id, path, created_ms, updated_ms, cwd, model, title, archived, forked_from, name, parent_thread_id, goal
                 FROM threads WHERE thread_id = ?1",
                params![thread.to_string()],
                row_to_entry,
            )
            .optional()
            .map_err(self.err())
    }

    /// When the directories were last checked for rollouts the index missed (ms).
    pub fn last_refresh_ms(&self) -> Result<u64, RolloutError> {
        self.conn
            .query_row(
                "SELECT value FROM index_state WHERE key = 'last_refresh_ms'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map(|v| v.map_or(0, |v| u64::try_from(v).unwrap_or(0)))
            .map_err(self.err())
    }

    pub fn set_last_refresh_ms(&self, ms: u64) -> Result<(), RolloutError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO index_state (key, value) VALUES ('last_refresh_ms', ?1)",
                params![to_sql(ms)],
            )
            .map(drop)
            .map_err(self.err())
    }

    /// Starts a transaction that [`Self::commit`] ends: the indexer groups the updates
    /// that arrive together into one.
    pub fn begin(&self) -> Result<(), RolloutError> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(self.err())
    }

    pub fn commit(&self) -> Result<(), RolloutError> {
        self.conn.execute_batch("COMMIT").map_err(self.err())
    }

    /// Ends a transaction that failed part way, keeping nothing of it.
    pub fn rollback(&self) {
        let _ = self.conn.execute_batch("ROLLBACK");
    }

    pub fn count(&self) -> Result<u64, RolloutError> {
        self.conn
            .query_row("SELECT count(*) FROM threads", [], |r| r.get::<_, i64>(0))
            .map(|n| u64::try_from(n).unwrap_or(0))
            .map_err(self.err())
    }

    /// Replaces every row with `entries` in one transaction.
    pub fn replace_all(&mut self, entries: &[ThreadEntry]) -> Result<(), RolloutError> {
        let path = self.path.clone();
        let err = |source: rusqlite::Error| RolloutError::Index {
            path,
            source: Box::new(source),
        };
        let tx = self.conn.transaction().map_err(err)?;
        let result = (|| {
            tx.execute("DELETE FROM threads", [])?;
            for entry in entries {
                upsert_on(&tx, entry)?;
            }
            tx.commit()
        })();
        result.map_err(|source| RolloutError::Index {
            path: self.path.clone(),
            source: Box::new(source),
        })
    }

    /// One page of threads, newest first.
    pub fn list(&self, query: &ListQuery) -> Result<ThreadPage, RolloutError> {
        let column = match query.sort {
            SortKey::Created => "created_ms",
            SortKey::Updated => "updated_ms",
        };
        let mut sql = String::from(
            "SELECT thread_id, path, created_ms, updated_ms, cwd, model, title, archived, forked_from, name, parent_thread_id, goal
             FROM threads WHERE archived = ?1",
        );
        let mut args: Vec<rusqlite::types::Value> = vec![i64::from(query.archived).into()];
        if let Some(cwd) = &query.cwd {
            args.push(cwd.to_string_lossy().into_owned().into());
            sql.push_str(&format!(" AND cwd = ?{}", args.len()));
        }
        match query.kinds {
            ThreadKinds::Roots => sql.push_str(" AND parent_thread_id IS NULL"),
            ThreadKinds::SubAgents => sql.push_str(" AND parent_thread_id IS NOT NULL"),
            ThreadKinds::All => {}
        }
        if let Some(search) = &query.search {
            args.push(format!("%{}%", escape_like(search)).into());
            let n = args.len();
            sql.push_str(&format!(
                " AND (title LIKE ?{n} ESCAPE '\\' OR name LIKE ?{n} ESCAPE '\\')"
            ));
        }
        if let Some(cursor) = &query.cursor {
            let (key, id) = parse_cursor(cursor)?;
            args.push(key.into());
            args.push(id.into());
            sql.push_str(&format!(
                " AND ({column}, thread_id) < (?{}, ?{})",
                args.len() - 1,
                args.len()
            ));
        }
        let limit = query.limit.max(1);
        args.push(i64::try_from(limit + 1).unwrap_or(i64::MAX).into());
        sql.push_str(&format!(
            " ORDER BY {column} DESC, thread_id DESC LIMIT ?{}",
            args.len()
        ));
        let mut stmt = self.conn.prepare_cached(&sql).map_err(self.err())?;
        let mut threads = stmt
            .query_map(rusqlite::params_from_iter(args), row_to_entry)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(self.err())?;
        let next_cursor = if threads.len() > limit {
            threads.truncate(limit);
            threads.last().map(|last| {
                let key = match query.sort {
                    SortKey::Created => last.created_ms,
                    SortKey::Updated => last.updated_ms,
                };
                format!("{key}:{}", last.thread_id)
            })
        } else {
            None
        };
        Ok(ThreadPage {
            threads,
            next_cursor,
        })
    }
}

fn upsert_on(conn: &Connection, entry: &ThreadEntry) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO threads
         (thread_id, path, created_ms, updated_ms, cwd, model, title, archived, forked_from, name,
          parent_thread_id, goal)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        entry.thread_id.to_string(),
        entry.path.to_string_lossy(),
        to_sql(entry.created_ms),
        to_sql(entry.updated_ms),
        entry.cwd.to_string_lossy(),
        entry.model,
        entry.title.as_deref().map(preview),
        entry.archived,
        entry.forked_from.map(|t| t.to_string()),
        entry.name.as_deref().map(preview),
        entry.parent_thread_id.map(|t| t.to_string()),
        entry.goal.map(GoalStatus::as_str),
    ])
    .map(drop)
}

fn row_to_entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<ThreadEntry> {
    let parse_id = |idx: usize, text: String| {
        text.parse::<ThreadId>().map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
        })
    };
    Ok(ThreadEntry {
        thread_id: parse_id(0, row.get(0)?)?,
        path: PathBuf::from(row.get::<_, String>(1)?),
        created_ms: u64::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
        updated_ms: u64::try_from(row.get::<_, i64>(3)?).unwrap_or(0),
        cwd: PathBuf::from(row.get::<_, String>(4)?),
        model: row.get(5)?,
        title: row.get(6)?,
        archived: row.get(7)?,
        forked_from: row
            .get::<_, Option<String>>(8)?
            .map(|t| parse_id(8, t))
            .transpose()?,
        name: row.get(9)?,
        parent_thread_id: row
            .get::<_, Option<String>>(10)?
            .map(|t| parse_id(10, t))
            .transpose()?,
        goal: row
            .get::<_, Option<String>>(11)?
            .as_deref()
            .and_then(goal_status),
    })
}

/// A goal status as the index stores it (`GoalStatus::as_str`); an unknown one reads as
/// none (the index is a cache, rebuilt from the rollouts).
fn goal_status(text: &str) -> Option<GoalStatus> {
    GoalStatus::ALL.into_iter().find(|s| s.as_str() == text)
}

/// Indexes made before a column existed get it (empty until the next reindex or write).
fn add_missing_columns(conn: &Connection) -> rusqlite::Result<()> {
    for column in ["name", "parent_thread_id", "goal"] {
        let has: bool = conn.query_row(
            "SELECT count(*) > 0 FROM pragma_table_info('threads') WHERE name = ?1",
            [column],
            |r| r.get(0),
        )?;
        if !has {
            conn.execute(&format!("ALTER TABLE threads ADD COLUMN {column} TEXT"), [])?;
        }
    }
    Ok(())
}

fn to_sql(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

fn preview(text: &str) -> String {
    text.chars().take(TITLE_CHARS).collect()
}

fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn parse_cursor(cursor: &str) -> Result<(i64, String), RolloutError> {
    let bad = || RolloutError::BadCursor(cursor.to_owned());
    let (key, id) = cursor.split_once(':').ok_or_else(bad)?;
    let key: i64 = key.parse().map_err(|_| bad())?;
    let id: ThreadId = id.parse().map_err(|_| bad())?;
    Ok((key, id.to_string()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_index_from_before_names_gains_the_column_and_keeps_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite");
        let thread = ThreadId::new();
        {
            let old = Connection::open(&path).unwrap();
            old.execute_batch(
                "CREATE TABLE threads (thread_id TEXT PRIMARY KEY, path TEXT NOT NULL,
                 created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, cwd TEXT NOT NULL,
                 model TEXT NOT NULL, title TEXT, archived INTEGER NOT NULL DEFAULT 0,
                 forked_from TEXT);",
            )
            .unwrap();
            old.execute(
                "INSERT INTO threads VALUES (?1, '/r.jsonl', 1, 2, '/w', 'm', 'hello', 0, NULL)",
                params![thread.to_string()],
            )
            .unwrap();
        }
        let index = RolloutIndex::open(&path).unwrap();
        assert_eq!(index.get(thread).unwrap().unwrap().name, None);
        index.set_name(thread, "Named").unwrap();
        let entry = index.get(thread).unwrap().unwrap();
        assert_eq!(entry.name.as_deref(), Some("Named"));
        assert_eq!(entry.title.as_deref(), Some("hello"));
        // Opening again finds the column and does not try to add it twice.
        drop(index);
        RolloutIndex::open(&path).unwrap();
    }
}
