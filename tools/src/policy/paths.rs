//! Where writes may land. A path is resolved the way the kernel would resolve it —
//! component by component, following every symlink (even a dangling one) and applying
//! `..` to the resolved parent — before it is compared with the writable roots, so
//! neither `..` nor a link can smuggle a write outside them.

use std::path::{Component, Path, PathBuf};

use rein_protocol::{SandboxOptions, SandboxPolicy};

use super::protected;

/// Symlink hops followed before a path is treated as unresolvable (the kernel's limit).
const MAX_LINK_HOPS: usize = 40;

/// Resolve `path` (relative to `cwd`) to an absolute path with no symlinks, `.` or `..`,
/// whether or not it exists. `None` when a symlink loop exceeds the hop limit.
pub fn resolve(cwd: &Path, path: &Path) -> Option<PathBuf> {
    let mut hops = 0;
    let joined = cwd.join(path);
    // A relative cwd is relative to the process's own directory, as the kernel sees it.
    let absolute = if joined.is_absolute() {
        joined
    } else {
        std::env::current_dir().ok()?.join(joined)
    };
    resolve_inner(&absolute, &mut hops)
}

fn resolve_inner(path: &Path, hops: &mut usize) -> Option<PathBuf> {
    let mut resolved = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) => resolved = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                let candidate = resolved.join(name);
                match std::fs::read_link(&candidate) {
                    Ok(target) => {
                        *hops += 1;
                        if *hops > MAX_LINK_HOPS {
                            return None;
                        }
                        // A relative target is relative to the link's directory.
                        resolved = resolve_inner(&resolved.join(target), hops)?;
                    }
                    Err(_) => resolved = candidate,
                }
            }
        }
    }
    Some(resolved)
}

/// The writable roots of a sandbox policy and the read-only places inside them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WritableRoots {
    /// Resolved roots; empty under read-only.
    pub roots: Vec<PathBuf>,
    /// Resolved paths under a root that stay read-only (every `.git`, see
    /// [`protected`]).
    pub read_only: Vec<PathBuf>,
    /// Everything is writable (danger-full-access).
    pub unrestricted: bool,
}

impl WritableRoots {
    /// The roots for `policy` working in `cwd`: cwd, the extra roots, `$TMPDIR` and `/tmp`
    /// (unless excluded) under workspace-write; nothing under read-only; everything under
    /// full access. `/` is never a root (it would leave nothing read-only).
    pub fn for_policy(policy: SandboxPolicy, cwd: &Path, options: &SandboxOptions) -> Self {
        match policy {
            SandboxPolicy::DangerFullAccess => Self {
                roots: Vec::new(),
                read_only: Vec::new(),
                unrestricted: true,
            },
            SandboxPolicy::ReadOnly => Self {
                roots: Vec::new(),
                read_only: Vec::new(),
                unrestricted: false,
            },
            SandboxPolicy::WorkspaceWrite => {
                let tmpdir = std::env::var_os("TMPDIR")
                    .filter(|_| !options.exclude_tmpdir_env_var)
                    .map(PathBuf::from);
                let slash_tmp = (!options.exclude_slash_tmp).then(|| PathBuf::from("/tmp"));
                let mut roots: Vec<PathBuf> = std::iter::once(cwd.to_path_buf())
                    .chain(options.writable_roots.iter().map(|r| cwd.join(r)))
                    .chain(tmpdir)
                    .chain(slash_tmp)
                    .filter_map(|r| resolve(cwd, &r))
                    .filter(|r| r != Path::new("/"))
                    .collect();
                roots.sort();
                roots.dedup();
                let read_only = protected::read_only_places(&roots);
                Self {
                    roots,
                    read_only,
                    unrestricted: false,
                }
            }
        }
    }

    /// Whether a write to `path` (relative to `cwd`) is allowed.
    pub fn allows_write(&self, cwd: &Path, path: &Path) -> bool {
        if self.unrestricted {
            return true;
        }
        let Some(resolved) = resolve(cwd, path) else {
            return false;
        };
        self.roots.iter().any(|r| resolved.starts_with(r))
            && !self.read_only.iter().any(|ro| resolved.starts_with(ro))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn dot_dot_and_links_are_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("ws")).unwrap();
        symlink("/etc", base.join("ws/link")).unwrap();
        symlink("/nonexistent/place", base.join("ws/dangling")).unwrap();
        let ws = base.join("ws");
        assert_eq!(resolve(&ws, Path::new("a/../b")).unwrap(), ws.join("b"));
        assert_eq!(resolve(&ws, Path::new("../x")).unwrap(), base.join("x"));
        assert_eq!(
            resolve(&ws, Path::new("link/passwd")).unwrap(),
            PathBuf::from("/etc/passwd")
        );
        assert_eq!(
            resolve(&ws, Path::new("dangling")).unwrap(),
            PathBuf::from("/nonexistent/place")
        );
        // `..` after a link applies to the link's target, as the kernel does it.
        assert_eq!(
            resolve(&ws, Path::new("link/../x")).unwrap(),
            PathBuf::from("/x")
        );
    }

    #[test]
    fn symlink_loops_do_not_hang() {
        let dir = tempfile::tempdir().unwrap();
        symlink("b", dir.path().join("a")).unwrap();
        symlink("a", dir.path().join("b")).unwrap();
        assert_eq!(resolve(dir.path(), Path::new("a")), None);
    }

    #[test]
    fn workspace_write_roots_exclude_git_and_outside() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join(".git")).unwrap();
        symlink("/etc", ws.join("etc-link")).unwrap();
        let none = SandboxOptions::default();
        let roots = WritableRoots::for_policy(SandboxPolicy::WorkspaceWrite, &ws, &none);
        assert!(roots.allows_write(&ws, Path::new("src/new.rs")));
        assert!(roots.allows_write(&ws, Path::new("/tmp/scratch")));
        assert!(!roots.allows_write(&ws, Path::new(".git/config")));
        assert!(!roots.allows_write(&ws, Path::new("sub/../.git/HEAD")));
        assert!(!roots.allows_write(&ws, Path::new("etc-link/passwd")));
        assert!(!roots.allows_write(&ws, Path::new("/etc/passwd")));
        assert!(!roots.allows_write(&ws, Path::new("../../../etc/passwd")));
        let ro = WritableRoots::for_policy(SandboxPolicy::ReadOnly, &ws, &none);
        assert!(!ro.allows_write(&ws, Path::new("src/new.rs")));
        let full = WritableRoots::for_policy(SandboxPolicy::DangerFullAccess, &ws, &none);
        assert!(full.allows_write(&ws, Path::new("/etc/passwd")));
    }
}
