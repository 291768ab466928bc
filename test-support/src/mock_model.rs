//! A real `rein mock-model` server in a child process, shared by every end-to-end harness.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The `rein` binary under test (`REIN_E2E_BIN` overrides it, e.g. a copy another user
/// can run).
pub fn rein() -> Command {
    Command::new(rein_bin())
}

/// The path of the `rein` binary under test. Cargo builds a package's binaries into
/// `target/<profile>/` before its integration tests, which run from
/// `target/<profile>/deps/`; `env!("CARGO_BIN_EXE_rein")` is not available here, as this
/// crate is not the binary's package.
pub fn rein_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("REIN_E2E_BIN") {
        return bin.into();
    }
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let bin = profile_dir.join("rein");
    assert!(
        bin.exists(),
        "no rein binary at {} (run the tests with cargo, or set REIN_E2E_BIN)",
        bin.display()
    );
    bin
}

/// `rein ARGS` with `home` as `REIN_HOME`, a key for the mock, and nothing inherited that
/// could change the outcome (other providers' keys and URLs, `RUST_LOG`, stdin).
pub fn rein_in(home: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = rein();
    cmd.args(args)
        .env("REIN_HOME", home)
        .env("MOCK_API_KEY", "test-key")
        .env_remove("OPENAI_API_KEY")
        .env_remove("CODEX_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("RUST_LOG")
        .env_remove("REIN_MODEL")
        .env_remove("REIN_MODEL_PROVIDER")
        .env_remove("REIN_REASONING_EFFORT")
        .env_remove("REIN_MULTIMODAL_MODEL")
        .env_remove("REIN_MULTIMODAL_PROVIDER")
        .env_remove("REIN_FALLBACK_MODEL")
        .env_remove("REIN_FALLBACK_PROVIDER")
        .stdin(Stdio::null());
    cmd
}

/// [`rein_in`] run to the end; it must succeed (the failure shows stderr).
pub fn rein_ok(home: &std::path::Path, args: &[&str]) -> std::process::Output {
    let out = rein_in(home, args).output().unwrap();
    assert!(
        out.status.success(),
        "rein {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The names of the tools a recorded model request offered, in its order (none when it
/// offered none).
pub fn tool_names(request: &serde_json::Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Parse JSONL stdout into values, failing on any line that is not JSON.
pub fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8(stdout.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
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

    /// How many requests the server has logged completely so far (a line being written
    /// is not counted): for waiting on requests while the server runs.
    pub fn logged_requests(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
            .count()
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

/// A `REIN_HOME` whose main model is on `parent` and whose model `child` is on `child`.
pub fn home_for_tree(parent: &MockModel, child: &MockModel) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let provider = |name: &str, url: &str| {
        format!(
            "[model_providers.{name}]\nbase_url = \"{url}\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n\n"
        )
    };
    let config = format!(
        "model = \"mock\"\nmodel_provider = \"mock\"\nprofile = \"tree\"\n\n[profiles.tree]\nfallback_model = \"child\"\nfallback_provider = \"mockchild\"\n\n{}{}",
        provider("mock", &parent.base_url),
        provider("mockchild", &child.base_url),
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    home
}
