//! "Approve for this session": what the user let through for the rest of a thread. A
//! command approval covers any later command that starts with the same argv; a path
//! approval covers that path and everything under it. The thread's grants are folded from
//! its approval events (`ThreadState::session_grants`), so they survive a resume.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rein_protocol::shell_words::command_words;
use rein_protocol::{ClientRequest, SessionGrant};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionApprovals {
    command_prefixes: HashSet<Vec<String>>,
    paths: HashSet<PathBuf>,
}

impl SessionApprovals {
    /// Add what an approval for the session granted.
    pub fn grant(&mut self, grant: &SessionGrant) {
        match grant {
            SessionGrant::CommandPrefix { argv } => self.approve_command(argv),
            SessionGrant::Paths { paths } => {
                for path in paths {
                    self.approve_path(path);
                }
            }
        }
    }

    pub fn approve_command(&mut self, argv: &[String]) {
        self.command_prefixes.insert(argv.to_vec());
    }

    /// Paths must be resolved (see `paths::resolve`), so a link cannot alias an approval.
    pub fn approve_path(&mut self, path: &Path) {
        self.paths.insert(path.to_path_buf());
    }

    /// A command is covered when its argv, or the words of its plain `bash -lc` script
    /// (see `shell_words::command_words`), start with an approved prefix.
    pub fn covers_command(&self, argv: &[String]) -> bool {
        let words = command_words(argv);
        self.command_prefixes.iter().any(|prefix| {
            argv.starts_with(prefix) || words.as_ref().is_some_and(|w| w.starts_with(prefix))
        })
    }

    pub fn covers_path(&self, resolved: &Path) -> bool {
        self.paths.iter().any(|p| resolved.starts_with(p))
    }
}

/// "Deny for this session": the requests the user refused for the rest of a thread, each
/// refused again without asking when the same request comes (`ClientRequest::same_ask`).
/// Folded, like the grants, from the thread's events (`ThreadState::session_denials`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionDenials {
    denied: Vec<ClientRequest>,
}

impl SessionDenials {
    pub fn deny(&mut self, request: &ClientRequest) {
        if !self.covers(request) {
            self.denied.push(request.clone());
        }
    }

    pub fn covers(&self, request: &ClientRequest) -> bool {
        self.denied.iter().any(|d| d.same_ask(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv_of(s: &[&str]) -> Vec<String> {
        argv(s)
    }

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn a_denial_covers_the_same_ask_whatever_its_reason() {
        let command = |argv: &[&str], cwd: &str, reason: &str| ClientRequest::Command {
            command: argv_of(argv),
            cwd: PathBuf::from(cwd),
            reason: reason.into(),
        };
        let mut d = SessionDenials::default();
        d.deny(&command(&["rm", "-rf", "x"], "/w", "clean"));
        assert!(d.covers(&command(&["rm", "-rf", "x"], "/w", "again")));
        assert!(!d.covers(&command(&["rm", "-rf", "x", "y"], "/w", "clean")));
        assert!(!d.covers(&command(&["rm", "-rf", "x"], "/elsewhere", "clean")));
        let patch = |files: &[&str]| ClientRequest::Patch {
            files: files.iter().map(PathBuf::from).collect(),
            reason: String::new(),
        };
        d.deny(&patch(&["a", "b"]));
        assert!(d.covers(&patch(&["b", "a"])));
        assert!(!d.covers(&patch(&["a"])));
    }

    #[test]
    fn command_prefix_and_path_subtree_are_covered() {
        let mut s = SessionApprovals::default();
        s.approve_command(&argv(&["cargo", "build"]));
        s.approve_path(Path::new("/w/out"));
        assert!(s.covers_command(&argv(&["cargo", "build", "--release"])));
        assert!(!s.covers_command(&argv(&["cargo", "publish"])));
        assert!(!s.covers_command(&argv(&["cargo"])));
        s.approve_command(&argv(&["printf", "x"]));
        assert!(s.covers_command(&argv(&["bash", "-lc", "printf x y"])));
        assert!(!s.covers_command(&argv(&["bash", "-lc", "printf x; rm -rf ~"])));
        assert!(!s.covers_command(&argv(&["bash", "-lc", "printf y"])));
        assert!(s.covers_path(Path::new("/w/out/a.txt")));
        assert!(!s.covers_path(Path::new("/w/outside")));
    }
}
