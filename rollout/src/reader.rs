//! The tolerant reader: loads a rollout into its meta and events, skipping and reporting
//! what it cannot use instead of failing. A torn last line (a crash mid-append), a
//! byte-order mark, blank lines, unknown line types and unknown envelope fields are
//! skipped and counted; a corrupt line in the middle is reported with its line number
//! and skipped, and so is a line longer than [`MAX_LINE_BYTES`] (without holding it in
//! memory) and an event of another thread. A last line that only lacks its newline but
//! parses is a whole event and is kept.
//!
//! Only regular files are read, never through a symlink, and opening never waits (a FIFO
//! planted in `sessions/` is refused at once). A file is an error when it has no readable
//! `session_meta`, is of a newer format, or its meta names another thread than its file
//! name does.
//!
//! Lines are parsed one at a time from a reused buffer, so peak memory is the events
//! plus one line per worker; a large file is split at line boundaries into ranges that
//! are parsed in parallel and joined in order.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use rein_protocol::{Event, EventMsg, Item};

use super::blobs::{may_reference, BlobStore};
use super::format::{LineBody, MetaLine, ParsedLine, FORMAT_VERSION};
use super::layout;
use super::writer::MAX_LINE_BYTES;
use rein_core::store::SessionMeta;
use rein_core::store::{Diagnostic, DiagnosticKind, LoadedRollout};

use super::RolloutError;

/// Opens a rollout for reading: a regular file, not through a symlink, without waiting.
pub fn open_regular(path: &Path) -> Result<File, RolloutError> {
    use std::os::unix::fs::OpenOptionsExt;
    super::io_guard::assert_off_executor("reading a rollout");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => RolloutError::NotRegular {
                path: path.to_path_buf(),
                what: "a symbolic link",
            },
            _ => RolloutError::io("opening", path)(e),
        })?;
    let kind = file
        .metadata()
        .map_err(RolloutError::io("reading metadata of", path))?
        .file_type();
    if !kind.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(RolloutError::NotRegular {
            path: path.to_path_buf(),
            what,
        });
    }
    Ok(file)
}

/// What one bounded line read found.
enum LineRead {
    Eof,
    /// A line in the buffer (with its newline, unless it is the last and has none).
    Line,
    /// A line longer than the bound, skipped; its length (with its newline, if any).
    TooLong(u64),
}

/// Reads one line into `buf` (cleared first), never holding more than `max` bytes of it:
/// a longer line is consumed and reported by length.
fn read_line_bounded(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    buf.clear();
    let mut skipped: Option<u64> = None;
    loop {
        let available = input.fill_buf()?;
        if available.is_empty() {
            return Ok(match skipped {
                Some(n) => LineRead::TooLong(n),
                None if buf.is_empty() => LineRead::Eof,
                None => LineRead::Line,
            });
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(pos) => (&available[..=pos], true),
            None => (available, false),
        };
        let n = chunk.len();
        match &mut skipped {
            Some(total) => *total += n as u64,
            None if buf.len() + n > max => {
                skipped = Some((buf.len() + n) as u64);
                buf.clear();
            }
            None => buf.extend_from_slice(chunk),
        }
        input.consume(n);
        if done {
            return Ok(match skipped {
                Some(n) => LineRead::TooLong(n),
                None => LineRead::Line,
            });
        }
    }
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
    let len = open_regular(path)?
        .metadata()
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
    let len = open_regular(path)?
        .metadata()
        .map_err(RolloutError::io("opening", path))?
        .len();
    let ranges = split_at_lines(path, len, workers)?;
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
fn split_at_lines(path: &Path, len: u64, workers: usize) -> Result<Vec<(u64, u64)>, RolloutError> {
    if workers <= 1 {
        return Ok(vec![(0, len)]);
    }
    let mut file = open_regular(path)?;
    let cuts = find_cuts(&mut file, len, workers).map_err(RolloutError::io("reading", path))?;
    Ok(cuts.windows(2).map(|w| (w[0], w[1])).collect())
}

fn find_cuts(file: &mut File, len: u64, workers: usize) -> std::io::Result<Vec<u64>> {
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
    Ok(cuts)
}

/// What one byte range of the file holds. Line numbers are relative to the range.
struct Chunk {
    lines: usize,
    metas: Vec<(usize, MetaLine<SessionMeta>)>,
    events: Vec<(usize, Event)>,
    diagnostics: Vec<Diagnostic>,
}

fn parse_range(
    path: &Path,
    blobs: &BlobStore,
    (start, end): (u64, u64),
    until: ReadUntil,
) -> Result<Chunk, RolloutError> {
    let mut file = open_regular(path)?;
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
        let read = read_line_bounded(&mut input, &mut buf, MAX_LINE_BYTES)
            .map_err(RolloutError::io("reading", path))?;
        if matches!(read, LineRead::Eof) {
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
        if let LineRead::TooLong(n) = read {
            note(DiagnosticKind::TooLong(n));
            continue;
        }
        let terminated = buf.last() == Some(&b'\n');
        let Some(line) = line_json(&buf, &mut note) else {
            continue;
        };
        let parsed: ParsedLine = match serde_json::from_slice(line) {
            Ok(parsed) => parsed,
            // A last line cut short by a crash; one that parses lacks only its newline.
            Err(_) if !terminated => {
                note(DiagnosticKind::TornLastLine);
                break;
            }
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

/// A line's JSON: without its newline, a byte-order mark (noted) and a trailing `\r`; `None`
/// for a blank line (noted).
fn line_json<'a>(buf: &'a [u8], note: &mut impl FnMut(DiagnosticKind)) -> Option<&'a [u8]> {
    let mut line = buf.strip_suffix(b"\n").unwrap_or(buf);
    if let Some(rest) = line.strip_prefix(b"\xEF\xBB\xBF") {
        note(DiagnosticKind::ByteOrderMark);
        line = rest;
    }
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        note(DiagnosticKind::BlankLine);
        return None;
    }
    Some(line)
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
                meta = Some(m.meta);
            } else {
                extra.push(Diagnostic {
                    line: offset + line,
                    kind: DiagnosticKind::ExtraMeta,
                });
            }
        }
        for (line, event) in chunk.events {
            let owner = meta.as_ref().map(|m| m.thread_id);
            if owner.is_some_and(|owner| owner != event.thread_id) {
                extra.push(Diagnostic {
                    line: offset + line,
                    kind: DiagnosticKind::ForeignEvent(event.thread_id),
                });
                continue;
            }
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
    check_named_thread(path, &meta)?;
    Ok(LoadedRollout {
        path: path.to_path_buf(),
        meta,
        events,
        diagnostics,
    })
}

/// A rollout whose file name names a thread must hold that thread's meta: a file whose
/// meta was swapped for another thread's would otherwise load the other thread's history
/// under this id.
fn check_named_thread(path: &Path, meta: &SessionMeta) -> Result<(), RolloutError> {
    match layout::thread_id_of(path) {
        Some(named) if named != meta.thread_id => Err(RolloutError::MetaMismatch {
            path: path.to_path_buf(),
            named,
            meta: meta.thread_id,
        }),
        _ => Ok(()),
    }
}

/// Reads only the `session_meta` line (the first non-blank, parseable line).
pub fn read_meta(path: &Path) -> Result<SessionMeta, RolloutError> {
    let file = open_regular(path)?;
    let mut input = BufReader::new(file);
    let mut buf = Vec::new();
    for _ in 0..16 {
        match read_line_bounded(&mut input, &mut buf, MAX_LINE_BYTES)
            .map_err(RolloutError::io("reading", path))?
        {
            LineRead::Eof => break,
            LineRead::TooLong(_) => continue,
            LineRead::Line => {}
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if let Ok(ParsedLine {
            body: LineBody::Meta(meta),
            ..
        }) = serde_json::from_slice(line)
        {
            check_named_thread(path, &meta.meta)?;
            return Ok(meta.meta);
        }
    }
    Err(RolloutError::MissingMeta {
        path: path.to_path_buf(),
    })
}

/// What reindexing takes from the whole of a rollout: the thread's last name
/// (`thread_named`) and its goal's last status (`goal_updated`, `goal_cleared`).
#[derive(Debug, Default)]
pub(crate) struct ListingTail {
    pub name: Option<String>,
    pub goal: Option<rein_protocol::GoalStatus>,
}

/// [`ListingTail`], for reindexing: names and goals may change at any point of a long
/// rollout, so every line is looked at, but only lines that mention those events are
/// decoded.
pub(crate) fn read_listing_tail(path: &Path) -> Result<ListingTail, RolloutError> {
    const MARKERS: [&[u8]; 3] = [
        br#""type":"thread_named""#,
        br#""type":"goal_updated""#,
        br#""type":"goal_cleared""#,
    ];
    let file = open_regular(path)?;
    let mut input = BufReader::with_capacity(256 * 1024, file);
    let mut buf = Vec::new();
    let mut tail = ListingTail::default();
    loop {
        match read_line_bounded(&mut input, &mut buf, MAX_LINE_BYTES)
            .map_err(RolloutError::io("reading", path))?
        {
            LineRead::Eof => return Ok(tail),
            LineRead::TooLong(_) => continue,
            LineRead::Line => {}
        }
        let marked = MARKERS
            .iter()
            .any(|m| buf.windows(m.len()).any(|w| w == *m));
        if !marked {
            continue;
        }
        if let Ok(ParsedLine {
            body: LineBody::Event(event),
            ..
        }) = serde_json::from_slice(&buf)
        {
            match event.msg {
                EventMsg::ThreadNamed { name } => tail.name = Some(name),
                EventMsg::GoalUpdated { goal } => tail.goal = Some(goal.status),
                EventMsg::GoalCleared => tail.goal = None,
                _ => {}
            }
        }
    }
}
