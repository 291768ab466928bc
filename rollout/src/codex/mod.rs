//! Import of rollouts written by the Codex CLI, so a Codex session can be resumed or
//! forked by rein. Codex lines (`session_meta`, `response_item`, `event_msg`,
//! `turn_context`, `compacted`) become rein `Event`s: model items keep their ids,
//! turns keep theirs, and token counts and rollbacks carry over. Codex's UI-only
//! `event_msg`s (which repeat the `response_item`s) are dropped; line types rein has no
//! use for are skipped and reported like any unknown line.
//!
//! A Codex fork stores only its own lines and points at its parent's
//! (`history_base`); the parent is looked up by thread id under the same `sessions`
//! directory and its first lines are read first.

mod map;

use std::path::{Path, PathBuf};

use rein_protocol::ThreadId;
use serde_json::Value;

use super::layout::{rollout_files, thread_id_of};
use super::RolloutError;
use rein_core::store::{Diagnostic, DiagnosticKind, LoadedRollout, SessionMeta};

/// How deep a chain of Codex forks is followed.
const MAX_LINEAGE: usize = 16;

/// Why a file could not be imported as a Codex rollout: the import's own error, so the
/// store's port knows nothing of Codex.
#[derive(Debug, thiserror::Error)]
pub enum CodexImportError {
    #[error("{path} is not a Codex rollout: it has no session_meta line")]
    NotCodex { path: PathBuf },
    #[error(transparent)]
    Read(#[from] RolloutError),
}

/// Reads a Codex rollout (following fork lineage) into rein events.
pub fn import_codex_rollout(path: &Path) -> Result<LoadedRollout, CodexImportError> {
    let mut diagnostics = Vec::new();
    let lines = lines_with_lineage(path, &mut diagnostics, 0)?;
    let mut importer = map::Importer::new(path);
    // The thread's first settings come from its first turn context, so that
    // ThreadConfigured already names the model.
    if let Some(first) = lines.iter().find(|l| l.value["type"] == "turn_context") {
        importer.prime(&first.value["payload"]);
    }
    for line in &lines {
        importer.line(line, &mut diagnostics);
    }
    let (meta, events) = importer.finish()?;
    diagnostics.sort_by_key(|d| d.line);
    Ok(LoadedRollout {
        path: path.to_path_buf(),
        meta,
        events,
        diagnostics,
    })
}

/// One parsed Codex line with where it came from.
pub(crate) struct CodexLine {
    pub line_no: usize,
    /// Whether this line was read from an ancestor of a fork.
    pub inherited: bool,
    pub value: Value,
}

fn read_lines(
    path: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Vec<CodexLine>, CodexImportError> {
    let bytes = std::fs::read(path).map_err(RolloutError::io("reading", path))?;
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    let mut lines = Vec::new();
    let mut pieces = bytes.split(|&b| b == b'\n').peekable();
    let mut line_no = 0;
    while let Some(piece) = pieces.next() {
        line_no += 1;
        let is_last = pieces.peek().is_none();
        let piece = piece.strip_suffix(b"\r").unwrap_or(piece);
        if piece.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(piece) {
            Ok(value) if value.is_object() => lines.push(CodexLine {
                line_no,
                inherited: false,
                value,
            }),
            Ok(_) => diagnostics.push(Diagnostic {
                line: line_no,
                kind: DiagnosticKind::Corrupt("not a JSON object".to_owned()),
            }),
            Err(e) => diagnostics.push(Diagnostic {
                line: line_no,
                kind: if is_last {
                    DiagnosticKind::TornLastLine
                } else {
                    DiagnosticKind::Corrupt(e.to_string())
                },
            }),
        }
    }
    Ok(lines)
}

fn lines_with_lineage(
    path: &Path,
    diagnostics: &mut Vec<Diagnostic>,
    depth: usize,
) -> Result<Vec<CodexLine>, CodexImportError> {
    let own = read_lines(path, diagnostics)?;
    let Some(meta) = own.iter().find(|l| l.value["type"] == "session_meta") else {
        return Err(CodexImportError::NotCodex {
            path: path.to_path_buf(),
        });
    };
    let base = &meta.value["payload"]["history_base"];
    let parent = base["thread_id"]
        .as_str()
        .and_then(|s| s.parse::<ThreadId>().ok());
    let (Some(parent), Some(end)) = (parent, base["end_ordinal_exclusive"].as_u64()) else {
        return Ok(own);
    };
    if depth >= MAX_LINEAGE {
        return Ok(own);
    }
    let Some(parent_path) = find_codex_rollout(path, parent) else {
        diagnostics.push(Diagnostic {
            line: meta.line_no,
            kind: DiagnosticKind::MissingForkParent(parent),
        });
        return Ok(own);
    };
    let mut parent_diags = Vec::new();
    let inherited = lines_with_lineage(&parent_path, &mut parent_diags, depth + 1)?;
    // The fork's own meta first (it names the thread), then the inherited history, then
    // the fork's own lines.
    let (metas, rest): (Vec<_>, Vec<_>) = own
        .into_iter()
        .partition(|l| l.value["type"] == "session_meta");
    let mut lines = metas;
    lines.extend(
        inherited
            .into_iter()
            .filter(|l| l.value["ordinal"].as_u64().is_some_and(|o| o < end))
            .filter(|l| l.value["type"] != "session_meta")
            .map(|l| CodexLine {
                inherited: true,
                ..l
            }),
    );
    lines.extend(rest);
    Ok(lines)
}

/// A Codex rollout of `thread` near `beside`: under the enclosing `sessions` directory
/// if there is one, else in the same directory.
fn find_codex_rollout(beside: &Path, thread: ThreadId) -> Option<PathBuf> {
    let dir = beside.parent()?;
    let root = dir
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "sessions"))
        .unwrap_or(dir);
    rollout_files(root)
        .ok()?
        .into_iter()
        .find(|p| thread_id_of(p) == Some(thread))
}

/// The rein meta of an imported thread.
fn meta_from(payload: &Value, thread_id: ThreadId, model: &str, created_at: &str) -> SessionMeta {
    let session_id = payload["session_id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| thread_id.into());
    SessionMeta {
        thread_id,
        session_id,
        forked_from: payload["forked_from_id"]
            .as_str()
            .and_then(|s| s.parse().ok()),
        parent_thread_id: None,
        cwd: PathBuf::from(payload["cwd"].as_str().unwrap_or_default()),
        model: model.to_owned(),
        provider: payload["model_provider"]
            .as_str()
            .unwrap_or("openai")
            .to_owned(),
        created_at: created_at.to_owned(),
    }
}

#[cfg(test)]
mod tests;
