//! Watching the skill roots of some directories for changes (`skills/changed`): inotify
//! through `notify`, never polling. The roots that exist are watched with everything under
//! them; a root created later is watched from the next [`watch`] (the next `skills/list`).
//! What changed is not said: a change is an invalidation signal, and the client lists again.

use std::path::{Path, PathBuf};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::{roots, SkillsConfig};

/// The watch of some directories' skill roots; dropping it stops watching.
pub struct SkillsWatch {
    _watcher: RecommendedWatcher,
    /// The roots watched, in the order of [`roots`].
    pub roots: Vec<PathBuf>,
}

/// Why the skill roots cannot be watched.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("cannot watch the skill folders: {0}")]
    Init(#[source] notify::Error),
    #[error("cannot watch the skill folders: {0}")]
    Setup(String),
}

/// Watch the skill roots of `cwds`; `changed` runs (on the watcher's own thread) after
/// every change to a file or folder under one of them. A root that cannot be watched (too
/// many folders for the inotify limit, a permission) is left out; the others are watched.
pub fn watch(
    config: &SkillsConfig,
    cwds: &[PathBuf],
    changed: impl Fn() + Send + 'static,
) -> Result<SkillsWatch, WatchError> {
    let mut watched: Vec<PathBuf> = Vec::new();
    if config.enabled {
        for cwd in cwds {
            for root in roots(config, cwd) {
                if root.path.is_dir() && !watched.contains(&root.path) {
                    watched.push(root.path);
                }
            }
        }
    }
    let filter_roots = watched.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else {
            // The kernel's queue overflowed or a watch broke: something may have changed.
            changed();
            return;
        };
        if matters(&event.kind) && event.paths.iter().any(|p| under(&filter_roots, p)) {
            changed();
        }
    })
    .map_err(WatchError::Init)?;
    watched.retain(|root| watcher.watch(root, RecursiveMode::Recursive).is_ok());
    Ok(SkillsWatch {
        _watcher: watcher,
        roots: watched,
    })
}

/// Reads change nothing; everything else (create, write, rename, remove) may.
fn matters(kind: &EventKind) -> bool {
    !matches!(kind, EventKind::Access(_))
}

fn under(roots: &[PathBuf], path: &Path) -> bool {
    roots.iter().any(|r| path.starts_with(r))
}
