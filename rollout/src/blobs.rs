//! Large payloads stored once, content-addressed: `$REIN_HOME/blobs/<aa>/<sha256>`.
//!
//! A tool output, tool-call arguments, a file written through the client or an image URL
//! longer than the threshold, and every inline (`data:`) image, is written to the blob store and replaced in the line by `"\u0001blob:sha256:<hex>"`.
//! The reader puts the original back, so the event read equals the event written. A
//! string that happens to start with that prefix is always stored as a blob, whatever its
//! size, so an inline string with the prefix is never ambiguous. The same content (a tool
//! output seen again in a fork, the arguments in both `ToolCallBegin` and the `ToolCall`
//! item) is stored once.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use rein_protocol::{ClientRequest, Event, EventMsg, InputPart, Item};
use sha2::{Digest, Sha256};

/// Marks a string that is a reference to a blob.
pub const BLOB_PREFIX: &str = "\u{1}blob:sha256:";

/// Payloads longer than this (bytes) go to the blob store by default.
pub const DEFAULT_THRESHOLD: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("blob {hash} is missing from {dir}")]
    Missing { hash: String, dir: PathBuf },
    #[error("blob {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{reference:?} is not a valid blob reference")]
    BadReference { reference: String },
    #[error("blob {hash} is not UTF-8 text")]
    NotText { hash: String },
}

/// Storing a blob failed (disk full, permissions).
#[derive(Debug, thiserror::Error)]
#[error("writing blob {path}: {source}")]
pub struct BlobWriteError {
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

#[derive(Clone, Debug)]
pub struct BlobStore {
    dir: PathBuf,
    threshold: usize,
}

impl BlobStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self::with_threshold(dir, DEFAULT_THRESHOLD)
    }

    pub fn with_threshold(dir: impl Into<PathBuf>, threshold: usize) -> Self {
        BlobStore {
            dir: dir.into(),
            threshold,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path_of(&self, hash: &str) -> PathBuf {
        self.dir.join(hash.get(..2).unwrap_or("00")).join(hash)
    }

    fn wants(&self, text: &str, field: Field) -> bool {
        // Inline images are stored once whatever their size: they are what bloats
        // rollouts when a conversation carries them turn after turn.
        if field == Field::Image && text.starts_with("data:") {
            return true;
        }
        text.len() > self.threshold || text.starts_with(BLOB_PREFIX)
    }

    /// Whether writing `msg` would move any field into the store.
    pub fn would_externalize(&self, msg: &EventMsg) -> bool {
        let mut any = false;
        msg_fields(msg, &mut |s: &String, field| any |= self.wants(s, field));
        any
    }

    /// A copy of `event` with its large fields replaced by references, the blobs written.
    /// Newly written blob files are pushed to `written` so the caller can make them durable
    /// before the line that refers to them.
    pub fn externalize(
        &self,
        event: &Event,
        written: &mut Vec<PathBuf>,
    ) -> Result<Event, BlobWriteError> {
        let mut copy = event.clone();
        let mut result = Ok(());
        let mut store = |s: &mut String, field| {
            if result.is_ok() && self.wants(s, field) {
                match self.put(s.as_bytes(), written) {
                    Ok(hash) => *s = format!("{BLOB_PREFIX}{hash}"),
                    Err(e) => result = Err(e),
                }
            }
        };
        msg_fields_mut(&mut copy.msg, &mut store);
        result.map(|()| copy)
    }

    /// Stores `content` (once) and returns its hash.
    pub fn put(
        &self,
        content: &[u8],
        written: &mut Vec<PathBuf>,
    ) -> Result<String, BlobWriteError> {
        let hash = hex(&Sha256::digest(content));
        let path = self.path_of(&hash);
        if path.exists() {
            return Ok(hash);
        }
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| BlobWriteError { path, source }
        };
        let parent = path.parent().unwrap_or(&self.dir);
        fs::create_dir_all(parent).map_err(io_err(parent))?;
        // Write aside and rename, so a reader never sees half a blob under its hash.
        let tmp = parent.join(format!(".{hash}.{}.tmp", std::process::id()));
        let mut file = File::create(&tmp).map_err(io_err(&tmp))?;
        file.write_all(content).map_err(io_err(&tmp))?;
        drop(file);
        fs::rename(&tmp, &path).map_err(io_err(&path))?;
        written.push(path);
        Ok(hash)
    }

    /// Replaces every blob reference in `event` by its content. `cache` keeps contents
    /// already read during one load.
    pub fn restore(
        &self,
        event: &mut Event,
        cache: &mut HashMap<String, String>,
    ) -> Result<(), BlobError> {
        let mut result = Ok(());
        let mut load = |s: &mut String, _field| {
            if result.is_err() {
                return;
            }
            if let Some(hash) = s.strip_prefix(BLOB_PREFIX) {
                match self.read_cached(hash, cache) {
                    Ok(text) => *s = text,
                    Err(e) => result = Err(e),
                }
            }
        };
        msg_fields_mut(&mut event.msg, &mut load);
        result
    }

    fn read_cached(
        &self,
        hash: &str,
        cache: &mut HashMap<String, String>,
    ) -> Result<String, BlobError> {
        if let Some(text) = cache.get(hash) {
            return Ok(text.clone());
        }
        // The hash comes from the file: never let it name a path outside the store.
        if hash.len() != 64 || !hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(BlobError::BadReference {
                reference: hash.to_owned(),
            });
        }
        let path = self.path_of(hash);
        let bytes = fs::read(&path).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => BlobError::Missing {
                hash: hash.to_owned(),
                dir: self.dir.clone(),
            },
            _ => BlobError::Io { path, source },
        })?;
        let text = String::from_utf8(bytes).map_err(|_| BlobError::NotText {
            hash: hash.to_owned(),
        })?;
        cache.insert(hash.to_owned(), text.clone());
        Ok(text)
    }
}

/// Whether an event line may hold a blob reference (a cheap pre-check for the reader).
pub(crate) fn may_reference(msg: &EventMsg) -> bool {
    matches!(
        msg,
        EventMsg::ItemCompleted { .. }
            | EventMsg::ToolCallBegin { .. }
            | EventMsg::ToolCallEnd { .. }
            | EventMsg::ClientRequested {
                request: ClientRequest::WriteTextFile { .. },
                ..
            }
    )
}

/// Which kind of field a string is; images follow their own rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Text,
    Image,
}

/// The walk over the fields of an event line that may go to the blob store, written once
/// for both borrows: `msg_fields` (is anything large?) and `msg_fields_mut` (replace them
/// by references, or put them back).
macro_rules! field_walkers {
    ($name:ident, $item:ident, $bulk:ident, $iter:ident $(, $mutability:tt)?) => {
        fn $name(msg: &$($mutability)? EventMsg, f: &mut impl FnMut(&$($mutability)? String, Field)) {
            match msg {
                EventMsg::ItemCompleted { item } => $item(item, f),
                EventMsg::ToolCallBegin { arguments, .. } => f(arguments, Field::Text),
                EventMsg::ClientRequested {
                    request: ClientRequest::WriteTextFile { content, .. },
                    ..
                } => f(content, Field::Text),
                EventMsg::ToolCallEnd { outcome, .. } => outcome.$bulk().into_iter().for_each(|s| f(s, Field::Text)),
                _ => {}
            }
        }

        fn $item(item: &$($mutability)? Item, f: &mut impl FnMut(&$($mutability)? String, Field)) {
            match item {
                Item::ToolOutput { output, facts, .. } => {
                    f(output, Field::Text);
                    if let Some(facts) = facts {
                        facts
                            .outcome
                            .$bulk()
                            .into_iter()
                            .for_each(|s| f(s, Field::Text));
                    }
                }
                Item::ToolCall { arguments, .. } => f(arguments, Field::Text),
                Item::UserMessage { content, .. } => content.$iter().for_each(|part| {
                    if let InputPart::Image { url } = part {
                        f(url, Field::Image);
                    }
                }),
                Item::AgentMessage { .. }
                | Item::Reasoning { .. }
                | Item::DeveloperMessage { .. }
                | Item::Interruption { .. } => {}
            }
        }
    };
}

field_walkers!(msg_fields, item_fields, bulk, iter);
field_walkers!(msg_fields_mut, item_fields_mut, bulk_mut, iter_mut, mut);

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rein_protocol::{ItemId, ThreadId};

    fn output_event(output: String) -> Event {
        Event {
            thread_id: ThreadId::new(),
            turn_id: None,
            seq: 0,
            timestamp_ms: 0,
            msg: EventMsg::ItemCompleted {
                item: Item::ToolOutput {
                    id: ItemId::from("o1"),
                    call_id: "c1".into(),
                    output,
                    success: true,
                    facts: None,
                },
            },
        }
    }

    #[test]
    fn large_output_is_stored_once_and_restored_identically() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::with_threshold(dir.path(), 10);
        let event = output_event("x".repeat(100));
        let mut written = Vec::new();
        let stored = store.externalize(&event, &mut written).unwrap();
        assert_ne!(stored, event);
        assert_eq!(written.len(), 1);
        let again = store.externalize(&event, &mut written).unwrap();
        assert_eq!(again, stored);
        assert_eq!(written.len(), 1, "same content is not written twice");
        let mut restored = stored;
        store.restore(&mut restored, &mut HashMap::new()).unwrap();
        assert_eq!(restored, event);
    }

    #[test]
    fn small_string_with_the_prefix_is_forced_into_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::with_threshold(dir.path(), 1000);
        let event = output_event(format!("{BLOB_PREFIX}not really"));
        assert!(store.would_externalize(&event.msg));
        let mut stored = store.externalize(&event, &mut Vec::new()).unwrap();
        store.restore(&mut stored, &mut HashMap::new()).unwrap();
        assert_eq!(stored, event);
    }

    #[test]
    fn inline_images_are_always_stored_but_image_links_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::with_threshold(dir.path(), 1000);
        let message = |url: &str| EventMsg::ItemCompleted {
            item: Item::UserMessage {
                id: ItemId::from("u"),
                content: vec![InputPart::text("see"), InputPart::Image { url: url.into() }],
            },
        };
        assert!(store.would_externalize(&message("data:image/png;base64,iVBO")));
        assert!(!store.would_externalize(&message("https://example.com/a.png")));
    }

    #[test]
    fn missing_blob_is_reported_by_hash() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::with_threshold(dir.path(), 1);
        let hash = "ab".repeat(32);
        let mut event = output_event(format!("{BLOB_PREFIX}{hash}"));
        let err = store.restore(&mut event, &mut HashMap::new()).unwrap_err();
        assert!(matches!(err, BlobError::Missing { hash: h, .. } if h == hash));
        let mut escape = output_event(format!("{BLOB_PREFIX}../../etc/passwd"));
        let err = store.restore(&mut escape, &mut HashMap::new()).unwrap_err();
        assert!(matches!(err, BlobError::BadReference { .. }));
    }
}
