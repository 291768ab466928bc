//! Where a live replay's tools run: a scratch copy of the recorded workspace (the default),
//! or the recorded workspace itself when the user asks for it. For a scratch copy, the
//! recorded workspace's path is rewritten to the copy's in what a call is given (its
//! arguments) and back in what it returns, so a call that names a file by its absolute
//! path acts on the copy, and its outcome is compared, and shown, as recorded.

use std::io;
use std::path::{Component, Path, PathBuf};

use rein_core::tools::{ToolCall, ToolResult};
use rein_protocol::ToolOutcome;

/// A scratch copy larger than this is refused: replaying a session recorded in a home
/// directory should not copy the home.
const MAX_COPY_BYTES: u64 = 2 << 30;

/// Where live tools run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveWorkspace {
    /// A fresh copy of the recorded workspace, removed afterwards.
    Scratch,
    /// The recorded workspace itself: the replay's commands change it.
    InPlace,
}

/// The scratch copy of one replay; the directory goes when it is dropped.
pub struct Scratch {
    pub rewrite: Rewrite,
    /// Kept for its `Drop`, which removes the copy.
    _dir: tempfile::TempDir,
}

impl Scratch {
    /// Copy `workspace` (blocking: call it off the async executor).
    pub fn copy_of(workspace: &Path) -> Result<Self, String> {
        let meta = std::fs::metadata(workspace).map_err(|e| {
            format!(
                "the recorded workspace {} cannot be read: {e}",
                workspace.display()
            )
        })?;
        if !meta.is_dir() {
            return Err(format!(
                "the recorded workspace {} is not a directory",
                workspace.display()
            ));
        }
        let dir = tempfile::Builder::new()
            .prefix("rein-replay-")
            .tempdir()
            .map_err(|e| format!("cannot make a scratch directory: {e}"))?;
        let root = dir
            .path()
            .canonicalize()
            .map_err(|e| format!("cannot make a scratch directory: {e}"))?
            .join(
                workspace
                    .file_name()
                    .unwrap_or_else(|| "workspace".as_ref()),
            );
        let mut copy = Copy {
            workspace,
            root: &root,
            budget: MAX_COPY_BYTES,
        };
        copy.tree(workspace, &root).map_err(|e| {
            format!(
                "cannot copy the recorded workspace {} to {}: {e}",
                workspace.display(),
                root.display()
            )
        })?;
        Ok(Self {
            rewrite: Rewrite::new(workspace, &root),
            _dir: dir,
        })
    }

    pub fn root(&self) -> &Path {
        &self.rewrite.scratch_root
    }
}

/// One copy being made: the recorded workspace, its copy's root, the bytes left to copy.
struct Copy<'a> {
    workspace: &'a Path,
    root: &'a Path,
    budget: u64,
}

impl Copy<'_> {
    /// Copy `from` into the new directory `to`: files with their permissions, symbolic
    /// links as links (never followed, so a link cannot pull in what is outside),
    /// directories recursively. Sockets and FIFOs are left out.
    fn tree(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::create_dir_all(to)?;
        std::fs::set_permissions(to, std::fs::metadata(from)?.permissions())?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let (src, dst) = (entry.path(), to.join(entry.file_name()));
            if kind.is_dir() {
                self.tree(&src, &dst)?;
            } else if kind.is_symlink() {
                let target = self.link_target(&src)?;
                std::os::unix::fs::symlink(target, &dst)?;
            } else if kind.is_file() {
                let len = entry.metadata()?.len();
                self.budget = self.budget.checked_sub(len).ok_or_else(|| {
                    io::Error::other(format!(
                        "it is larger than {} GiB (replay it with --in-place, or from a \
                         smaller workspace)",
                        MAX_COPY_BYTES >> 30
                    ))
                })?;
                std::fs::copy(&src, &dst)?;
            }
        }
        Ok(())
    }

    /// What the copy of the link `src` points to. A link out of the workspace is refused:
    /// in the copy it would let a live command (run where the recording says) reach the
    /// original tree or anything else by its path. An absolute link into the workspace
    /// points into the copy.
    fn link_target(&self, src: &Path) -> io::Result<PathBuf> {
        let target = std::fs::read_link(src)?;
        let dir = src.parent().unwrap_or(self.workspace);
        let Some(resolved) = lexical(&dir.join(&target)) else {
            return Err(outside(src, &target));
        };
        let Ok(inside) = resolved.strip_prefix(self.workspace) else {
            return Err(outside(src, &target));
        };
        Ok(if target.is_absolute() {
            self.root.join(inside)
        } else {
            target
        })
    }
}

fn outside(link: &Path, target: &Path) -> io::Error {
    io::Error::other(format!(
        "the link {} points outside the workspace (to {}); a live replay in a scratch copy \
         refuses it",
        link.display(),
        target.display()
    ))
}

/// `path` with `.` and `..` taken away without reading the disk (`None` if it climbs above
/// the root).
fn lexical(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

/// The recorded workspace's path and its copy's, and the rewriting between the two.
#[derive(Clone, Debug)]
pub struct Rewrite {
    recorded_root: PathBuf,
    scratch_root: PathBuf,
    recorded: Forms,
    scratch: Forms,
}

/// A path as it appears in plain text and inside a JSON string.
#[derive(Clone, Debug)]
struct Forms {
    plain: String,
    json: String,
}

impl Forms {
    fn of(path: &Path) -> Self {
        let plain = path.to_string_lossy().into_owned();
        let quoted = serde_json::to_string(&plain).unwrap_or_default();
        let json = quoted
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .unwrap_or(&plain)
            .to_owned();
        Self { plain, json }
    }
}

impl Rewrite {
    pub fn new(recorded: &Path, scratch: &Path) -> Self {
        Self {
            recorded_root: recorded.to_owned(),
            scratch_root: scratch.to_owned(),
            recorded: Forms::of(recorded),
            scratch: Forms::of(scratch),
        }
    }

    /// A recorded path inside the workspace, in the copy (`None`: it is outside).
    pub fn path_to_scratch(&self, path: &Path) -> Option<PathBuf> {
        let rest = path.strip_prefix(&self.recorded_root).ok()?;
        Some(self.scratch_root.join(rest))
    }

    /// A call as the model made it, with the workspace's path turned into the copy's.
    pub fn call_to_scratch(&self, mut call: ToolCall) -> ToolCall {
        call.arguments = swap_json_text(&call.arguments, &self.recorded, &self.scratch);
        call
    }

    /// What a call in the copy returned, as if it had run in the workspace.
    pub fn result_to_recorded(&self, result: ToolResult) -> ToolResult {
        let outcome = serde_json::to_value(&result.outcome)
            .ok()
            .map(|mut v| {
                swap_strings(&mut v, &self.scratch.plain, &self.recorded.plain);
                v
            })
            .and_then(|v| serde_json::from_value::<ToolOutcome>(v).ok())
            .unwrap_or(result.outcome);
        ToolResult {
            // The output may be JSON (a command's) or plain text: both forms are swapped.
            output: swap_json_text(&result.output, &self.scratch, &self.recorded),
            success: result.success,
            outcome,
        }
    }
}

fn swap_json_text(text: &str, from: &Forms, to: &Forms) -> String {
    let once = swap(text, &from.json, &to.json);
    if from.json == from.plain {
        once
    } else {
        swap(&once, &from.plain, &to.plain)
    }
}

fn swap_strings(value: &mut serde_json::Value, from: &str, to: &str) {
    match value {
        serde_json::Value::String(s) => *s = swap(s, from, to),
        serde_json::Value::Array(items) => {
            for item in items {
                swap_strings(item, from, to);
            }
        }
        serde_json::Value::Object(map) => {
            for item in map.values_mut() {
                swap_strings(item, from, to);
            }
        }
        _ => {}
    }
}

/// Replace `from` by `to` where it stands as a whole path or a path's leading part: not
/// in the middle of a longer name (`/w` is not rewritten in `/work` or `/a/w`).
fn swap(text: &str, from: &str, to: &str) -> String {
    if from.is_empty() || !text.contains(from) {
        return text.to_owned();
    }
    let name_char = |c: char| c.is_alphanumeric() || matches!(c, '.' | '_' | '-');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut before: Option<char> = None;
    while let Some(at) = rest.find(from) {
        let prev = rest[..at].chars().next_back().or(before);
        let after = rest[at + from.len()..].chars().next();
        let whole = !prev.is_some_and(name_char) && !after.is_some_and(name_char);
        out.push_str(&rest[..at]);
        out.push_str(if whole { to } else { from });
        before = from.chars().next_back();
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    out
}
