//! Which repository a directory is in, as a memory's key: the nearest ancestor with a
//! `.git` (a directory, or a worktree's `gitdir:` file), and the `origin` remote's URL
//! from its config. A directory outside any repository is its own key.

use std::path::{Path, PathBuf};

use rein_protocol::RepoKey;

use crate::io_guard::assert_off_executor;

/// The repository key of `cwd`.
pub fn repo_of(cwd: &Path) -> RepoKey {
    assert_off_executor("finding a repository");
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    for dir in cwd.ancestors() {
        let dot_git = dir.join(".git");
        if let Some(git_dir) = git_dir_of(&dot_git) {
            return RepoKey {
                root: dir.to_path_buf(),
                remote: origin_url(&git_dir),
            };
        }
    }
    RepoKey {
        root: cwd,
        remote: None,
    }
}

/// The git directory `.git` names: itself, or where a worktree's `gitdir:` line points
/// (then its common directory, which holds the config).
fn git_dir_of(dot_git: &Path) -> Option<PathBuf> {
    let meta = std::fs::metadata(dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git.to_path_buf());
    }
    let text = std::fs::read_to_string(dot_git).ok()?;
    let target = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let base = dot_git.parent().unwrap_or(Path::new("/"));
    let git_dir = base.join(target);
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(common) => Some(git_dir.join(common.trim())),
        Err(_) => Some(git_dir),
    }
}

/// The `url` of `[remote "origin"]` in the repository's config.
fn origin_url(git_dir: &Path) -> Option<String> {
    let config = std::fs::read_to_string(git_dir.join("config")).ok()?;
    let mut in_origin = false;
    for line in config.lines().map(str::trim) {
        if line.starts_with('[') {
            in_origin = line.replace(' ', "") == "[remote\"origin\"]";
            continue;
        }
        if !in_origin {
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            if key.trim() == "url" {
                return Some(value.trim().to_owned());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_is_its_root_and_origin_and_a_plain_directory_itself() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let repo = root.join("a");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::fs::write(
            repo.join(".git/config"),
            "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = x\n[remote \"origin\"]\n\turl = git@example.com:a.git\n",
        )
        .unwrap();
        assert_eq!(
            repo_of(&repo.join("src/deep")),
            RepoKey {
                root: repo.clone(),
                remote: Some("git@example.com:a.git".into())
            }
        );
        let plain = root.join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        assert_eq!(
            repo_of(&plain),
            RepoKey {
                root: plain,
                remote: None
            }
        );
    }
}
