//! The memory database: `$REIN_HOME/memory.sqlite`, beside the listing index but its own
//! file (a damaged one never costs the session listing). One `memories` table and an FTS5
//! index over content and keywords kept in step by triggers. Blocking: callers run it off
//! the async executor ([`super::SqliteMemoryStore`] does).
//!
//! Unlike the listing index this is not a cache: `rein memory add` has no rollout behind
//! it. So it is opened with `synchronous = FULL`: a memory accepted is on disk.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rein_core::memory::{MemoryError, MemoryFilter, MemoryUpdate, RecallQuery};
use rein_protocol::{MemoryId, MemoryRecord, MemoryScope, MemoryState, RepoKey};
use rusqlite::{params, Connection, ErrorCode, OptionalExtension};

use crate::io_guard::assert_off_executor;

/// The file name under `$REIN_HOME`.
pub const MEMORY_FILE: &str = "memory.sqlite";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS memories (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL,
    scope_key TEXT NOT NULL,
    repo_root TEXT,
    repo_remote TEXT,
    thread_id TEXT,
    turn_id TEXT,
    content TEXT NOT NULL,
    keywords TEXT NOT NULL,
    why TEXT NOT NULL,
    state TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    last_used_ms INTEGER,
    use_count INTEGER NOT NULL DEFAULT 0,
    redactions TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_by_scope ON memories (state, scope, scope_key);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts
    USING fts5(content, keywords, content='memories', content_rowid='seq',
        tokenize='porter unicode61');
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content, keywords)
        VALUES (new.seq, new.content, new.keywords);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, keywords)
        VALUES ('delete', old.seq, old.content, old.keywords);
END;
CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE OF content, keywords ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, keywords)
        VALUES ('delete', old.seq, old.content, old.keywords);
    INSERT INTO memories_fts (rowid, content, keywords)
        VALUES (new.seq, new.content, new.keywords);
END;
";

const COLUMNS: &str = "m.id, m.scope, m.repo_root, m.repo_remote, m.thread_id, m.turn_id, \
    m.content, m.keywords, m.why, m.state, m.created_ms, m.last_used_ms, m.use_count, \
    m.redactions";

/// Candidates fetched by full-text rank before recency and use re-rank them.
const RECALL_CANDIDATES: u32 = 64;

/// One open memory database.
pub struct MemoryDb {
    conn: Connection,
    path: PathBuf,
}

impl MemoryDb {
    /// Opens (creating if needed) the database at `path`. A file that is not a memory
    /// database is [`MemoryError::Damaged`], naming it.
    pub fn open(path: &Path) -> Result<Self, MemoryError> {
        assert_off_executor("opening the memory database");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| MemoryError::Storage {
                path: dir.to_path_buf(),
                detail: e.to_string(),
            })?;
        }
        let err = |e: rusqlite::Error| sql_error(path, e);
        let conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        Ok(Self {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> MemoryError + '_ {
        move |e| sql_error(&self.path, e)
    }

    /// Keep `record`; one that is already there (the same id) is left as it is: `false`.
    pub fn insert(&self, record: &MemoryRecord) -> Result<bool, MemoryError> {
        assert_off_executor("writing a memory");
        insert_on(&self.conn, record).map_err(self.err())
    }

    /// Keep `records` in one transaction (an import); how many were new.
    pub fn insert_batch(&mut self, records: &[MemoryRecord]) -> Result<usize, MemoryError> {
        assert_off_executor("writing memories");
        let path = self.path.clone();
        let err = |e: rusqlite::Error| sql_error(&path, e);
        let tx = self.conn.transaction().map_err(err)?;
        let mut added = 0;
        for record in records {
            added += usize::from(insert_on(&tx, record).map_err(err)?);
        }
        tx.commit().map_err(err)?;
        Ok(added)
    }

    pub fn get(&self, id: MemoryId) -> Result<Option<MemoryRecord>, MemoryError> {
        assert_off_executor("reading a memory");
        self.conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM memories m WHERE m.id = ?1"),
                [id.to_string()],
                row_to_record,
            )
            .optional()
            .map_err(self.err())
    }

    /// Apply `update` to the memory `id`; the record as it now is.
    pub fn update(&self, id: MemoryId, update: &MemoryUpdate) -> Result<MemoryRecord, MemoryError> {
        assert_off_executor("updating a memory");
        let changed = self
            .conn
            .execute(
                "UPDATE memories SET content = COALESCE(?2, content),
                    keywords = COALESCE(?3, keywords), state = COALESCE(?4, state)
                 WHERE id = ?1",
                params![
                    id.to_string(),
                    update.content,
                    update.keywords.as_ref().map(|k| k.join(" ")),
                    update.state.map(MemoryState::as_str),
                ],
            )
            .map_err(self.err())?;
        if changed == 0 {
            return Err(MemoryError::NotFound(id));
        }
        self.get(id)?.ok_or(MemoryError::NotFound(id))
    }

    /// The records `filter` selects, newest first.
    pub fn list(&self, filter: &MemoryFilter) -> Result<Vec<MemoryRecord>, MemoryError> {
        assert_off_executor("listing memories");
        let mut sql = format!("SELECT {COLUMNS} FROM memories m");
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        let mut clauses: Vec<String> = Vec::new();
        if let Some(query) = filter.text.as_deref() {
            let Some(matched) = match_expression(query) else {
                return Ok(Vec::new());
            };
            sql.push_str(" JOIN memories_fts f ON f.rowid = m.seq");
            args.push(matched.into());
            clauses.push(format!("memories_fts MATCH ?{}", args.len()));
        }
        if let Some(scope) = filter.scope {
            args.push(scope.as_str().to_owned().into());
            clauses.push(format!("m.scope = ?{}", args.len()));
        }
        if let Some(repo) = &filter.repo {
            args.push(repo_key(repo).into());
            clauses.push(format!(
                "(m.scope <> 'repo' OR m.scope_key = ?{})",
                args.len()
            ));
        }
        if !filter.states.is_empty() {
            let states: Vec<String> = filter
                .states
                .iter()
                .map(|s| format!("'{}'", s.as_str()))
                .collect();
            clauses.push(format!("m.state IN ({})", states.join(", ")));
        }
        if !clauses.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&clauses.join(" AND "));
        }
        sql.push_str(" ORDER BY m.created_ms DESC, m.seq DESC");
        if let Some(limit) = filter.limit {
            sql.push_str(&format!(" LIMIT {limit}"));
        }
        let mut stmt = self.conn.prepare(&sql).map_err(self.err())?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args), row_to_record)
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    /// The accepted memories in scope that match, ranked and within budget; their uses are
    /// counted in the same transaction. Retirement (when asked) runs first.
    pub fn recall(&mut self, query: &RecallQuery) -> Result<Vec<MemoryRecord>, MemoryError> {
        assert_off_executor("recalling memories");
        let path = self.path.clone();
        let err = |e: rusqlite::Error| sql_error(&path, e);
        let tx = self.conn.transaction().map_err(err)?;
        if let Some(cutoff) = query.retire_before_ms {
            retire_on(&tx, cutoff).map_err(err)?;
        }
        let Some(matched) = match_expression(&query.text) else {
            tx.commit().map_err(err)?;
            return Ok(Vec::new());
        };
        let mut ranked = candidates(&tx, &matched, query).map_err(err)?;
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut spent = 0u32;
        let mut chosen = Vec::new();
        for (_, mut record) in ranked {
            let cost = rein_core::memory::recall::tokens_of(&record);
            if spent.saturating_add(cost) > query.max_tokens {
                continue;
            }
            spent += cost;
            tx.execute(
                "UPDATE memories SET use_count = use_count + 1, last_used_ms = ?2 WHERE id = ?1",
                params![record.id.to_string(), to_sql(query.now_ms)],
            )
            .map_err(err)?;
            record.use_count += 1;
            record.last_used_ms = Some(query.now_ms);
            chosen.push(record);
        }
        tx.commit().map_err(err)?;
        Ok(chosen)
    }

    /// Retire accepted memories unused (never used: not created) since `cutoff_ms`; how
    /// many were retired.
    pub fn retire_unused(&self, cutoff_ms: u64) -> Result<usize, MemoryError> {
        assert_off_executor("retiring memories");
        retire_on(&self.conn, cutoff_ms).map_err(self.err())
    }

    /// Delete the tombstones (forgotten, retired and rejected memories); how many.
    pub fn purge(&self) -> Result<usize, MemoryError> {
        assert_off_executor("purging memories");
        self.conn
            .execute(
                "DELETE FROM memories WHERE state IN ('forgotten', 'retired', 'rejected')",
                [],
            )
            .map_err(self.err())
    }
}

fn insert_on(conn: &Connection, record: &MemoryRecord) -> rusqlite::Result<bool> {
    let redactions = serde_json::to_string(&record.redactions).unwrap_or_default();
    let (root, remote) = match &record.repo {
        Some(repo) => (Some(repo.root.display().to_string()), repo.remote.clone()),
        None => (None, None),
    };
    let added = conn.execute(
        "INSERT OR IGNORE INTO memories (id, scope, scope_key, repo_root, repo_remote,
                    thread_id, turn_id, content, keywords, why, state, created_ms,
                    last_used_ms, use_count, redactions)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        params![
            record.id.to_string(),
            record.scope.as_str(),
            scope_key(record),
            root,
            remote,
            record.thread_id.map(|t| t.to_string()),
            record.turn_id.map(|t| t.to_string()),
            record.content,
            record.keywords.join(" "),
            record.why,
            record.state.as_str(),
            to_sql(record.created_ms),
            record.last_used_ms.map(to_sql),
            to_sql(record.use_count),
            redactions,
        ],
    )?;
    Ok(added == 1)
}

fn retire_on(conn: &Connection, cutoff_ms: u64) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE memories SET state = 'retired'
         WHERE state = 'accepted' AND COALESCE(last_used_ms, created_ms) < ?1",
        [to_sql(cutoff_ms)],
    )
}

/// The matching accepted memories in scope with their scores (full-text rank weighted by
/// recency and use).
fn candidates(
    conn: &Connection,
    matched: &str,
    query: &RecallQuery,
) -> rusqlite::Result<Vec<(f64, MemoryRecord)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS}, bm25(memories_fts) FROM memories_fts
         JOIN memories m ON m.seq = memories_fts.rowid
         WHERE memories_fts MATCH ?1 AND m.state = 'accepted'
           AND (m.scope = 'user' OR (m.scope = 'repo' AND m.scope_key = ?2)
                OR (m.scope = 'thread' AND m.scope_key = ?3))
         ORDER BY bm25(memories_fts) LIMIT {RECALL_CANDIDATES}"
    ))?;
    let rows = stmt.query_map(
        params![matched, repo_key(&query.repo), query.thread_id.to_string()],
        |row| Ok((row.get::<_, f64>(14)?, row_to_record(row)?)),
    )?;
    let mut out = Vec::new();
    for row in rows {
        let (bm25, record) = row?;
        out.push((score(-bm25, &record, query.now_ms), record));
    }
    Ok(out)
}

/// Relevance first; a recent or often used memory ranks above an equally relevant other.
fn score(relevance: f64, record: &MemoryRecord, now_ms: u64) -> f64 {
    let last = record.last_used_ms.unwrap_or(record.created_ms);
    let age_days = now_ms.saturating_sub(last) as f64 / 86_400_000.0;
    let recency = 1.0 / (1.0 + age_days / 30.0);
    let uses = (1.0 + record.use_count as f64).ln();
    relevance.max(0.0) * (1.0 + 0.5 * recency + 0.2 * uses)
}

/// Words too common to say what a memory is about.
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "are", "but", "not", "you", "all", "any", "can", "had", "her", "was",
    "one", "our", "out", "has", "have", "this", "that", "with", "what", "when", "from", "into",
    "then", "than", "them", "they", "your", "will", "would", "should", "could", "there", "which",
    "about", "please", "just", "also", "how", "why", "who", "its", "let", "use",
];

/// An FTS5 expression matching any significant word of `text`, each quoted (so nothing
/// in it is FTS syntax); `None` when it has none.
fn match_expression(text: &str) -> Option<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
    {
        if word.chars().count() >= 3
            && !STOPWORDS.contains(&word.as_str())
            && !words.contains(&word)
        {
            words.push(word);
        }
        if words.len() == 32 {
            break;
        }
    }
    (!words.is_empty()).then(|| {
        words
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(" OR ")
    })
}

/// The key a memory is found under in its scope.
fn scope_key(record: &MemoryRecord) -> String {
    match record.scope {
        MemoryScope::User => String::new(),
        MemoryScope::Repo => record.repo.as_ref().map(repo_key).unwrap_or_default(),
        MemoryScope::Thread => record.thread_id.map(|t| t.to_string()).unwrap_or_default(),
    }
}

pub(crate) fn repo_key(repo: &RepoKey) -> String {
    format!(
        "{}\n{}",
        repo.root.display(),
        repo.remote.as_deref().unwrap_or("")
    )
}

fn to_sql(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn from_sql(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn parse_text<T: std::str::FromStr>(text: Option<String>) -> Option<T> {
    text.and_then(|t| t.parse().ok())
}

fn row_to_record(row: &rusqlite::Row<'_>) -> rusqlite::Result<MemoryRecord> {
    let bad = |column: usize, what: &str| {
        rusqlite::Error::FromSqlConversionFailure(
            column,
            rusqlite::types::Type::Text,
            format!("not a memory {what}").into(),
        )
    };
    let id: String = row.get(0)?;
    let scope: String = row.get(1)?;
    let state: String = row.get(9)?;
    let root: Option<String> = row.get(2)?;
    let keywords: String = row.get(7)?;
    let redactions: String = row.get(13)?;
    Ok(MemoryRecord {
        id: id.parse().map_err(|_| bad(0, "id"))?,
        scope: MemoryScope::parse(&scope).ok_or_else(|| bad(1, "scope"))?,
        repo: root.map(|root| RepoKey {
            root: PathBuf::from(root),
            remote: row.get(3).ok().flatten(),
        }),
        thread_id: parse_text(row.get(4)?),
        turn_id: parse_text(row.get(5)?),
        content: row.get(6)?,
        keywords: keywords.split_whitespace().map(str::to_owned).collect(),
        why: row.get(8)?,
        state: MemoryState::parse(&state).ok_or_else(|| bad(9, "state"))?,
        created_ms: from_sql(row.get(10)?),
        last_used_ms: row.get::<_, Option<i64>>(11)?.map(from_sql),
        use_count: from_sql(row.get(12)?),
        redactions: serde_json::from_str(&redactions).unwrap_or_default(),
    })
}

/// A SQLite failure as the memory store's error: a file that is not a database (or a
/// damaged one) is [`MemoryError::Damaged`].
fn sql_error(path: &Path, e: rusqlite::Error) -> MemoryError {
    let damaged = matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt)
    );
    if damaged {
        MemoryError::Damaged {
            path: path.to_path_buf(),
            detail: e.to_string(),
        }
    } else {
        MemoryError::Storage {
            path: path.to_path_buf(),
            detail: e.to_string(),
        }
    }
}
