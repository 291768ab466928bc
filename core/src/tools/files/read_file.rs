//! `read_file`: a text file's lines, numbered, from an optional line range.

use std::path::PathBuf;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;

use super::{blocking, looks_binary, resolve};
use crate::tools::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

const DEFAULT_LIMIT: usize = 2000;
/// Longer lines are cut, so one minified file cannot flood the context.
const MAX_LINE_CHARS: usize = 500;

#[derive(Deserialize)]
struct Args {
    path: PathBuf,
    /// 1-based first line.
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct ReadFileTool;

impl Tool for ReadFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".to_owned(),
            description: "Read a text file. Lines are numbered; use offset/limit for a range."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "file path, relative to the working directory"},
                    "offset": {"type": "integer", "minimum": 1, "description": "first line to read (1-based)"},
                    "limit": {"type": "integer", "minimum": 1, "description": "maximum number of lines"}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match serde_json::from_str(&call.arguments) {
                Ok(a) => a,
                Err(e) => return ToolResult::err(format!("invalid read_file arguments: {e}")),
            };
            let path = resolve(&ctx.settings.cwd, Some(&args.path));
            let offset = args.offset.unwrap_or(1).max(1);
            let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
            match blocking(move || read_range(&path, offset, limit)).await {
                Ok(text) => ToolResult::ok(text),
                Err(e) => ToolResult::err(e),
            }
        })
    }
}

/// Lines `offset..offset+limit` of the file, numbered.
pub fn read_range(path: &std::path::Path, offset: usize, limit: usize) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if looks_binary(&bytes) {
        return Err(format!("{} is a binary file", path.display()));
    }
    let text = String::from_utf8_lossy(&bytes);
    let total = text.lines().count();
    if offset > total.max(1) {
        return Err(format!(
            "offset {offset} is past the end of {} ({total} lines)",
            path.display()
        ));
    }
    let mut out = String::new();
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        let shown: String = line.chars().take(MAX_LINE_CHARS).collect();
        out.push_str(&format!("{:>6}\t{shown}\n", i + 1));
    }
    let last = (offset - 1 + limit).min(total);
    if last < total {
        out.push_str(&format!(
            "[{} more lines; continue with offset {}]\n",
            total - last,
            last + 1
        ));
    }
    Ok(out)
}
