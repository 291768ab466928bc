//! `grep`: regular-expression search over the files under a path, with ripgrep's crates:
//! `ignore` walks the tree as `rg` does (`.gitignore`, `.ignore` and `.git/info/exclude`
//! honoured, so build output and vendored code stay out), `regex` matches. Hidden files
//! are searched (`.github/` matters to a coding agent) but `.git` never is; binary and very
//! large files are skipped, and a result cap keeps a search from flooding the context.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use ignore::WalkBuilder;
use regex::RegexBuilder;
use rein_protocol::ToolAction;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{blocking, glob, looks_binary, open_regular, resolve, DEFAULT_IGNORES};
use crate::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

const DEFAULT_MAX_RESULTS: usize = 200;
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
const MAX_LINE_CHARS: usize = 300;

#[derive(Deserialize)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<PathBuf>,
    /// Only files whose name matches, e.g. `*.rs`.
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    max_results: Option<usize>,
    /// Search files that `.gitignore` and friends exclude too.
    #[serde(default)]
    include_ignored: bool,
}

/// One search, after argument parsing.
#[derive(Clone, Debug)]
pub struct GrepQuery {
    pub regex: regex::Regex,
    pub glob: Option<String>,
    pub max_results: usize,
    pub include_ignored: bool,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct GrepTool;

impl Tool for GrepTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".to_owned(),
            description: "Search files for a regular expression (Rust regex syntax). Prints \
                          `path:line:text` for each match; skips .git, binary files and what .gitignore \
                          excludes (unless include_ignored)."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string", "description": "file or directory (default: the working directory)"},
                    "glob": {"type": "string", "description": "only files whose name matches, e.g. `*.rs`"},
                    "case_insensitive": {"type": "boolean"},
                    "max_results": {"type": "integer", "minimum": 1},
                    "include_ignored": {"type": "boolean", "description": "also search files .gitignore excludes"}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    fn describe(&self, call: &ToolCall, ctx: &ToolContext) -> ToolAction {
        match serde_json::from_str::<Args>(&call.arguments) {
            Ok(args) => ToolAction::Search {
                path: resolve(&ctx.settings.cwd, args.path.as_deref()),
                query: args.pattern,
            },
            Err(_) => ToolAction::other(&call.name, &call.arguments),
        }
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match serde_json::from_str(&call.arguments) {
                Ok(a) => a,
                Err(e) => return ToolResult::err(format!("invalid grep arguments: {e}")),
            };
            let regex = match RegexBuilder::new(&args.pattern)
                .case_insensitive(args.case_insensitive)
                .build()
            {
                Ok(r) => r,
                Err(e) => return ToolResult::err(format!("invalid pattern: {e}")),
            };
            let query = GrepQuery {
                regex,
                glob: args.glob,
                max_results: args.max_results.unwrap_or(DEFAULT_MAX_RESULTS),
                include_ignored: args.include_ignored,
            };
            let root = resolve(&ctx.settings.cwd, args.path.as_deref());
            let cwd = ctx.settings.cwd.clone();
            let cancel = ctx.cancel.clone();
            match blocking(move || search(&root, &cwd, &query, &cancel)).await {
                Ok(text) => ToolResult::ok(text),
                Err(e) => ToolResult::err(e),
            }
        })
    }
}

/// The bytes of the regular text file at `path`, or `None` for what the search skips: not
/// a regular file (any more), over [`MAX_FILE_BYTES`], unreadable, or binary. The entry may
/// have been swapped for a FIFO or a link since the walk saw it: the open descriptor
/// decides, and the read stops at the cap whatever the size said.
fn read_text_file(path: &Path) -> Option<Vec<u8>> {
    let (file, size) = open_regular(path, false).ok()?;
    if size > MAX_FILE_BYTES {
        return None;
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, MAX_FILE_BYTES + 1),
        &mut bytes,
    )
    .ok()?;
    (bytes.len() as u64 <= MAX_FILE_BYTES && !looks_binary(&bytes)).then_some(bytes)
}

/// Search `root`; paths in the output are relative to `cwd` where possible.
pub fn search(
    root: &Path,
    cwd: &Path,
    query: &GrepQuery,
    cancel: &CancellationToken,
) -> Result<String, String> {
    if !root.exists() {
        return Err(format!("{} does not exist", root.display()));
    }
    let mut out = String::new();
    let mut found = 0;
    let walk = WalkBuilder::new(root)
        .standard_filters(!query.include_ignored)
        .hidden(false)
        // A .gitignore counts in a directory that is not (yet) a git repository too.
        .require_git(false)
        .filter_entry(|e| !DEFAULT_IGNORES.contains(&e.file_name().to_string_lossy().as_ref()))
        .sort_by_file_name(std::cmp::Ord::cmp)
        .build();
    for entry in walk {
        if cancel.is_cancelled() {
            return Err("the search was cancelled".to_owned());
        }
        let Ok(entry) = entry else {
            continue;
        };
        // Symlinks are not followed, as before: the entry's own type decides.
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if query
            .glob
            .as_deref()
            .is_some_and(|g| !glob::matches(g, &name))
        {
            continue;
        }
        let Some(bytes) = read_text_file(path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let shown = path.strip_prefix(cwd).unwrap_or(path).display().to_string();
        for (i, line) in text.lines().enumerate() {
            if query.regex.is_match(line) {
                let line: String = line.chars().take(MAX_LINE_CHARS).collect();
                let _ = writeln!(out, "{shown}:{}:{line}", i + 1);
                found += 1;
                if found >= query.max_results {
                    let _ = writeln!(out, "[stopped after {found} matches]");
                    return Ok(out);
                }
            }
        }
    }
    if found == 0 {
        out.push_str("no matches\n");
    }
    Ok(out)
}
