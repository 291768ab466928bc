//! A real `rein mock-model` server in a child process, shared by every end-to-end harness.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The `rein` binary under test (`REIN_E2E_BIN` overrides it, e.g. a copy another user
/// can run).
pub fn rein() -> Command {
    match std::env::var_os("REIN_E2E_BIN") {
        Some(bin) => Command::new(bin),
        None => Command::new(env!("CARGO_BIN_EXE_rein")),
    }
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
            .stderr(Stdio::inherit())
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

/// A temporary `REIN_HOME` whose config points at the mock model server.
pub fn home_for(model: &MockModel) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "model = \"mock\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nbase_url = \"{}\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
            model.base_url
        ),
    )
    .unwrap();
    home
}
