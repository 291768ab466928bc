//! What the server records that is not the kernel's: a response's `metadata` and
//! `background` flag (the Responses API echoes them, after a restart too), the Agent
//! Protocol's queued (`enqueue`) runs until their turn starts, a run's strategy and stream
//! modes (a join after a restart streams what the run was started with), and the stateless
//! runs' threads to delete once their run has ended. They live beside the
//! sessions, in `$REIN_HOME/serve/`, one JSON file each, written whole (a temporary file,
//! fsynced, renamed over the old one, the directory fsynced): a record is either there
//! complete or not at all, even across a kill -9.
//!
//! The rollout stays the truth of what a turn did; these say only what the client asked
//! of the server around it. The files are read and written on the blocking pool.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use rein_protocol::{InputPart, ThreadId, TurnId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ApiError;
use crate::ids::ResponseId;

/// The most keys `metadata` takes, and their longest key and value (OpenAI's limits).
pub const METADATA_KEYS: usize = 16;
pub const METADATA_KEY_CHARS: usize = 64;
pub const METADATA_VALUE_CHARS: usize = 512;

/// What a response was created with that the rollout does not say.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseRecord {
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub background: bool,
}

/// A run waiting behind its thread's (`multitask_strategy: enqueue`), recorded before the
/// client is answered and removed once its turn has started (the rollout has it then).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueuedRecord {
    pub thread: ThreadId,
    pub turn: TurnId,
    pub created_ms: u64,
    pub input: Vec<InputPart>,
    /// The run's `stream_mode` names, so that a join after a restart streams them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stream_mode: Vec<String>,
    /// Set when the run ended without starting: it is reported so, and not run, after a
    /// restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<QueuedEnd>,
}

/// What an Agent Protocol run was started with that its rollout does not say. Recorded
/// only when it is not the default (`reject`, no stream mode), so the common run costs no
/// write.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    #[serde(default)]
    pub multitask_strategy: crate::agent::body::Multitask,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stream_mode: Vec<String>,
}

/// A stateless run's thread (`on_completion: delete`) waiting for its run to end, to be
/// deleted then; recorded before the run starts, so that a restart deletes it still.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteRecord {
    pub thread: ThreadId,
}

/// The response that answered a chat conversation (`/v1/chat/completions`), under the
/// conversation's key: the next request of that conversation continues its thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatRecord {
    pub response: String,
}

/// How a queued run ended without its turn starting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum QueuedEnd {
    Cancelled,
    Failed { message: String },
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a record: {source}")]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("the blocking pool went away: {0}")]
    Join(#[from] tokio::task::JoinError),
}

impl From<RecordError> for ApiError {
    fn from(e: RecordError) -> Self {
        ApiError::Internal(format!("the server's records: {e}"))
    }
}

/// `metadata` as the Responses API takes it: at most 16 string values, keys of at most 64
/// characters, values of at most 512; otherwise a 400 naming `metadata`.
pub fn metadata(value: Option<&Value>) -> Result<BTreeMap<String, String>, ApiError> {
    let bad = |message: String| ApiError::bad(message, Some("metadata"));
    let map = match value {
        None | Some(Value::Null) => return Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(bad("`metadata` must be an object of strings".into())),
    };
    if map.len() > METADATA_KEYS {
        return Err(bad(format!(
            "`metadata` has {} keys; at most {METADATA_KEYS} are allowed",
            map.len()
        )));
    }
    let mut out = BTreeMap::new();
    for (key, value) in map {
        if key.chars().count() > METADATA_KEY_CHARS {
            return Err(bad(format!(
                "`metadata` keys are at most {METADATA_KEY_CHARS} characters"
            )));
        }
        let Value::String(text) = value else {
            return Err(bad(format!("`metadata.{key}` must be a string")));
        };
        if text.chars().count() > METADATA_VALUE_CHARS {
            return Err(bad(format!(
                "`metadata.{key}` is longer than {METADATA_VALUE_CHARS} characters"
            )));
        }
        out.insert(key.clone(), text.clone());
    }
    Ok(out)
}

/// The records under one directory (`$REIN_HOME/serve`).
#[derive(Clone, Debug)]
pub struct Records {
    dir: PathBuf,
}

impl Records {
    pub fn in_home(home: &Path) -> Self {
        Self {
            dir: home.join("serve"),
        }
    }

    fn response_path(&self, id: ResponseId) -> PathBuf {
        self.dir
            .join("responses")
            .join(id.thread.to_string())
            .join(format!("{}.json", id.turn))
    }

    fn queue_dir(&self) -> PathBuf {
        self.dir.join("queue")
    }

    fn run_path(&self, thread: ThreadId, turn: TurnId) -> PathBuf {
        self.dir
            .join("runs")
            .join(thread.to_string())
            .join(format!("{turn}.json"))
    }

    fn chat_path(&self, key: &str) -> PathBuf {
        self.dir.join("chats").join(format!("{key}.json"))
    }

    fn deletes_dir(&self) -> PathBuf {
        self.dir.join("delete")
    }

    fn delete_path(&self, thread: ThreadId) -> PathBuf {
        self.deletes_dir().join(format!("{thread}.json"))
    }

    fn queued_path(&self, turn: TurnId) -> PathBuf {
        self.queue_dir().join(format!("{turn}.json"))
    }

    pub async fn put_response(
        &self,
        id: ResponseId,
        record: &ResponseRecord,
    ) -> Result<(), RecordError> {
        write(self.response_path(id), record).await
    }

    /// The record of `id`, if one was made (none for a response without metadata and not
    /// in the background, one made before records were kept, or an Agent Protocol run).
    pub async fn response(&self, id: ResponseId) -> Result<Option<ResponseRecord>, RecordError> {
        read(self.response_path(id)).await
    }

    pub async fn remove_response(&self, id: ResponseId) -> Result<(), RecordError> {
        remove(self.response_path(id)).await
    }

    pub async fn put_queued(&self, record: &QueuedRecord) -> Result<(), RecordError> {
        write(self.queued_path(record.turn), record).await
    }

    pub async fn remove_queued(&self, turn: TurnId) -> Result<(), RecordError> {
        remove(self.queued_path(turn)).await
    }

    pub async fn put_run(
        &self,
        thread: ThreadId,
        turn: TurnId,
        record: &RunRecord,
    ) -> Result<(), RecordError> {
        write(self.run_path(thread, turn), record).await
    }

    /// The record of run `turn`, if it was started with more than the defaults.
    pub async fn run(
        &self,
        thread: ThreadId,
        turn: TurnId,
    ) -> Result<Option<RunRecord>, RecordError> {
        read(self.run_path(thread, turn)).await
    }

    pub async fn remove_run(&self, thread: ThreadId, turn: TurnId) -> Result<(), RecordError> {
        remove(self.run_path(thread, turn)).await
    }

    /// Record that `response` answered the conversation of `key` (a hex digest).
    pub async fn put_chat(&self, key: &str, response: ResponseId) -> Result<(), RecordError> {
        let record = ChatRecord {
            response: response.to_string(),
        };
        write(self.chat_path(key), &record).await
    }

    /// The response that answered the conversation of `key`, if one did; a record whose
    /// id does not parse is none (it is the server's own, so it is not guessed at).
    pub async fn chat(&self, key: &str) -> Result<Option<ResponseId>, RecordError> {
        let record: Option<ChatRecord> = read(self.chat_path(key)).await?;
        Ok(record.and_then(|r| r.response.parse().ok()))
    }

    pub async fn put_delete(&self, thread: ThreadId) -> Result<(), RecordError> {
        write(self.delete_path(thread), &DeleteRecord { thread }).await
    }

    pub async fn remove_delete(&self, thread: ThreadId) -> Result<(), RecordError> {
        remove(self.delete_path(thread)).await
    }

    /// The threads recorded to be deleted once their run ended.
    pub async fn deletes(&self) -> Result<Vec<DeleteRecord>, RecordError> {
        let dir = self.deletes_dir();
        tokio::task::spawn_blocking(move || list(&dir)).await?
    }

    /// Drop every record about `thread` (its responses' and its runs'): called once the
    /// thread is deleted, so records do not outlive what they describe.
    pub async fn forget_thread(&self, thread: ThreadId) -> Result<(), RecordError> {
        let dirs = [
            self.dir.join("responses").join(thread.to_string()),
            self.dir.join("runs").join(thread.to_string()),
        ];
        tokio::task::spawn_blocking(move || {
            for dir in dirs {
                match std::fs::remove_dir_all(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io(&dir)(e)),
                }
            }
            Ok(())
        })
        .await?
    }

    /// Every queued run recorded, oldest first (run ids are time-ordered, and so are
    /// their creation times).
    pub async fn queued(&self) -> Result<Vec<QueuedRecord>, RecordError> {
        let dir = self.queue_dir();
        let mut found: Vec<QueuedRecord> =
            tokio::task::spawn_blocking(move || list(&dir)).await??;
        found.sort_by_key(|r| (r.created_ms, r.turn));
        Ok(found)
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RecordError + '_ {
    move |source| RecordError::Io {
        path: path.to_owned(),
        source,
    }
}

async fn write<T: Serialize>(path: PathBuf, record: &T) -> Result<(), RecordError> {
    let bytes = serde_json::to_vec(record).map_err(|source| RecordError::Corrupt {
        path: path.clone(),
        source,
    })?;
    tokio::task::spawn_blocking(move || write_whole(&path, &bytes)).await?
}

/// Written to a temporary file, fsynced, renamed into place, the directory fsynced: after
/// a crash the record is there whole or not at all.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), RecordError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let tmp = path.with_extension(format!("tmp-{}", uuid::Uuid::new_v4().simple()));
    let mut file = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    file.write_all(bytes).map_err(io(&tmp))?;
    file.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))
}

async fn read<T: serde::de::DeserializeOwned + Send + 'static>(
    path: PathBuf,
) -> Result<Option<T>, RecordError> {
    tokio::task::spawn_blocking(move || read_one(&path)).await?
}

fn read_one<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, RecordError> {
    match std::fs::read(path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|source| RecordError::Corrupt {
                    path: path.to_owned(),
                    source,
                })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

async fn remove(path: PathBuf) -> Result<(), RecordError> {
    tokio::task::spawn_blocking(move || match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(&path)(e)),
    })
    .await?
}

/// A directory's records; temporary files (a write a crash cut off) are skipped, and a
/// record that does not parse is reported, not guessed at.
fn list<T: serde::de::DeserializeOwned>(dir: &Path) -> Result<Vec<T>, RecordError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(dir)(e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let path = entry.map_err(io(dir))?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        match read_one::<T>(&path) {
            Ok(Some(record)) => found.push(record),
            Ok(None) => {}
            Err(e) => tracing::warn!("skipping a record: {e}"),
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn records_read_back_whole_and_a_cut_off_write_is_not_one() {
        let home = tempfile::tempdir().unwrap();
        let records = Records::in_home(home.path());
        let id = ResponseId {
            thread: ThreadId::new(),
            turn: TurnId::new(),
        };
        assert_eq!(records.response(id).await.unwrap(), None);
        let record = ResponseRecord {
            metadata: BTreeMap::from([("job".to_owned(), "42".to_owned())]),
            background: true,
        };
        records.put_response(id, &record).await.unwrap();
        assert_eq!(records.response(id).await.unwrap(), Some(record));
        records.remove_response(id).await.unwrap();
        assert_eq!(records.response(id).await.unwrap(), None);

        let queued = |created_ms, ended| QueuedRecord {
            thread: id.thread,
            turn: TurnId::new(),
            created_ms,
            input: vec![InputPart::text("later")],
            stream_mode: vec!["updates".to_owned()],
            ended,
        };
        let (late, early) = (queued(2, None), queued(1, Some(QueuedEnd::Cancelled)));
        records.put_queued(&late).await.unwrap();
        records.put_queued(&early).await.unwrap();
        // What a crash mid-write leaves: a temporary file, skipped.
        let dir = home.path().join("serve/queue");
        std::fs::write(dir.join("x.tmp-1"), b"{\"thread\"").unwrap();
        assert_eq!(
            records.queued().await.unwrap(),
            vec![early.clone(), late.clone()]
        );
        records.remove_queued(early.turn).await.unwrap();
        assert_eq!(records.queued().await.unwrap(), vec![late]);
    }

    #[test]
    fn metadata_is_checked_against_the_apis_limits() {
        let ok = json!({ "a": "1", "b": "x".repeat(METADATA_VALUE_CHARS) });
        assert_eq!(metadata(Some(&ok)).map(|m| m.len()).ok(), Some(2));
        assert_eq!(metadata(None).ok(), Some(BTreeMap::new()));
        let many: serde_json::Map<String, Value> = (0..=METADATA_KEYS)
            .map(|i| (format!("k{i}"), json!("v")))
            .collect();
        for bad in [
            Value::Object(many),
            json!({ "k".repeat(METADATA_KEY_CHARS + 1): "v" }),
            json!({ "k": "v".repeat(METADATA_VALUE_CHARS + 1) }),
            json!({ "k": 1 }),
            json!(["k"]),
        ] {
            match metadata(Some(&bad)) {
                Err(ApiError::BadRequest { param, .. }) => {
                    assert_eq!(param.as_deref(), Some("metadata"), "{bad}")
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }
}
