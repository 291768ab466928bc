//! `list_dir`: a directory tree to a depth, sorted, skipping ignored names.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use rein_protocol::ToolAction;
use serde::Deserialize;
use serde_json::json;

use super::{blocking, glob, resolve, DEFAULT_IGNORES};
use crate::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

const DEFAULT_DEPTH: usize = 2;
const MAX_DEPTH: usize = 10;
const MAX_ENTRIES: usize = 1000;
/// Entries of one directory read (and sorted) at most: a directory of millions of files
/// costs bounded memory.
const MAX_READ_PER_DIR: usize = 20_000;

#[derive(Deserialize)]
struct Args {
    #[serde(default)]
    path: Option<PathBuf>,
    #[serde(default)]
    depth: Option<usize>,
    #[serde(default)]
    ignore: Vec<String>,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct ListDirTool;

impl Tool for ListDirTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_dir".to_owned(),
            description: "List a directory as a tree (directories end with `/`, symlinks \
                          with `@`). `.git` is skipped."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "directory, relative to the working directory (default: it)"},
                    "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "levels to descend (default 2)"},
                    "ignore": {"type": "array", "items": {"type": "string"}, "description": "name patterns to skip, e.g. `target`, `*.log`"}
                },
                "additionalProperties": false
            }),
        }
    }

    fn describe(&self, call: &ToolCall, ctx: &ToolContext) -> ToolAction {
        match serde_json::from_str::<Args>(&call.arguments) {
            Ok(args) => ToolAction::List {
                path: resolve(&ctx.settings.cwd, args.path.as_deref()),
            },
            Err(_) => ToolAction::other(&call.name, &call.arguments),
        }
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match serde_json::from_str(&call.arguments) {
                Ok(a) => a,
                Err(e) => return ToolResult::err(format!("invalid list_dir arguments: {e}")),
            };
            let root = resolve(&ctx.settings.cwd, args.path.as_deref());
            let depth = args.depth.unwrap_or(DEFAULT_DEPTH).clamp(1, MAX_DEPTH);
            let mut ignore = args.ignore;
            ignore.extend(DEFAULT_IGNORES.iter().map(|s| (*s).to_owned()));
            match blocking(move || list(&root, depth, &ignore)).await {
                Ok(text) => ToolResult::ok(text),
                Err(e) => ToolResult::err(e),
            }
        })
    }
}

/// The tree under `root`, `depth` levels deep.
pub fn list(root: &Path, depth: usize, ignore: &[String]) -> Result<String, String> {
    let meta =
        std::fs::metadata(root).map_err(|e| format!("cannot list {}: {e}", root.display()))?;
    if !meta.is_dir() {
        return Err(format!("{} is not a directory", root.display()));
    }
    let mut out = format!("{}/\n", root.display());
    let mut count = 0;
    walk(root, 1, depth, ignore, &mut out, &mut count);
    if count >= MAX_ENTRIES {
        let _ = writeln!(out, "[stopped after {MAX_ENTRIES} entries]");
    }
    Ok(out)
}

fn walk(
    dir: &Path,
    level: usize,
    depth: usize,
    ignore: &[String],
    out: &mut String,
    count: &mut usize,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        let _ = writeln!(out, "{}[unreadable]", "  ".repeat(level));
        return;
    };
    let mut entries: Vec<_> = entries
        .filter_map(Result::ok)
        .take(MAX_READ_PER_DIR + 1)
        .collect();
    let cut = entries.len() > MAX_READ_PER_DIR;
    entries.truncate(MAX_READ_PER_DIR);
    entries.sort_by_key(std::fs::DirEntry::file_name);
    if cut {
        let _ = writeln!(
            out,
            "{}[only the first {MAX_READ_PER_DIR} entries read in {}]",
            "  ".repeat(level),
            dir.display()
        );
    }
    for entry in entries {
        if *count >= MAX_ENTRIES {
            return;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if ignore.iter().any(|p| glob::matches(p, &name)) {
            continue;
        }
        *count += 1;
        let file_type = entry.file_type().ok();
        let indent = "  ".repeat(level);
        if file_type.is_some_and(|t| t.is_symlink()) {
            let _ = writeln!(out, "{indent}{name}@");
        } else if file_type.is_some_and(|t| t.is_dir()) {
            let _ = writeln!(out, "{indent}{name}/");
            if level < depth {
                walk(&entry.path(), level + 1, depth, ignore, out, count);
            }
        } else {
            let _ = writeln!(out, "{indent}{name}");
        }
    }
}
