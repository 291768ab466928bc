//! Places inside the writable roots that stay read-only: every Git repository's `.git`
//! (nested ones too: `workspace/sub/.git`), and where a `.git` is a file (`gitdir: …`, as
//! in worktrees and submodules) the directory it names and that directory's `commondir`.
//! A command that could write there could plant hooks or config that the user's own git
//! runs later, outside the sandbox.
//!
//! Finding them walks the roots breadth-first, without following symlinks and without
//! entering a `.git`, over at most [`WALK_BUDGET`] directories per root, so the cost is
//! bounded on huge trees; repositories deeper than the walk reaches are not protected (the
//! README says so).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// Directories visited per writable root.
pub const WALK_BUDGET: usize = 20_000;

/// Longest `.git` file or `commondir` file read.
const POINTER_FILE_LIMIT: u64 = 4096;

/// The read-only places under `roots` (resolved, deduplicated, sorted).
pub fn read_only_places(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut places = Vec::new();
    for root in roots {
        walk(root, WALK_BUDGET, &mut places);
    }
    let inside = |p: &PathBuf| roots.iter().any(|r| p.starts_with(r));
    let mut places: Vec<PathBuf> = places.into_iter().filter(inside).collect();
    places.sort();
    places.dedup();
    // A place inside another is already covered by it.
    let mut kept: Vec<PathBuf> = Vec::new();
    for place in places {
        if !kept.iter().any(|k| place.starts_with(k)) {
            kept.push(place);
        }
    }
    kept
}

fn walk(root: &Path, budget: usize, places: &mut Vec<PathBuf>) {
    let mut queue = VecDeque::from([root.to_path_buf()]);
    let mut visited = 0;
    while let Some(dir) = queue.pop_front() {
        if visited == budget {
            tracing::debug!(
                root = %root.display(),
                "stopped looking for nested .git after {budget} directories"
            );
            return;
        }
        visited += 1;
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if entry.file_name() == ".git" {
                if kind.is_dir() {
                    places.push(path);
                } else if kind.is_file() {
                    places.push(path.clone());
                    places.extend(gitdir_targets(&path));
                } else if kind.is_symlink() {
                    if let Ok(target) = std::fs::canonicalize(&path) {
                        places.push(target);
                    }
                }
            } else if kind.is_dir() {
                queue.push_back(path);
            }
        }
    }
}

/// What a `.git` file points at: its `gitdir:` directory, and that directory's
/// `commondir` (the main repository of a worktree).
fn gitdir_targets(git_file: &Path) -> Vec<PathBuf> {
    let base = git_file.parent().unwrap_or(Path::new("/"));
    let Some(line) = read_small(git_file) else {
        return Vec::new();
    };
    let Some(target) = line.strip_prefix("gitdir:").map(str::trim) else {
        return Vec::new();
    };
    let Ok(gitdir) = std::fs::canonicalize(base.join(target)) else {
        return Vec::new();
    };
    let mut out = vec![gitdir.clone()];
    if let Some(common) = read_small(&gitdir.join("commondir")) {
        if let Ok(common) = std::fs::canonicalize(gitdir.join(common.trim())) {
            out.push(common);
        }
    }
    out
}

fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(POINTER_FILE_LIMIT)
        .read_to_string(&mut text)
        .ok()?;
    Some(text.lines().next().unwrap_or_default().to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn nested_repositories_and_gitdir_targets_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        for d in [
            ".git",
            "sub/.git",
            "a/b/c/.git",
            "vendor/.git/worktrees/wt",
            "src",
        ] {
            std::fs::create_dir_all(ws.join(d)).unwrap();
        }
        std::fs::create_dir_all(ws.join("wt")).unwrap();
        std::fs::write(
            ws.join("wt/.git"),
            format!(
                "gitdir: {}\n",
                ws.join("vendor/.git/worktrees/wt").display()
            ),
        )
        .unwrap();
        std::fs::write(ws.join("vendor/.git/worktrees/wt/commondir"), "../..\n").unwrap();
        // A worktree whose repository lives outside the roots: nothing to add for it.
        std::fs::create_dir_all(ws.join("ext")).unwrap();
        std::fs::write(ws.join("ext/.git"), "gitdir: /nonexistent/repo\n").unwrap();
        let places = read_only_places(std::slice::from_ref(&ws));
        assert_eq!(
            places,
            vec![
                ws.join(".git"),
                ws.join("a/b/c/.git"),
                ws.join("ext/.git"),
                ws.join("sub/.git"),
                ws.join("vendor/.git"),
                ws.join("wt/.git"),
            ]
        );
    }

    #[test]
    fn the_walk_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join("a/b/.git")).unwrap();
        let mut found = Vec::new();
        walk(&ws, 2, &mut found);
        assert!(found.is_empty(), "{found:?}");
        walk(&ws, 3, &mut found);
        assert_eq!(found, vec![ws.join("a/b/.git")]);
    }
}
