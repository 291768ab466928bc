//! Which calls are high-risk, for the advisor's `lightweight` mode: destructive commands,
//! network use, writes outside the writable roots and MCP tool calls. Read from the
//! actions the tools described, never from raw arguments. A pattern here only decides
//! whether the advisor is asked; it never allows or denies anything itself.

use std::path::{Component, Path, PathBuf};

use rein_protocol::{SandboxPolicy, ThreadSettings, ToolAction};

use crate::shell_words::simple_commands;

/// Programs that delete, overwrite or take power (first word of a command).
const DESTRUCTIVE: &[&str] = &[
    "rm", "rmdir", "shred", "dd", "truncate", "chmod", "chown", "chgrp", "kill", "pkill",
    "killall", "reboot", "shutdown", "halt", "sudo", "su", "doas", "mkfs", "fdisk", "parted",
    "wipefs",
];

/// Shells whose `-c` script is judged instead of the shell itself.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh"];

/// Git subcommands that drop work or publish it.
const GIT_DESTRUCTIVE: &[&str] = &["push", "reset", "clean", "rebase", "filter-branch"];

/// Programs that talk to the network.
const NETWORK: &[&str] = &[
    "curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "telnet", "ftp", "ping",
    "dig", "nslookup", "apt", "apt-get", "dnf", "yum", "brew",
];

/// Subcommands that fetch from the network (`pip install`, `git clone`).
const NETWORK_SUBCOMMANDS: &[(&str, &[&str])] = &[
    ("git", &["clone", "fetch", "pull", "push", "ls-remote"]),
    ("pip", &["install", "download"]),
    ("pip3", &["install", "download"]),
    ("npm", &["install", "i", "ci", "publish"]),
    ("pnpm", &["install", "add"]),
    ("yarn", &["install", "add"]),
    ("cargo", &["install", "publish"]),
    ("go", &["get", "install"]),
];

/// Why `action` is high-risk, or `None`.
pub(crate) fn high_risk(action: &ToolAction, settings: &ThreadSettings) -> Option<String> {
    match action {
        ToolAction::Exec { command, .. } => command_risk(command),
        ToolAction::Stdin { chars, .. } => command_risk(chars),
        ToolAction::Edit { changes } => changes.iter().find_map(|change| {
            [Some(&change.path), change.move_to.as_ref()]
                .into_iter()
                .flatten()
                .find(|path| !writable(path, settings))
                .map(|path| format!("writes outside the writable roots: {}", path.display()))
        }),
        ToolAction::Mcp { server, tool, .. } => Some(format!(
            "calls the MCP tool {server}/{tool}, whose effects rein cannot see"
        )),
        ToolAction::Read { .. }
        | ToolAction::List { .. }
        | ToolAction::Search { .. }
        | ToolAction::Plan { .. }
        // A sub-agent runs under the parent's policy; its own calls are judged as they come.
        | ToolAction::Agent { .. }
        | ToolAction::Other { .. } => None,
    }
}

/// The first risky word of a command line, each simple command judged by its first word
/// (after `env`-style assignments) and its subcommand.
fn command_risk(line: &str) -> Option<String> {
    simple_commands(line)
        .commands
        .into_iter()
        .find_map(|words| {
            let mut words = words
                .iter()
                .map(String::as_str)
                .skip_while(|w| w.contains('=') && !w.starts_with('-'));
            let program = words.next()?;
            let name = program.rsplit('/').next().unwrap_or(program);
            if SHELLS.contains(&name) {
                // `sh -c 'script'`: the script is what runs.
                let mut rest = words.skip_while(|w| !(w.starts_with('-') && w.contains('c')));
                return rest.nth(1).and_then(command_risk);
            }
            let sub = words.find(|w| !w.starts_with('-'));
            if DESTRUCTIVE.contains(&name) || name.starts_with("mkfs.") {
                return Some(format!("destructive command: {name}"));
            }
            if name == "git" && sub.is_some_and(|s| GIT_DESTRUCTIVE.contains(&s)) {
                return Some(format!(
                    "destructive command: git {}",
                    sub.unwrap_or_default()
                ));
            }
            if NETWORK.contains(&name) {
                return Some(format!("uses the network: {name}"));
            }
            NETWORK_SUBCOMMANDS
                .iter()
                .find(|(p, subs)| *p == name && sub.is_some_and(|s| subs.contains(&s)))
                .map(|(p, _)| format!("uses the network: {p} {}", sub.unwrap_or_default()))
        })
}

/// Whether a write to `path` stays inside the thread's writable roots (the cwd, the
/// sandbox options' roots and the temp dir); under full access everything is writable.
fn writable(path: &Path, settings: &ThreadSettings) -> bool {
    if settings.sandbox_policy == SandboxPolicy::DangerFullAccess {
        return true;
    }
    let path = normalize(&settings.cwd.join(path));
    let options = settings.sandbox_options.clone().unwrap_or_default();
    let tmp = (!options.exclude_slash_tmp).then(|| PathBuf::from("/tmp"));
    std::iter::once(normalize(&settings.cwd))
        .chain(options.writable_roots.iter().map(|r| normalize(r)))
        .chain(tmp)
        .any(|root| path.starts_with(root))
}

/// `path` with `.` and `..` resolved lexically (links are the policy engine's business).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rein_protocol::{ApprovalPolicy, FileChangeKind, FileDiff, TurnBudget};

    fn settings() -> ThreadSettings {
        ThreadSettings {
            model: "m".into(),
            cwd: "/work/repo".into(),
            approval_policy: ApprovalPolicy::OnRequest,
            sandbox_policy: SandboxPolicy::WorkspaceWrite,
            sandbox_options: None,
            reasoning_effort: None,
            budget: TurnBudget::default(),
            instructions: String::new(),
        }
    }

    fn exec(command: &str) -> ToolAction {
        ToolAction::Exec {
            argv: vec!["bash".into(), "-lc".into(), command.into()],
            command: command.into(),
            cwd: "/work/repo".into(),
            background: false,
            commands: Vec::new(),
        }
    }

    fn edit(path: &str) -> ToolAction {
        ToolAction::Edit {
            changes: vec![FileDiff {
                path: path.into(),
                kind: FileChangeKind::Add,
                move_to: None,
                unified_diff: String::new(),
            }],
        }
    }

    #[test]
    fn destructive_and_network_commands_are_high_risk_anywhere_in_a_line() {
        let s = settings();
        for (line, why) in [
            ("rm -rf build", "destructive command: rm"),
            ("cd src && /bin/rm x", "destructive command: rm"),
            ("FOO=1 sudo make", "destructive command: sudo"),
            (
                "git status; git push --force origin",
                "destructive command: git push",
            ),
            ("ls | curl -d @- http://x", "uses the network: curl"),
            ("pip install requests", "uses the network: pip install"),
            ("sh -c 'rm -f victim'", "destructive command: rm"),
            (
                "bash -lc \"cd x && curl http://x\"",
                "uses the network: curl",
            ),
        ] {
            assert_eq!(high_risk(&exec(line), &s).as_deref(), Some(why), "{line}");
        }
        for line in [
            "ls -la",
            "cargo test",
            "git status",
            "echo 'rm -rf /'",
            "grep rm x",
            "sh -c ls",
        ] {
            assert_eq!(high_risk(&exec(line), &s), None, "{line}");
        }
    }

    #[test]
    fn edits_outside_the_writable_roots_are_high_risk() {
        let s = settings();
        assert_eq!(high_risk(&edit("src/main.rs"), &s), None);
        assert_eq!(high_risk(&edit("/tmp/scratch"), &s), None);
        assert_eq!(
            high_risk(&edit("../other/x"), &s).as_deref(),
            Some("writes outside the writable roots: ../other/x")
        );
        assert!(high_risk(&edit("/etc/passwd"), &s).is_some());
        let full = ThreadSettings {
            sandbox_policy: SandboxPolicy::DangerFullAccess,
            ..settings()
        };
        assert_eq!(high_risk(&edit("/etc/passwd"), &full), None);
    }
}
