//! The tolerant reader: loads a rollout into its meta and events, skipping and reporting
//! what it cannot use instead of failing. A torn last line (a crash mid-append), a
//! byte-order mark, blank lines, unknown line types and unknown envelope fields are
//! skipped and counted; a corrupt line in the middle is reported with its line number
//! and skipped. Only a file with no readable `session_meta` is an error.
//!
//! Lines are parsed one at a time from a reused buffer, so peak memory is the events
//! plus one line per worker; a large file is split at line boundaries into ranges that
//! are parsed in parallel and joined in order.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use rein_protocol::{Event, EventMsg, Item, ThreadId};

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
    /// An imported fork's parent rollout was not found: history before the fork is missing.
    MissingForkParent(ThreadId),
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

/// Files above this size are parsed by several threads, each over its own byte range.
const PARALLEL_MIN_BYTES: u64 = 8 << 20;
const MAX_WORKERS: usize = 4;

/// Reads a whole rollout, in parallel when it is large.
pub fn read_rollout(path: &Path, blobs: &BlobStore) -> Result<LoadedRollout, RolloutError> {
    read_rollout_until(path, blobs, ReadUntil::End)
}

/// Reads a whole rollout with up to `workers` threads (the result does not depend on it).
pub fn read_rollout_with_workers(
    path: &Path,
    blobs: &BlobStore,
    workers: usize,
) -> Result<LoadedRollout, RolloutError> {
    read_ranges(path, blobs, ReadUntil::End, workers)
}

pub(crate) fn read_rollout_until(
    path: &Path,
    blobs: &BlobStore,
    until: ReadUntil,
) -> Result<LoadedRollout, RolloutError> {
    let len = std::fs::metadata(path)
        .map_err(RolloutError::io("opening", path))?
        .len();
    let workers = if until == ReadUntil::End && len >= PARALLEL_MIN_BYTES {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_WORKERS))
    } else {
        1
    };
    read_ranges(path, blobs, until, workers)
}

fn read_ranges(
    path: &Path,
    blobs: &BlobStore,
    until: ReadUntil,
    workers: usize,
) -> Result<LoadedRollout, RolloutError> {
    let len = std::fs::metadata(path)
        .map_err(RolloutError::io("opening", path))?
        .len();
    let ranges = split_at_lines(path, len, workers).map_err(RolloutError::io("reading", path))?;
    let chunks: Vec<Result<Chunk, RolloutError>> = if ranges.len() == 1 {
        vec![parse_range(path, blobs, (0, u64::MAX), until)]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = ranges
                .iter()
                .map(|&range| scope.spawn(move || parse_range(path, blobs, range, until)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(RolloutError::io("parsing", path)(std::io::Error::other(
                            "a reader thread panicked",
                        )))
                    })
                })
                .collect()
        })
    };
    merge(path, chunks)
}

/// Byte ranges covering the file, each ending just after a newline (the last at EOF).
fn split_at_lines(path: &Path, len: u64, workers: usize) -> std::io::Result<Vec<(u64, u64)>> {
    if workers <= 1 {
        return Ok(vec![(0, len)]);
    }
    let mut file = File::open(path)?;
    let mut cuts = vec![0];
    let mut probe = vec![0u8; 64 * 1024];
    for i in 1..workers as u64 {
        let mut at = (len * i / workers as u64).max(*cuts.last().unwrap_or(&0));
        let cut = loop {
            file.seek(SeekFrom::Start(at))?;
            let n = file.read(&mut probe)?;
            if n == 0 {
                break len;
            }
            if let Some(pos) = probe[..n].iter().position(|&b| b == b'\n') {
                break at + pos as u64 + 1;
            }
            at += n as u64;
        };
        if cut < len && cut > *cuts.last().unwrap_or(&0) {
            cuts.push(cut);
        }
    }
    cuts.push(len);
    Ok(cuts.windows(2).map(|w| (w[0], w[1])).collect())
}

/// What one byte range of the file holds. Line numbers are relative to the range.
struct Chunk {
    lines: usize,
    metas: Vec<(usize, SessionMeta)>,
    events: Vec<(usize, Event)>,
    diagnostics: Vec<Diagnostic>,
}

fn parse_range(
    path: &Path,
    blobs: &BlobStore,
    (start, end): (u64, u64),
    until: ReadUntil,
) -> Result<Chunk, RolloutError> {
    let mut file = File::open(path).map_err(RolloutError::io("opening", path))?;
    file.seek(SeekFrom::Start(start))
        .map_err(RolloutError::io("reading", path))?;
    let mut input = BufReader::with_capacity(1 << 20, file.take(end - start));
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut chunk = Chunk {
        lines: 0,
        metas: Vec::new(),
        events: Vec::new(),
        diagnostics: Vec::new(),
    };
    let mut blob_cache = HashMap::new();
    loop {
        buf.clear();
        let n = input
            .read_until(b'\n', &mut buf)
            .map_err(RolloutError::io("reading", path))?;
        if n == 0 {
            break;
        }
        chunk.lines += 1;
        let line_no = chunk.lines;
        let mut note = |kind| {
            chunk.diagnostics.push(Diagnostic {
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
            LineBody::Meta(meta) => chunk.metas.push((line_no, *meta)),
            LineBody::Unknown(kind) => note(DiagnosticKind::UnknownLineType(kind)),
            LineBody::Event(mut event) => {
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
                chunk.events.push((line_no, *event));
                if until == ReadUntil::FirstUserMessage && is_user_message {
                    break;
                }
            }
        }
    }
    Ok(chunk)
}

/// Joins the ranges in order: absolute line numbers, the first meta, seq order checks.
fn merge(
    path: &Path,
    chunks: Vec<Result<Chunk, RolloutError>>,
) -> Result<LoadedRollout, RolloutError> {
    let mut meta: Option<SessionMeta> = None;
    let mut diagnostics = Vec::new();
    let mut events: Vec<Event> = Vec::new();
    let mut offset = 0;
    for chunk in chunks {
        let chunk = chunk?;
        let mut extra = Vec::new();
        for (line, m) in chunk.metas {
            if meta.is_none() {
                if m.format_version > FORMAT_VERSION {
                    return Err(RolloutError::UnsupportedVersion {
                        path: path.to_path_buf(),
                        found: m.format_version,
                        supported: FORMAT_VERSION,
                    });
                }
                meta = Some(m);
            } else {
                extra.push(Diagnostic {
                    line: offset + line,
                    kind: DiagnosticKind::ExtraMeta,
                });
            }
        }
        for (line, event) in chunk.events {
            match events.last() {
                Some(prev) if event.seq <= prev.seq => extra.push(Diagnostic {
                    line: offset + line,
                    kind: DiagnosticKind::OutOfOrder {
                        seq: event.seq,
                        after: prev.seq,
                    },
                }),
                _ => events.push(event),
            }
        }
        diagnostics.extend(chunk.diagnostics.into_iter().map(|d| Diagnostic {
            line: offset + d.line,
            ..d
        }));
        diagnostics.extend(extra);
        offset += chunk.lines;
    }
    diagnostics.sort_by_key(|d| d.line);
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

/// The thread's last name (`thread_named`), for reindexing: names may be set at any point
/// of a long rollout, so every line is looked at, but only lines that mention the event
/// are decoded.
pub(crate) fn read_last_name(path: &Path) -> Result<Option<String>, RolloutError> {
    const MARKER: &[u8] = br#""type":"thread_named""#;
    let file = File::open(path).map_err(RolloutError::io("opening", path))?;
    let mut input = BufReader::with_capacity(256 * 1024, file);
    let mut buf = Vec::new();
    let mut name = None;
    loop {
        buf.clear();
        let n = input
            .read_until(b'\n', &mut buf)
            .map_err(RolloutError::io("reading", path))?;
        if n == 0 {
            return Ok(name);
        }
        if !buf.windows(MARKER.len()).any(|w| w == MARKER) {
            continue;
        }
        if let Ok(ParsedLine {
            body: LineBody::Event(event),
            ..
        }) = serde_json::from_slice(&buf)
        {
            if let EventMsg::ThreadNamed { name: named } = event.msg {
                name = Some(named);
            }
        }
    }
}
