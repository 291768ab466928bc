//! A stored thread read back, and what the reader skipped on the way.

use std::path::PathBuf;

use rein_protocol::{Event, EventMsg, Item, ThreadId};

use super::meta::SessionMeta;

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
    /// A line longer than the format allows (its length); skipped unread.
    TooLong(u64),
    /// An event of another thread (pasted in); skipped.
    ForeignEvent(ThreadId),
}

impl DiagnosticKind {
    /// Whether the line held something that is now missing from the thread (as opposed to
    /// formatting the reader tolerates, like a blank line or a byte-order mark).
    pub fn lost_content(&self) -> bool {
        matches!(
            self,
            DiagnosticKind::TornLastLine
                | DiagnosticKind::Corrupt(_)
                | DiagnosticKind::OutOfOrder { .. }
                | DiagnosticKind::Blob(_)
                | DiagnosticKind::TooLong(_)
                | DiagnosticKind::ForeignEvent(_)
                | DiagnosticKind::MissingForkParent(_)
        )
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let line = self.line;
        match &self.kind {
            DiagnosticKind::TornLastLine => write!(f, "line {line}: cut short (no newline)"),
            DiagnosticKind::ByteOrderMark => write!(f, "line {line}: byte-order mark"),
            DiagnosticKind::BlankLine => write!(f, "line {line}: blank"),
            DiagnosticKind::UnknownLineType(t) => write!(f, "line {line}: unknown type {t:?}"),
            DiagnosticKind::UnknownFields(n) => write!(f, "line {line}: {n} unknown fields"),
            DiagnosticKind::Corrupt(why) => write!(f, "line {line}: corrupt ({why})"),
            DiagnosticKind::OutOfOrder { seq, after } => {
                write!(f, "line {line}: seq {seq} after {after}")
            }
            DiagnosticKind::ExtraMeta => write!(f, "line {line}: a second session_meta"),
            DiagnosticKind::Blob(why) => write!(f, "line {line}: {why}"),
            DiagnosticKind::MissingForkParent(t) => {
                write!(f, "line {line}: the fork parent {t} is missing")
            }
            DiagnosticKind::TooLong(n) => write!(f, "line {line}: {n} bytes, over the limit"),
            DiagnosticKind::ForeignEvent(t) => {
                write!(f, "line {line}: an event of another thread ({t})")
            }
        }
    }
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

pub fn first_user_text<'a>(events: impl IntoIterator<Item = &'a Event>) -> Option<String> {
    events.into_iter().find_map(|e| match &e.msg {
        EventMsg::ItemCompleted {
            item: item @ Item::UserMessage { .. },
        } => item.message_text(),
        _ => None,
    })
}
