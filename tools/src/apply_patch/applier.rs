//! Applies a parsed patch atomically. Staging resolves every path once (following
//! symlinks, as the policy engine does when it judges the paths), opens each target's
//! directory without following any symlink ([`super::fs`]), and computes every resulting
//! file in memory (later operations see the results of earlier ones); nothing touches the
//! disk until every hunk of every file has matched. Committing writes each new content to
//! a temp file beside its target, then renames them all into place and removes deleted
//! files, all relative to the directories opened at staging; if anything fails, what was
//! already done is restored from the staged originals.
//!
//! So the paths the policy engine is shown are the paths written: a symlink that changes
//! after staging cannot redirect a write, only make the patch fail.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{FileType, Mode};

use super::diff::unified_diff;
use super::error::PatchError;
use super::fs::{is_symlink_on_path, Dir, Location, ReadError, MAX_PATCHED_FILE_BYTES};
use super::matcher;
use super::parser::{FileOp, Hunk, Patch};
use crate::policy::paths;

/// What happened to one file, for the model and the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// The path as the patch named it.
    pub path: PathBuf,
    pub kind: ChangeKind,
    /// Unified diff of this operation.
    pub diff: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    Add,
    Delete,
    Update { move_to: Option<PathBuf> },
}

/// A patch whose results are computed and ready to be written.
#[derive(Debug)]
pub struct StagedPatch {
    /// Final content per resolved absolute path; `None` deletes.
    writes: BTreeMap<PathBuf, Option<String>>,
    /// What was on disk before (`None` = absent), for every path in `writes`.
    originals: BTreeMap<PathBuf, Option<String>>,
    /// Where each path in `writes` lives, pinned at staging.
    locations: BTreeMap<PathBuf, Location>,
    pub changes: Vec<FileChange>,
}

impl StagedPatch {
    /// Every resolved absolute path the patch writes or deletes.
    pub fn touched_paths(&self) -> impl Iterator<Item = &Path> {
        self.writes.keys().map(PathBuf::as_path)
    }
}

/// Resolve a patch path against the working directory: absolute, without `.`, `..` or
/// symlinks, as the kernel would resolve it now. A file that is a symlink resolves to its
/// target (editing a linked file edits the file it links to) unless `keep_last` (a delete
/// names the entry itself, and a link is refused).
pub fn resolve(cwd: &Path, path: &Path, keep_last: bool) -> Result<PathBuf, PatchError> {
    let unresolvable = || PatchError::Unresolvable {
        path: path.to_path_buf(),
    };
    let joined = cwd.join(path);
    if keep_last {
        let name = match joined.components().next_back() {
            Some(std::path::Component::Normal(name)) => name.to_owned(),
            _ => return Err(unresolvable()),
        };
        let parent = joined.parent().ok_or_else(unresolvable)?;
        let parent = paths::resolve(cwd, parent).ok_or_else(unresolvable)?;
        return Ok(parent.join(name));
    }
    let resolved = paths::resolve(cwd, &joined).ok_or_else(unresolvable)?;
    if resolved.file_name().is_none() {
        return Err(unresolvable());
    }
    Ok(resolved)
}

/// Compute every file's new content. Reads the disk; writes nothing.
pub fn stage(patch: &Patch, cwd: &Path) -> Result<StagedPatch, PatchError> {
    let mut staged = StagedPatch {
        writes: BTreeMap::new(),
        originals: BTreeMap::new(),
        locations: BTreeMap::new(),
        changes: Vec::new(),
    };
    for op in &patch.ops {
        match op {
            FileOp::Add { path, contents } => {
                let abs = staged.locate(cwd, path, false)?;
                let before = staged.current(&abs)?;
                staged.set(abs, Some(contents.clone()))?;
                staged.changes.push(FileChange {
                    path: path.clone(),
                    kind: ChangeKind::Add,
                    diff: unified_diff(path, before.as_deref(), Some(contents)),
                });
            }
            FileOp::Delete { path } => {
                let abs = staged.locate(cwd, path, true)?;
                let before = staged.current(&abs)?.ok_or_else(|| PatchError::NotFound {
                    path: path.clone(),
                    action: "delete",
                })?;
                staged.set(abs, None)?;
                staged.changes.push(FileChange {
                    path: path.clone(),
                    kind: ChangeKind::Delete,
                    diff: unified_diff(path, Some(&before), None),
                });
            }
            FileOp::Update {
                path,
                move_to,
                hunks,
            } => {
                let abs = staged.locate(cwd, path, false)?;
                let before = staged.current(&abs)?.ok_or_else(|| PatchError::NotFound {
                    path: path.clone(),
                    action: "update",
                })?;
                let after = apply_hunks(path, &before, hunks)?;
                match move_to {
                    Some(dest) => {
                        let dest_abs = staged.locate(cwd, dest, false)?;
                        staged.set(abs, None)?;
                        staged.set(dest_abs, Some(after.clone()))?;
                    }
                    None => staged.set(abs, Some(after.clone()))?,
                }
                staged.changes.push(FileChange {
                    path: path.clone(),
                    kind: ChangeKind::Update {
                        move_to: move_to.clone(),
                    },
                    diff: unified_diff(
                        move_to.as_ref().unwrap_or(path),
                        Some(&before),
                        Some(&after),
                    ),
                });
            }
        }
    }
    Ok(staged)
}

impl StagedPatch {
    /// Resolve `path` and pin its directory (once per resolved path); returns the resolved
    /// path, the key of everything else.
    fn locate(&mut self, cwd: &Path, path: &Path, keep_last: bool) -> Result<PathBuf, PatchError> {
        let abs = resolve(cwd, path, keep_last)?;
        if !self.locations.contains_key(&abs) {
            let location = Location::pin(&abs).map_err(|source| {
                if is_symlink_on_path(&source) {
                    PatchError::SymlinkRace { path: abs.clone() }
                } else {
                    PatchError::Read {
                        path: abs.clone(),
                        source,
                    }
                }
            })?;
            // Deleting names the link itself, which is not a file to patch (and could
            // not be restored as one).
            let is_link = location
                .dir()
                .and_then(|d| d.kind(&location.name).ok().flatten())
                .is_some_and(|(kind, _)| kind == FileType::Symlink);
            if keep_last && is_link {
                return Err(PatchError::NotRegular {
                    path: path.to_path_buf(),
                    kind: "a symlink",
                });
            }
            self.locations.insert(abs.clone(), location);
        }
        Ok(abs)
    }

    /// The content of `abs` as earlier operations of this patch left it.
    fn current(&mut self, abs: &Path) -> Result<Option<String>, PatchError> {
        if let Some(content) = self.writes.get(abs) {
            return Ok(content.clone());
        }
        self.read_original(abs)
    }

    fn set(&mut self, abs: PathBuf, content: Option<String>) -> Result<(), PatchError> {
        if !self.originals.contains_key(&abs) {
            let original = self.read_original(&abs)?;
            self.originals.insert(abs.clone(), original);
        }
        self.writes.insert(abs, content);
        Ok(())
    }

    fn location(&self, abs: &Path) -> &Location {
        // Every path in `writes` was located first.
        &self.locations[abs]
    }

    fn read_original(&self, abs: &Path) -> Result<Option<String>, PatchError> {
        let location = self.location(abs);
        // A directory still to be created holds no file yet.
        let Some(dir) = location.dir() else {
            return Ok(None);
        };
        let bytes = match dir.read(&location.name, MAX_PATCHED_FILE_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(None),
            Err(ReadError::Symlink) => {
                return Err(PatchError::SymlinkRace {
                    path: abs.to_path_buf(),
                })
            }
            Err(ReadError::NotRegular(kind)) => {
                return Err(PatchError::NotRegular {
                    path: abs.to_path_buf(),
                    kind,
                })
            }
            Err(ReadError::TooLarge { size, max }) => {
                return Err(PatchError::TooLarge {
                    path: abs.to_path_buf(),
                    size,
                    max,
                })
            }
            Err(ReadError::Io(source)) if source.kind() == std::io::ErrorKind::NotADirectory => {
                return Ok(None)
            }
            Err(ReadError::Io(source)) => {
                return Err(PatchError::Read {
                    path: abs.to_path_buf(),
                    source,
                })
            }
        };
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| PatchError::NotText {
                path: abs.to_path_buf(),
            })
    }

    /// Write everything. On failure, files already changed are restored.
    pub fn commit(self) -> Result<Vec<FileChange>, PatchError> {
        let mut temps: Vec<Temp> = Vec::new();
        let mut created_dirs: Vec<(Dir, OsString)> = Vec::new();
        for (path, content) in &self.writes {
            let Some(content) = content else { continue };
            match write_temp(self.location(path), path, content, &mut created_dirs) {
                Ok(temp) => temps.push(temp),
                Err(source) => {
                    discard(&temps, &created_dirs);
                    return Err(write_error(path, source));
                }
            }
        }
        let mut done: Vec<&PathBuf> = Vec::new();
        let renames = temps.iter().map(|t| (&t.target, Some(t)));
        let deletes = self
            .writes
            .iter()
            .filter(|(_, c)| c.is_none())
            .map(|(path, _)| (path, None));
        for (path, temp) in renames.chain(deletes) {
            let result = match temp {
                Some(temp) => temp.dir.rename(&temp.name, &temp.final_name),
                None => self.remove(path),
            };
            if let Err(source) = result {
                let pending: Vec<Temp> = temps
                    .iter()
                    .filter(|t| !done.contains(&&t.target))
                    .cloned()
                    .collect();
                discard(&pending, &[]);
                let unrestored = self.restore(&done);
                if unrestored.is_empty() {
                    discard(&[], &created_dirs);
                    return Err(write_error(path, source));
                }
                return Err(PatchError::PartiallyApplied {
                    path: path.clone(),
                    source,
                    unrestored,
                });
            }
            done.push(path);
        }
        Ok(self.changes)
    }

    fn remove(&self, path: &Path) -> std::io::Result<()> {
        let location = self.location(path);
        match location.current_dir()? {
            Some(dir) => dir.remove(&location.name),
            None => Err(std::io::ErrorKind::NotFound.into()),
        }
    }

    /// Put the original content back for `paths`; returns those that could not be.
    fn restore(&self, paths: &[&PathBuf]) -> Vec<PathBuf> {
        paths
            .iter()
            .filter(|p| {
                let result = match self.originals.get(**p) {
                    // The directory exists (the change being undone was made in it).
                    Some(Some(content)) => {
                        write_temp(self.location(p), p, content, &mut Vec::new())
                            .and_then(|t| t.dir.rename(&t.name, &t.final_name))
                    }
                    _ => self.remove(p),
                };
                result.is_err()
            })
            .map(|p| (*p).clone())
            .collect()
    }
}

/// A new content written beside its target, waiting to be renamed over it.
#[derive(Clone, Debug)]
struct Temp {
    dir: Dir,
    name: OsString,
    final_name: OsString,
    target: PathBuf,
}

fn write_error(path: &Path, source: std::io::Error) -> PatchError {
    if is_symlink_on_path(&source) {
        return PatchError::SymlinkRace {
            path: path.to_path_buf(),
        };
    }
    PatchError::Write {
        path: path.to_path_buf(),
        source,
    }
}

fn write_temp(
    location: &Location,
    target: &Path,
    content: &str,
    created: &mut Vec<(Dir, OsString)>,
) -> std::io::Result<Temp> {
    let dir = location.ensure_dir(created)?;
    let name = location.name.to_string_lossy();
    // Unique per process and per write, so concurrent patches never share a temp file.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let temp = OsString::from(format!(".{name}.rein-patch-{}-{n}.tmp", std::process::id()));
    // Keep the mode of the file being replaced (e.g. an executable script).
    let mode = match dir.kind(&location.name)? {
        Some((FileType::RegularFile, mode)) => Some(mode & Mode::from_raw_mode(0o7777)),
        _ => None,
    };
    dir.create(&temp, content.as_bytes(), mode)?;
    Ok(Temp {
        dir,
        name: temp,
        final_name: location.name.clone(),
        target: target.to_path_buf(),
    })
}

fn discard(temps: &[Temp], created_dirs: &[(Dir, OsString)]) {
    for temp in temps {
        let _ = temp.dir.remove(&temp.name);
    }
    for (parent, name) in created_dirs.iter().rev() {
        let _ = parent.rmdir(name);
    }
}

/// Apply the hunks of one Update to `content`.
pub fn apply_hunks(path: &Path, content: &str, hunks: &[Hunk]) -> Result<String, PatchError> {
    let mut lines: Vec<String> = content.split('\n').map(str::to_owned).collect();
    if content.ends_with('\n') || content.is_empty() {
        lines.pop();
    }
    let mut cursor = 0;
    let mut edits: Vec<(usize, usize, &[String])> = Vec::new();
    for hunk in hunks {
        if let Some(anchor) = &hunk.anchor {
            let at = matcher::find(&lines, std::slice::from_ref(anchor), cursor, false)
                .ok_or_else(|| PatchError::AnchorNotFound {
                    path: path.to_path_buf(),
                    patch_line: hunk.patch_line,
                    anchor: anchor.clone(),
                })?;
            cursor = at + 1;
        }
        if hunk.old.is_empty() {
            // A pure addition goes after its anchor, or at the end of the file.
            let at = if hunk.anchor.is_some() {
                cursor
            } else {
                lines.len()
            };
            edits.push((at, 0, &hunk.new));
            continue;
        }
        let mut old: &[String] = &hunk.old;
        let mut new: &[String] = &hunk.new;
        let mut found = matcher::find(&lines, old, cursor, hunk.end_of_file);
        // A trailing empty context line often stands for the file's final newline.
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = matcher::find(&lines, old, cursor, hunk.end_of_file);
        }
        let at = found.ok_or_else(|| PatchError::HunkMismatch {
            path: path.to_path_buf(),
            patch_line: hunk.patch_line,
            from_line: cursor + 1,
            expected: hunk.old.join("\n"),
        })?;
        edits.push((at, old.len(), new));
        cursor = at + old.len();
    }
    // A pure addition without an anchor lands at the end even when later hunks edit
    // earlier lines: apply from the bottom up so no edit shifts another's position.
    edits.sort_by_key(|(at, _, _)| *at);
    for (at, len, new) in edits.into_iter().rev() {
        lines.splice(at..at + len, new.iter().cloned());
    }
    let mut out = lines.join("\n");
    if !lines.is_empty() {
        out.push('\n');
    }
    Ok(out)
}
