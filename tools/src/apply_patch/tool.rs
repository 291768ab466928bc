//! The `apply_patch` tool the model calls. It parses the patch, stages it (so the paths
//! it touches are known before anything is written), asks the policy engine, and only
//! then commits.

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use rein_protocol::{FileChangeKind, FileDiff, ToolAction, ToolOutcome};
use serde::Deserialize;
use serde_json::json;

use super::applier::{ChangeKind, FileChange};
use super::client;
use super::parser::{FileOp, Hunk};
use super::{parse, stage, summarize, PatchError};
use crate::policy::{Action, PolicyEngine};
use crate::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

pub const APPLY_PATCH_TOOL: &str = "apply_patch";

#[derive(Deserialize)]
struct Args {
    input: String,
}

pub struct ApplyPatchTool {
    policy: Arc<PolicyEngine>,
}

impl ApplyPatchTool {
    pub fn new(policy: Arc<PolicyEngine>) -> Self {
        Self { policy }
    }
}

impl Tool for ApplyPatchTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: APPLY_PATCH_TOOL.to_owned(),
            description: "Edit files with a patch: `*** Begin Patch`, then `*** Add File: \
                          <path>` (lines prefixed `+`), `*** Delete File: <path>`, or \
                          `*** Update File: <path>` (optionally `*** Move to: <path>`) with \
                          `@@` hunks of ` ` context, `-` removed and `+` added lines, then \
                          `*** End Patch`. Paths are relative to the working directory. All \
                          files change or none does."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "input": {"type": "string", "description": "the whole patch text"}
                },
                "required": ["input"],
                "additionalProperties": false
            }),
        }
    }

    fn describe(&self, call: &ToolCall, ctx: &ToolContext) -> ToolAction {
        serde_json::from_str::<Args>(&call.arguments)
            .ok()
            .and_then(|args| edit_action(&args.input, &ctx.settings.cwd))
            .unwrap_or_else(|| ToolAction::other(&call.name, &call.arguments))
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match serde_json::from_str(&call.arguments) {
                Ok(a) => a,
                Err(e) => return ToolResult::err(format!("invalid apply_patch arguments: {e}")),
            };
            apply_checked(&self.policy, &ctx, &args.input, &ctx.settings.cwd).await
        })
    }
}

/// Parse, stage, ask the policy about every touched path, then commit. Paths in the
/// patch are relative to `cwd`.
pub async fn apply_checked(
    policy: &PolicyEngine,
    ctx: &ToolContext,
    text: &str,
    cwd: &Path,
) -> ToolResult {
    let patch = match parse(text) {
        Ok(p) => p,
        Err(e) => return ToolResult::err(PatchError::from(e).to_string()),
    };
    let client = ctx.client();
    if client.read_text_file && client.write_text_file && client::fits_client(&patch) {
        return client::apply_through_client(policy, ctx, &patch, cwd).await;
    }
    let staged = match stage(&patch, cwd) {
        Ok(s) => s,
        Err(e) => return ToolResult::err(e.to_string()),
    };
    let paths = staged.touched_paths().map(Path::to_path_buf).collect();
    if let Err(refusal) = policy.authorize(ctx, Action::Patch { paths }).await {
        return refusal.into_result();
    }
    // Staging and writing are plain blocking file I/O on a handful of files.
    match tokio::task::spawn_blocking(move || staged.commit()).await {
        Ok(Ok(changes)) => {
            let diffs = changes.iter().map(|c| file_diff(c, cwd)).collect();
            ToolResult::new(
                summarize(&changes),
                true,
                ToolOutcome::Patched { changes: diffs },
            )
        }
        Ok(Err(e)) => ToolResult::err(e.to_string()),
        Err(e) => ToolResult::err(format!("apply_patch failed: {e}")),
    }
}

/// What a patch is about to change (its own hunks, before anything is read), or `None`
/// when it does not parse (the call will fail and say why).
pub fn edit_action(text: &str, cwd: &Path) -> Option<ToolAction> {
    let patch = parse(text).ok()?;
    let changes = patch.ops.iter().map(|op| planned(op, cwd)).collect();
    Some(ToolAction::Edit { changes })
}

fn planned(op: &FileOp, cwd: &Path) -> FileDiff {
    let (kind, move_to, unified_diff) = match op {
        FileOp::Add { contents, .. } => (
            FileChangeKind::Add,
            None,
            contents.lines().map(|l| format!("+{l}\n")).collect(),
        ),
        FileOp::Delete { .. } => (FileChangeKind::Delete, None, String::new()),
        FileOp::Update { move_to, hunks, .. } => (
            FileChangeKind::Update,
            move_to.as_ref().map(|to| cwd.join(to)),
            hunks.iter().map(hunk_text).collect(),
        ),
    };
    FileDiff {
        path: cwd.join(op.path()),
        kind,
        move_to,
        unified_diff,
    }
}

/// A hunk as the patch means it: its anchor, then context, removed and added lines.
fn hunk_text(hunk: &Hunk) -> String {
    let mut text = match &hunk.anchor {
        Some(anchor) => format!("@@ {anchor}\n"),
        None => "@@\n".to_owned(),
    };
    let (old, new) = (hunk.old.join("\n"), hunk.new.join("\n"));
    for change in similar::TextDiff::from_lines(&old, &new).iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Equal => ' ',
            similar::ChangeTag::Delete => '-',
            similar::ChangeTag::Insert => '+',
        };
        text.push(sign);
        text.push_str(change.value().trim_end_matches('\n'));
        text.push('\n');
    }
    text
}

/// One applied change; paths are made absolute against the patch's `cwd`.
pub(super) fn file_diff(change: &FileChange, cwd: &Path) -> FileDiff {
    let (kind, move_to) = match &change.kind {
        ChangeKind::Add => (FileChangeKind::Add, None),
        ChangeKind::Delete => (FileChangeKind::Delete, None),
        ChangeKind::Update { move_to } => (
            FileChangeKind::Update,
            move_to.as_ref().map(|to| cwd.join(to)),
        ),
    };
    FileDiff {
        path: cwd.join(&change.path),
        kind,
        move_to,
        unified_diff: change.diff.clone(),
    }
}
