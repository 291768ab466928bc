//! A child process spoken to in lines over its stdio (newline-delimited JSON-RPC): what the
//! app-server and ACP harnesses share. Its stdout is read on a thread into a channel, so a
//! test waits for the next line with a patience instead of blocking forever; the process
//! is killed when the peer is dropped.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub struct LinePeer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl LinePeer {
    /// Spawn `cmd` with stdin and stdout piped (stderr goes to the test's).
    pub fn spawn(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// `message` as one line.
    pub fn send(&mut self, message: &serde_json::Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.send_raw(line.as_bytes());
    }

    /// The next line the process printed, waiting at most `patience`.
    pub fn recv_line(&self, patience: Duration) -> Result<String, mpsc::RecvTimeoutError> {
        self.lines.recv_timeout(patience)
    }

    /// The lines not read yet, up to the end of stdout (or a silence of `patience`).
    pub fn drain(&self, patience: Duration) -> Vec<String> {
        std::iter::from_fn(|| self.lines.recv_timeout(patience).ok()).collect()
    }

    /// Close the process's stdin (the end of the connection).
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// SIGKILL the process and reap it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn wait(&mut self) -> ExitStatus {
        self.child.wait().unwrap()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for LinePeer {
    fn drop(&mut self) {
        self.kill();
    }
}
