//! Shared by the `rein exec` end-to-end tests: a real `rein mock-model` server in a child
//! process, a temporary `REIN_HOME` pointing at it, and `rein exec` commands that see only
//! the environment the test gives them.
#![allow(clippy::unwrap_used, dead_code)]

use std::path::Path;
use std::process::Command;

pub use crate::mock_model::{json_lines, rein, rein_in, rein_ok, MockModel};

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
        let mut cmd = rein_in(self.path(), &["exec"]);
        cmd.args(args);
        cmd
    }

    /// Run `rein exec ARGS` to the end and require success (the failure shows stderr).
    pub fn exec_ok(&self, args: &[&str]) -> std::process::Output {
        rein_ok(self.path(), &[&["exec"], args].concat())
    }
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
        .map(std::string::ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}
