//! `read_file`: a text file's lines, numbered, from an optional line range.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use rein_protocol::ToolAction;
use serde::Deserialize;
use serde_json::json;

use super::{blocking, looks_binary, open_regular, resolve};
use crate::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

const DEFAULT_LIMIT: usize = 2000;
/// Longer lines are cut, so one minified file cannot flood the context.
const MAX_LINE_CHARS: usize = 500;
/// Bytes of one line kept in memory; the rest of a longer line is skipped unread.
const MAX_LINE_BYTES: usize = 4 * MAX_LINE_CHARS;
/// Output past this many bytes stops, with where to continue.
pub const MAX_OUTPUT_BYTES: usize = 256 * 1024;

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
            let read = if ctx.client().read_text_file {
                read_through_client(&ctx, path, offset, limit).await
            } else {
                blocking(move || read_range(&path, offset, limit)).await
            };
            match read {
                Ok(text) => ToolResult::ok(text),
                Err(e) => ToolResult::err(e),
            }
        })
    }
}

/// The lines as the client (an editor) has them, unsaved changes included, numbered as a
/// read of the disk would be. One line more than asked for tells whether more follow.
async fn read_through_client(
    ctx: &ToolContext,
    path: PathBuf,
    offset: usize,
    limit: usize,
) -> Result<String, String> {
    let too_far = || format!("offset {offset} is out of range");
    let line = u32::try_from(offset).map_err(|_| too_far())?;
    let ask = u32::try_from(limit.saturating_add(1)).unwrap_or(u32::MAX);
    let text = ctx
        .read_text_file(path.clone(), Some(line), Some(ask))
        .await
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    number_lines(
        &mut std::io::Cursor::new(text.as_bytes()),
        &path,
        offset,
        (offset, limit),
    )
}

/// Lines `offset..offset+limit` of the file, numbered. Reads no further than needed and
/// keeps at most `MAX_LINE_BYTES` of any line, so a huge file (or one endless line) costs
/// only the lines asked for; the output stops at [`MAX_OUTPUT_BYTES`].
pub fn read_range(path: &Path, offset: usize, limit: usize) -> Result<String, String> {
    let cannot = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    let (file, _) = open_regular(path, true)?;
    let mut reader = BufReader::new(file);
    if looks_binary(reader.fill_buf().map_err(cannot)?) {
        return Err(format!("{} is a binary file", path.display()));
    }
    number_lines(&mut reader, path, 1, (offset, limit))
}

/// Number lines `offset..offset+limit` of `reader`, whose first line is line `first` of
/// the file at `path`.
fn number_lines(
    reader: &mut impl BufRead,
    path: &Path,
    first: usize,
    (offset, limit): (usize, usize),
) -> Result<String, String> {
    let cannot = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    let mut out = String::new();
    let mut line = Vec::new();
    let mut number = first - 1;
    let last = offset.saturating_add(limit - 1);
    loop {
        line.clear();
        if !read_line_capped(reader, &mut line).map_err(cannot)? {
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
        if out.len() >= MAX_OUTPUT_BYTES {
            out.push_str(&format!(
                "[output truncated at {MAX_OUTPUT_BYTES} bytes; continue with offset {number}]\n"
            ));
            return Ok(out);
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        let shown: String = text.chars().take(MAX_LINE_CHARS).collect();
        out.push_str(&format!("{number:>6}\t{shown}\n"));
    }
    if number < offset && !(number == 0 && offset == 1) {
        // Lines before `first` were not seen: their count is known only from the start.
        let count = if first == 1 {
            format!(" ({number} lines)")
        } else {
            String::new()
        };
        return Err(format!(
            "offset {offset} is past the end of {}{count}",
            path.display()
        ));
    }
    Ok(out)
}

/// Read one line into `line`, keeping at most [`MAX_LINE_BYTES`] of it (the rest is
/// consumed and dropped). False at the end of the file.
fn read_line_capped(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut any = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any);
        }
        any = true;
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..take.min(room)]);
        reader.consume(take);
        if done {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn an_endless_line_is_kept_to_its_cap() {
        // Control: reading a line whole keeps all of it.
        let mut whole = Vec::new();
        BufReader::new(std::io::repeat(b'x').take(8 * 1024 * 1024))
            .read_until(b'\n', &mut whole)
            .unwrap();
        assert_eq!(whole.len(), 8 * 1024 * 1024);
        let endless = std::io::repeat(b'x').take(50 * 1024 * 1024);
        let mut reader = BufReader::new(endless);
        let mut line = Vec::new();
        assert!(read_line_capped(&mut reader, &mut line).unwrap());
        assert_eq!(line.len(), MAX_LINE_BYTES);
        line.clear();
        assert!(!read_line_capped(&mut reader, &mut line).unwrap());
    }
}
