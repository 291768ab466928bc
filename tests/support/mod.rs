//! Shared by the `rein exec` end-to-end tests: a real `rein mock-model` server in a child
//! process, a temporary `REIN_HOME` pointing at it, and `rein exec` commands that see only
//! the environment the test gives them.
#![allow(clippy::unwrap_used, dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub fn rein() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rein"))
}

/// `rein mock-model` playing a script; killed when dropped.
pub struct MockModel {
    child: Child,
    pub base_url: String,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl MockModel {
    pub fn start(script: serde_json::Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script_path = dir.path().join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let log = dir.path().join("requests.jsonl");
        let mut child = rein()
            .args(["mock-model", "--listen", "127.0.0.1:0", "--script"])
            .arg(&script_path)
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("http://127.0.0.1:"), "{line}");
        Self {
            child,
            base_url: line.trim().to_owned(),
            log,
            _dir: dir,
        }
    }

    /// The bodies of the requests the server received, in order.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["body"].clone())
            .collect()
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A temporary `REIN_HOME` whose config selects the mock server.
pub struct Home {
    pub dir: tempfile::TempDir,
}

impl Home {
    pub fn new(mock: &MockModel, wire_api: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            format!(
                "model = \"mock\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\n\
                 base_url = \"{}\"\nwire_api = \"{wire_api}\"\nenv_key = \"MOCK_API_KEY\"\n",
                mock.base_url
            ),
        )
        .unwrap();
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `rein exec ARGS` with this home and a key for the mock, and nothing inherited that
    /// could change the outcome.
    pub fn exec(&self, args: &[&str]) -> Command {
        let mut cmd = rein();
        cmd.arg("exec")
            .args(args)
            .env("REIN_HOME", self.path())
            .env("MOCK_API_KEY", "test-key")
            .env_remove("OPENAI_API_KEY")
            .env_remove("CODEX_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null());
        cmd
    }
}

/// Parse JSONL stdout into values, failing on any line that is not JSON.
pub fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8(stdout.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

pub fn types(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

/// The text of every user message the model was sent, over all requests.
pub fn user_texts(requests: &[serde_json::Value]) -> String {
    requests
        .iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}
