//! The tolerant reader: loads a rollout into its meta and events, skipping and reporting
//! what it cannot use instead of failing. A torn last line (a crash mid-append), a
//! byte-order mark, blank lines, unknown line types and unknown envelope fields are
//! skipped and counted; a corrupt line in the middle is reported with its line number
//! and skipped. Only a file with no readable `session_meta` is an error.
//!
//! Lines are parsed one at a time from a reused buffer, so peak memory is the events
//! plus one line.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use rein_protocol::{Event, EventMsg, Item};

use super::blobs::{may_reference, BlobStore};
use super::format::{LineBody, ParsedLine, SessionMeta, FORMAT_VERSION};
use super::RolloutError;

/// Something the reader skipped or could not restore, with its 1-based line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub line: usize,
    pub kind: DiagnosticKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiagnosticKind {
    /// The last line has no newline: a write cut short. Never counted as recorded.
    TornLastLine,
    ByteOrderMark,
    BlankLine,
    UnknownLineType(String),
    /// The envelope had fields this build does not know (ignored).
    UnknownFields(u32),
    /// The line is not valid JSON or not a valid payload.
    Corrupt(String),
    /// An event whose seq does not follow the previous one; skipped.
    OutOfOrder {
        seq: u64,
        after: u64,
    },
    /// A second `session_meta` line; ignored.
    ExtraMeta,
    /// The event refers to a blob that could not be read; the reference is left in place.
    Blob(String),
}

/// A rollout read back.
#[derive(Clone, Debug)]
pub struct LoadedRollout {
    pub path: PathBuf,
    pub meta: SessionMeta,
    pub events: Vec<Event>,
    pub diagnostics: Vec<Diagnostic>,
}

impl LoadedRollout {
    /// The text of the first user message, if any (listing title).
    pub fn first_user_message(&self) -> Option<String> {
        first_user_text(&self.events)
    }
}

pub(crate) fn first_user_text<'a>(events: impl IntoIterator<Item = &'a Event>) -> Option<String> {
    events.into_iter().find_map(|e| match &e.msg {
        EventMsg::ItemCompleted {
            item: item @ Item::UserMessage { .. },
        } => item.message_text(),
        _ => None,
    })
}

/// Where to stop reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadUntil {
    End,
    /// The first user message (enough for the index).
    FirstUserMessage,
}

/// Reads a whole rollout.
pub fn read_rollout(path: &Path, blobs: &BlobStore) -> Result<LoadedRollout, RolloutError> {
    read_rollout_until(path, blobs, ReadUntil::End)
}

pub(crate) fn read_rollout_until(
    path: &Path,
    blobs: &BlobStore,
    until: ReadUntil,
) -> Result<LoadedRollout, RolloutError> {
    let file = File::open(path).map_err(RolloutError::io("opening", path))?;
    let mut input = BufReader::with_capacity(1 << 20, file);
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut meta: Option<SessionMeta> = None;
    let mut events: Vec<Event> = Vec::new();
    let mut diagnostics = Vec::new();
    let mut blob_cache = HashMap::new();
    let mut line_no = 0;
    loop {
        buf.clear();
        let n = input
            .read_until(b'\n', &mut buf)
            .map_err(RolloutError::io("reading", path))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let mut note = |kind| {
            diagnostics.push(Diagnostic {
                line: line_no,
                kind,
            })
        };
        if buf.last() != Some(&b'\n') {
            note(DiagnosticKind::TornLastLine);
            break;
        }
        let mut line = &buf[..buf.len() - 1];
        if let Some(rest) = line.strip_prefix(b"\xEF\xBB\xBF") {
            note(DiagnosticKind::ByteOrderMark);
            line = rest;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            note(DiagnosticKind::BlankLine);
            continue;
        }
        let parsed: ParsedLine = match serde_json::from_slice(line) {
            Ok(parsed) => parsed,
            Err(e) => {
                note(DiagnosticKind::Corrupt(e.to_string()));
                continue;
            }
        };
        if parsed.unknown_fields > 0 {
            note(DiagnosticKind::UnknownFields(parsed.unknown_fields));
        }
        match parsed.body {
            LineBody::Meta(m) if meta.is_none() => {
                if m.format_version > FORMAT_VERSION {
                    return Err(RolloutError::UnsupportedVersion {
                        path: path.to_path_buf(),
                        found: m.format_version,
                        supported: FORMAT_VERSION,
                    });
                }
                meta = Some(*m);
            }
            LineBody::Meta(_) => note(DiagnosticKind::ExtraMeta),
            LineBody::Unknown(kind) => note(DiagnosticKind::UnknownLineType(kind)),
            LineBody::Event(mut event) => {
                if let Some(prev) = events.last() {
                    if event.seq <= prev.seq {
                        note(DiagnosticKind::OutOfOrder {
                            seq: event.seq,
                            after: prev.seq,
                        });
                        continue;
                    }
                }
                if may_reference(&event.msg) {
                    if let Err(e) = blobs.restore(&mut event, &mut blob_cache) {
                        note(DiagnosticKind::Blob(e.to_string()));
                    }
                }
                let is_user_message = matches!(
                    &event.msg,
                    EventMsg::ItemCompleted {
                        item: Item::UserMessage { .. }
                    }
                );
                events.push(*event);
                if until == ReadUntil::FirstUserMessage && is_user_message {
                    break;
                }
            }
        }
    }
    let meta = meta.ok_or_else(|| RolloutError::MissingMeta {
        path: path.to_path_buf(),
    })?;
    Ok(LoadedRollout {
        path: path.to_path_buf(),
        meta,
        events,
        diagnostics,
    })
}

/// Reads only the `session_meta` line (the first non-blank, parseable line).
pub fn read_meta(path: &Path) -> Result<SessionMeta, RolloutError> {
    let file = File::open(path).map_err(RolloutError::io("opening", path))?;
    let input = BufReader::new(file);
    for line in input.split(b'\n').take(16) {
        let line = line.map_err(RolloutError::io("reading", path))?;
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line);
        if let Ok(ParsedLine {
            body: LineBody::Meta(meta),
            ..
        }) = serde_json::from_slice(line)
        {
            return Ok(*meta);
        }
    }
    Err(RolloutError::MissingMeta {
        path: path.to_path_buf(),
    })
}
