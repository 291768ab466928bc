//! The `apply_patch` tool the model calls. It parses the patch, stages it (so the paths
//! it touches are known before anything is written), asks the policy engine, and only
//! then commits.

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use rein_protocol::{EventMsg, FileChangeKind, FileDiff};
use serde::Deserialize;
use serde_json::json;

use super::applier::{ChangeKind, FileChange};
use super::{parse, stage, summarize, PatchError};
use crate::tools::policy::{Action, PolicyEngine};
use crate::tools::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

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
    let staged = match parse(text)
        .map_err(PatchError::from)
        .and_then(|p| stage(&p, cwd))
    {
        Ok(s) => s,
        Err(e) => return ToolResult::err(e.to_string()),
    };
    let paths = staged.touched_paths().map(Path::to_path_buf).collect();
    if let Err(refusal) = policy.authorize(ctx, Action::Patch { paths }).await {
        return ToolResult::err(refusal.to_string());
    }
    // Staging and writing are plain blocking file I/O on a handful of files.
    match tokio::task::spawn_blocking(move || staged.commit()).await {
        Ok(Ok(changes)) => {
            ctx.emit(EventMsg::PatchApplied {
                call_id: ctx.call_id.clone(),
                changes: changes.iter().map(file_diff).collect(),
            });
            ToolResult::ok(summarize(&changes))
        }
        Ok(Err(e)) => ToolResult::err(e.to_string()),
        Err(e) => ToolResult::err(format!("apply_patch failed: {e}")),
    }
}

fn file_diff(change: &FileChange) -> FileDiff {
    let (kind, move_to) = match &change.kind {
        ChangeKind::Add => (FileChangeKind::Add, None),
        ChangeKind::Delete => (FileChangeKind::Delete, None),
        ChangeKind::Update { move_to } => (FileChangeKind::Update, move_to.clone()),
    };
    FileDiff {
        path: change.path.clone(),
        kind,
        move_to,
        unified_diff: change.diff.clone(),
    }
}
