//! Fuzzy file search under a client's roots (the app-server's `fuzzyFileSearch`, the TUI's
//! `@` picker): the files and directories a walk that honours `.gitignore` (and `.ignore`,
//! and skips hidden entries) finds, scored against the query by `nucleo-matcher`, the
//! matcher of Codex's own file search, so rankings and highlighted positions agree.

use std::path::{Path, PathBuf};

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};

/// Entries visited per search at most: a root like `/` is searched in bounded time.
pub const MAX_VISITED: usize = 50_000;
/// Matches returned at most, best first.
pub const MAX_MATCHES: usize = 50;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileMatch {
    pub root: PathBuf,
    /// Relative to `root`, `/`-separated.
    pub path: String,
    pub is_dir: bool,
    pub score: u32,
    /// Positions (in characters of `path`) of the query's characters.
    pub indices: Vec<u32>,
}

/// Search `roots` for `query` on a blocking thread.
pub async fn fuzzy_file_search(query: String, roots: Vec<PathBuf>) -> Vec<FileMatch> {
    tokio::task::spawn_blocking(move || search(&query, &roots))
        .await
        .unwrap_or_default()
}

/// The best [`MAX_MATCHES`] matches of `query` under `roots`; none for a blank query.
pub fn search(query: &str, roots: &[PathBuf]) -> Vec<FileMatch> {
    if query.trim().is_empty() {
        return Vec::new();
    }
    let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let mut found = Vec::new();
    let mut visited = 0;
    let mut buf = Vec::new();
    for root in roots {
        let walk = ignore::WalkBuilder::new(root)
            // `.gitignore` counts in a directory that is not (yet) a git checkout too.
            .require_git(false)
            .build();
        for entry in walk.flatten() {
            visited += 1;
            if visited > MAX_VISITED {
                break;
            }
            let Some(path) = relative(root, entry.path()) else {
                continue;
            };
            let mut indices = Vec::new();
            let haystack = Utf32Str::new(&path, &mut buf);
            let Some(score) = pattern.indices(haystack, &mut matcher, &mut indices) else {
                continue;
            };
            indices.sort_unstable();
            indices.dedup();
            found.push(FileMatch {
                root: root.clone(),
                path,
                is_dir: entry.file_type().is_some_and(|t| t.is_dir()),
                score,
                indices,
            });
        }
    }
    found.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.path.cmp(&b.path)));
    found.truncate(MAX_MATCHES);
    found
}

/// `path` relative to `root` as text, `None` for the root itself.
fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let text = rel.to_str()?;
    (!text.is_empty()).then(|| text.to_owned())
}
