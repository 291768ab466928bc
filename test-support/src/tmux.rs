//! A terminal program driven through tmux, for the tests of full-screen clients (the Codex
//! TUI): a tmux server of its own (its own socket, killed on drop), keys sent with
//! `send-keys`, the screen read with `capture-pane` and waited on with a deadline.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub struct Tmux {
    socket: String,
}

/// How often a wait reads the screen again.
const POLL: Duration = Duration::from_millis(100);

impl Tmux {
    /// A new tmux server running `command` (a shell line) in a `width`×`height` window.
    pub fn start(name: &str, command: &str, width: u16, height: u16) -> Self {
        let socket = format!("rein-{name}-{}", std::process::id());
        let t = Self { socket };
        t.run(&[
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            command,
        ]);
        t
    }

    /// Run `command` in a new window, which becomes the current one.
    pub fn new_window(&self, command: &str) {
        self.run(&["new-window", "-t", "main", command]);
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Type `text` literally.
    pub fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "main", "-l", text]);
    }

    /// Press keys by tmux name (`Enter`, `Escape`, `C-c`, or a letter).
    pub fn press(&self, key: &str) {
        self.run(&["send-keys", "-t", "main", key]);
    }

    /// What the current window shows now.
    pub fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", "main"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen once it shows `needle`; fails with the last screen after `within`.
    pub fn wait_for(&self, needle: &str, within: Duration) -> String {
        self.wait_until(within, &format!("{needle:?} on the screen"), |s| {
            s.contains(needle)
        })
    }

    /// The screen once `done` holds for it; fails with the last screen after `within`.
    pub fn wait_until(&self, within: Duration, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + within;
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "no {what} after {within:?}; the screen:\n{screen}"
            );
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .stderr(Stdio::null())
            .status();
    }
}

/// `word` quoted for a shell line.
pub fn sh_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// `path` quoted for a shell line.
pub fn sh_path(path: &Path) -> String {
    sh_quote(&path.display().to_string())
}
