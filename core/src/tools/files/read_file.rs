//! `read_file`: a text file's lines, numbered, from an optional line range.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use rein_protocol::ToolAction;
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

    fn describe(&self, call: &ToolCall, ctx: &ToolContext) -> ToolAction {
        match serde_json::from_str::<Args>(&call.arguments) {
            Ok(args) => ToolAction::Read {
                path: resolve(&ctx.settings.cwd, Some(&args.path)),
            },
            Err(_) => ToolAction::other(&call.name, &call.arguments),
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

/// Lines `offset..offset+limit` of the file, numbered. Reads no further than needed, so
/// a huge file costs only the lines asked for.
pub fn read_range(path: &Path, offset: usize, limit: usize) -> Result<String, String> {
    let cannot = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut reader = BufReader::new(file);
    if looks_binary(reader.fill_buf().map_err(cannot)?) {
        return Err(format!("{} is a binary file", path.display()));
    }
    let mut out = String::new();
    let mut line = Vec::new();
    let mut number = 0;
    let last = offset - 1 + limit;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(cannot)? == 0 {
            break;
        }
        number += 1;
        if number < offset {
            continue;
        }
        if number > last {
            out.push_str(&format!("[more lines; continue with offset {number}]\n"));
            return Ok(out);
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        let shown: String = text.chars().take(MAX_LINE_CHARS).collect();
        out.push_str(&format!("{number:>6}\t{shown}\n"));
    }
    if number < offset && !(number == 0 && offset == 1) {
        return Err(format!(
            "offset {offset} is past the end of {} ({number} lines)",
            path.display()
        ));
    }
    Ok(out)
}
