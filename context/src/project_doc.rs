//! `AGENTS.md` as Codex assembles it (codex-rs `core/src/agents_md.rs` and
//! `instructions/user_instructions.rs`):
//!
//! 1. The global file: `AGENTS.override.md`, else `AGENTS.md`, in each global directory
//!    (`$REIN_HOME`, and `$CODEX_HOME` when `[project_doc] read_codex_home = true`); its
//!    text trimmed, skipped when empty.
//! 2. The project root: the nearest ancestor of the (canonical) cwd holding one of
//!    `project_root_markers` (default `.git`, file or directory); none found, or no markers,
//!    means only the cwd is searched.
//! 3. From the root down to the cwd, each directory gives at most one file: the first of
//!    `AGENTS.override.md`, `AGENTS.md`, then `project_doc_fallback_filenames`, that is a
//!    regular file (symlinks followed).
//! 4. The project's files are read root first, together at most `project_doc_max_bytes`
//!    (32 KiB; 0 turns them off; the global file does not count); a file past what is left is
//!    cut to it (in bytes, as Codex does) and the cut is reported as a warning; a file that
//!    is only whitespace is left out. They are joined by a blank line.
//! 5. Global text, then `\n\n--- project-doc ---\n\n`, then the project's text; and the
//!    whole block is sent as one user message
//!    `# AGENTS.md instructions for <cwd>\n\n<INSTRUCTIONS>\n…\n</INSTRUCTIONS>`.
//!
//! Blocking file I/O: callers run [`assemble`] off the async executor.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rein_protocol::{ContextSource, ContextSourceKind};

use crate::hash::sha256_hex;

/// Codex's default `project_doc_max_bytes`.
pub const DEFAULT_MAX_BYTES: usize = 32 * 1024;
pub const OVERRIDE_FILENAME: &str = "AGENTS.override.md";
pub const DEFAULT_FILENAME: &str = "AGENTS.md";
/// Between the global file and the project's files.
pub const PROJECT_DOC_SEPARATOR: &str = "\n\n--- project-doc ---\n\n";
/// How the message begins (Codex's `USER_INSTRUCTIONS_PREFIX`).
pub const MESSAGE_PREFIX: &str = "# AGENTS.md instructions for ";

/// How project instructions are found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectDocConfig {
    /// Off: no `AGENTS.md` at all (`rein exec --no-project-doc`).
    pub enabled: bool,
    /// Directories whose `AGENTS.override.md` / `AGENTS.md` is the global file, in order.
    pub global_dirs: Vec<PathBuf>,
    /// Bytes of the project's files the message may hold; 0: none are read.
    pub max_bytes: usize,
    pub fallback_filenames: Vec<String>,
    /// What marks the project root; empty: only the cwd is searched.
    pub root_markers: Vec<String>,
}

impl Default for ProjectDocConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            global_dirs: Vec::new(),
            max_bytes: DEFAULT_MAX_BYTES,
            fallback_filenames: Vec::new(),
            root_markers: vec![".git".into()],
        }
    }
}

/// The assembled instructions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectDoc {
    /// The message's text (header included); `None` when there is nothing to say.
    pub message: Option<String>,
    pub sources: Vec<ContextSource>,
    /// What was cut or could not be read, in words for the user.
    pub warnings: Vec<String>,
}

/// Assemble the instructions for a thread in `cwd`. I/O failures become warnings: a
/// thread starts with what could be read.
pub fn assemble(config: &ProjectDocConfig, cwd: &Path) -> ProjectDoc {
    let mut doc = ProjectDoc::default();
    if !config.enabled {
        return doc;
    }
    let mut global = Vec::new();
    for dir in &config.global_dirs {
        if let Some((text, source)) = global_file(dir) {
            global.push(text);
            doc.sources.push(source);
        }
    }
    let project = match project_paths(config, cwd) {
        Ok(paths) => read_project_files(config.max_bytes, &paths, &mut doc),
        Err(e) => {
            doc.warnings
                .push(format!("could not look for AGENTS.md files: {e}"));
            None
        }
    };
    let mut text = global.join("\n\n");
    if let Some(project) = project {
        if !text.is_empty() {
            text.push_str(PROJECT_DOC_SEPARATOR);
        }
        text.push_str(&project);
    }
    if !text.is_empty() {
        doc.message = Some(format!(
            "{MESSAGE_PREFIX}{}\n\n<INSTRUCTIONS>\n{text}\n</INSTRUCTIONS>",
            cwd.display()
        ));
    }
    doc
}

/// The global file of `dir`: the override if it has text, else `AGENTS.md`.
fn global_file(dir: &Path) -> Option<(String, ContextSource)> {
    for name in [OVERRIDE_FILENAME, DEFAULT_FILENAME] {
        let path = dir.join(name);
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            continue;
        }
        let source = ContextSource {
            path,
            kind: ContextSourceKind::GlobalDoc,
            bytes: trimmed.len() as u64,
            truncated_from: None,
            sha256: sha256_hex(text.as_bytes()),
        };
        return Some((trimmed.to_owned(), source));
    }
    None
}

/// The project's candidate files, root first.
pub fn project_paths(config: &ProjectDocConfig, cwd: &Path) -> io::Result<Vec<PathBuf>> {
    if config.max_bytes == 0 {
        return Ok(Vec::new());
    }
    let dir = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
    let root = project_root(&dir, &config.root_markers)?;
    let mut dirs: Vec<&Path> = match &root {
        Some(root) => dir
            .ancestors()
            .take_while(|a| a.starts_with(root))
            .collect(),
        None => vec![dir.as_path()],
    };
    dirs.reverse();
    let names = candidate_names(&config.fallback_filenames);
    let mut found = Vec::new();
    for d in dirs {
        for name in &names {
            let candidate = d.join(name);
            match std::fs::metadata(&candidate) {
                Ok(md) if md.is_file() => {
                    found.push(candidate);
                    break;
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("{}: {e}", candidate.display()),
                    ))
                }
            }
        }
    }
    Ok(found)
}

/// The nearest ancestor of `dir` (itself included) that holds a marker.
pub fn project_root(dir: &Path, markers: &[String]) -> io::Result<Option<PathBuf>> {
    if markers.is_empty() {
        return Ok(None);
    }
    for ancestor in dir.ancestors() {
        for marker in markers {
            match std::fs::metadata(ancestor.join(marker)) {
                Ok(_) => return Ok(Some(ancestor.to_owned())),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                // Codex gives up on the whole search here; so does rein, with a warning.
                Err(e) => return Err(e),
            }
        }
    }
    Ok(None)
}

fn candidate_names(fallbacks: &[String]) -> Vec<&str> {
    let mut names = vec![OVERRIDE_FILENAME, DEFAULT_FILENAME];
    for name in fallbacks {
        if !name.is_empty() && !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    names
}

/// Read `paths` within `max_bytes`, recording each file read and each cut.
fn read_project_files(max_bytes: usize, paths: &[PathBuf], doc: &mut ProjectDoc) -> Option<String> {
    let mut remaining = max_bytes as u64;
    let mut parts = Vec::new();
    for path in paths {
        if remaining == 0 {
            doc.warnings.push(format!(
                "{} is not sent to the model: the project's AGENTS.md files already fill \
                 project_doc_max_bytes ({max_bytes} bytes)",
                path.display()
            ));
            continue;
        }
        let (data, size) = match read_prefix(path, remaining) {
            Ok(read) => read,
            Err(e) => {
                doc.warnings
                    .push(format!("could not read {}: {e}", path.display()));
                continue;
            }
        };
        let truncated = size > remaining;
        if truncated {
            doc.warnings.push(format!(
                "{} is {size} bytes; only its first {remaining} are sent to the model \
                 (project_doc_max_bytes is {max_bytes})",
                path.display()
            ));
        }
        let text = String::from_utf8_lossy(&data).into_owned();
        if text.trim().is_empty() {
            continue;
        }
        remaining = remaining.saturating_sub(data.len() as u64);
        doc.sources.push(ContextSource {
            path: path.clone(),
            kind: ContextSourceKind::ProjectDoc,
            bytes: data.len() as u64,
            truncated_from: truncated.then_some(size),
            sha256: sha256_hex(&data),
        });
        parts.push(text);
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// The first `limit` bytes of a file, and its size.
fn read_prefix(path: &Path, limit: u64) -> io::Result<(Vec<u8>, u64)> {
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let mut data = Vec::with_capacity(size.min(limit) as usize);
    file.take(limit).read_to_end(&mut data)?;
    Ok((data, size))
}

#[cfg(test)]
#[path = "project_doc_tests.rs"]
mod tests;
