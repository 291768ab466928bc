//! Harness of the app-server end-to-end tests: a real `rein mock-model` process as the
//! model server, a real `rein app-server` process driven over its stdio, and a validator
//! that checks every message rein sends against Codex's JSON Schema (copied into
//! `tests/fixtures/codex-schema/`).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::Path;

use serde_json::{json, Value};

pub use crate::PATIENCE;

use crate::line_peer::LinePeer;
pub use crate::mock_model::{
    home_for, home_for_tree, json_lines, rein, rein_in, rein_ok, MockModel,
};

/// A running `rein app-server`; every line it prints is checked against Codex's schema.
pub struct AppServer {
    peer: LinePeer,
    next_id: i64,
    /// Methods of the requests in flight, by id, to pick the schema of their answers.
    methods: HashMap<String, String>,
    schema: &'static CodexSchema,
    /// Every message received, in order.
    pub transcript: Vec<Value>,
}

impl AppServer {
    pub fn start(home: &Path, extra_args: &[&str]) -> Self {
        Self::start_with_env(home, extra_args, &[])
    }

    /// As [`AppServer::start`], with more environment variables.
    pub fn start_with_env(home: &Path, extra_args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut cmd = rein();
        cmd.arg("app-server")
            .args(extra_args)
            .envs(env.iter().copied())
            .env("REIN_HOME", home)
            .env("MOCK_API_KEY", "test-key");
        Self {
            peer: LinePeer::spawn(cmd),
            next_id: 1,
            methods: HashMap::new(),
            schema: CodexSchema::load(),
            transcript: Vec::new(),
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.peer.send_raw(bytes);
    }

    pub fn send(&mut self, message: &Value) {
        self.peer.send(message);
    }

    /// Send a request; returns its id.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.methods.insert(id.to_string(), method.to_owned());
        self.send(&json!({ "id": id, "method": method, "params": params }));
        id
    }

    /// Send a request under an id of the caller's choosing (e.g. a duplicate).
    pub fn request_with_id(&mut self, id: Value, method: &str, params: Value) {
        self.methods.insert(id.to_string(), method.to_owned());
        self.send(&json!({ "id": id, "method": method, "params": params }));
    }

    /// Send `method` with no params at all (as Codex sends `configRequirements/read`).
    pub fn request_bare(&mut self, method: &str) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.methods.insert(id.to_string(), method.to_owned());
        self.send(&json!({ "id": id, "method": method }));
        id
    }

    /// The next message, validated.
    pub fn recv(&mut self) -> Value {
        let line = self.peer.recv_line(PATIENCE).unwrap_or_else(|e| {
            panic!(
                "no message from the app-server: {e}; so far: {:#?}",
                self.transcript
            )
        });
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        self.schema.check(&message, &self.methods);
        self.transcript.push(message.clone());
        message
    }

    /// Messages up to and including the first that matches.
    pub fn until(&mut self, mut pred: impl FnMut(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let m = self.recv();
            let done = pred(&m);
            seen.push(m);
            if done {
                return seen;
            }
        }
    }

    /// The answer to request `id` (skipping notifications before it).
    pub fn response(&mut self, id: &Value) -> Value {
        self.until(|m| m.get("id") == Some(id) && m.get("method").is_none())
            .pop()
            .unwrap()
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(&id)
    }

    /// Start a turn on `thread` saying `text`; its `turn/completed`.
    pub fn turn(&mut self, thread: &str, text: &str) -> Value {
        self.request(
            "turn/start",
            json!({ "threadId": thread, "input": [{ "type": "text", "text": text }] }),
        );
        self.until(|m| method(m) == "turn/completed").pop().unwrap()
    }

    pub fn initialize(&mut self) -> Value {
        self.call(
            "initialize",
            json!({"clientInfo": {"name": "rein_tests", "title": null, "version": "0.0.1"},
                   "capabilities": {"experimentalApi": true}}),
        )
    }

    pub fn start_thread(&mut self, params: Value) -> String {
        let r = self.call("thread/start", params);
        let id = r["result"]["thread"]["id"].as_str().unwrap().to_owned();
        // `thread/started` follows the answer; only an MCP server's status, which its
        // supervisor reports whenever it changes, may come between.
        let mut started = self.recv();
        while method(&started).starts_with("mcpServer/") {
            started = self.recv();
        }
        assert_eq!(started["method"], "thread/started");
        id
    }

    /// SIGKILL the server, as a crash would, and wait for it to be gone.
    pub fn kill(mut self) {
        self.peer.kill();
    }

    /// SIGKILL the server and return what it had printed that was not read yet (an
    /// answer that may or may not have left before the kill).
    pub fn kill_and_read(mut self) -> Vec<Value> {
        self.peer.kill();
        self.peer
            .drain(PATIENCE)
            .iter()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    pub fn pid(&self) -> u32 {
        self.peer.pid()
    }

    /// Wait for the process to exit (after a signal), reading what it still prints.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        self.peer.drain(PATIENCE);
        self.peer.wait()
    }

    /// Close stdin and wait for the process to exit on its own.
    pub fn finish(mut self) -> std::process::ExitStatus {
        self.peer.close_stdin();
        self.peer.drain(PATIENCE);
        self.peer.wait()
    }
}

pub fn method(m: &Value) -> &str {
    m.get("method").and_then(Value::as_str).unwrap_or("")
}

/// Codex's schema files, compiled once per server.
pub struct CodexSchema {
    notification: jsonschema::Validator,
    server_request: jsonschema::Validator,
    error: jsonschema::Validator,
    responses: HashMap<&'static str, jsonschema::Validator>,
}

/// The Codex schema file of each answer, from the typed method table: Codex's published
/// answer for Codex's methods; `thread/rollback`, which Codex 0.169 dropped from its
/// schema, answers `{thread}` as `thread/read` does. Methods Codex serves without
/// publishing them, and rein's own, have none: their tests check their answers.
fn responses() -> Vec<(&'static str, String)> {
    use rein_app_server_protocol::Origin;
    rein_app_server_protocol::client_methods()
        .into_iter()
        .filter_map(|spec| {
            let file = match spec.origin {
                Origin::Codex { response } => match response {
                    "InitializeResponse" => "v1/InitializeResponse.json".to_owned(),
                    "FuzzyFileSearchResponse" => "FuzzyFileSearchResponse.json".to_owned(),
                    name => format!("v2/{name}.json"),
                },
                Origin::CodexDropped => "v2/ThreadReadResponse.json".to_owned(),
                Origin::CodexUnpublished | Origin::Rein => return None,
            };
            Some((spec.method, file))
        })
        .collect()
}

/// Methods whose answers no Codex schema describes (see [`responses`]).
fn unpublished(method: &str) -> bool {
    use rein_app_server_protocol::Origin;
    rein_app_server_protocol::client_methods()
        .iter()
        .any(|spec| spec.method == method && matches!(spec.origin, Origin::CodexUnpublished))
}

fn compile(file: &str) -> jsonschema::Validator {
    // `REIN_E2E_FIXTURES`: a copy another user can read.
    let fixtures = std::env::var_os("REIN_E2E_FIXTURES").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures"),
        std::path::PathBuf::from,
    );
    let path = fixtures.join("codex-schema").join(file);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// A validator of a shape built around Codex's definitions: `schema` may `$ref`
/// `#/definitions/NAME` of Codex's `ClientRequest.json` (for methods Codex serves but does
/// not publish, whose types its schema still defines, e.g. `ThreadMemoryMode`).
pub fn with_codex_definitions(mut schema: Value) -> jsonschema::Validator {
    let fixtures = std::env::var_os("REIN_E2E_FIXTURES").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures"),
        std::path::PathBuf::from,
    );
    let path = fixtures.join("codex-schema/ClientRequest.json");
    let codex: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    schema["definitions"] = codex["definitions"].clone();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

impl CodexSchema {
    /// The schema, compiled once per test process: compiling its hundred files takes
    /// seconds in a debug build, and every server a test starts checks against it.
    pub fn load() -> &'static Self {
        static SCHEMA: std::sync::LazyLock<CodexSchema> =
            std::sync::LazyLock::new(|| CodexSchema {
                notification: compile("ServerNotification.json"),
                server_request: compile("ServerRequest.json"),
                error: compile("JSONRPCError.json"),
                responses: responses().iter().map(|(m, f)| (*m, compile(f))).collect(),
            });
        &SCHEMA
    }

    /// Panic unless `message` is valid for what it is. Error answers to requests without a
    /// readable id (`"id": null`) have no Codex schema and are checked by the tests.
    pub fn check(&self, message: &Value, methods: &HashMap<String, String>) {
        let has_id = message.get("id").is_some_and(|id| !id.is_null());
        // rein's own methods and server requests (`rein/…`) have no Codex schema; their
        // tests check them.
        if method(message).starts_with("rein/") {
            return;
        }
        let (what, validator) = if message.get("method").is_some() {
            if has_id {
                ("server request", &self.server_request)
            } else {
                ("notification", &self.notification)
            }
        } else if message.get("error").is_some() {
            if !has_id {
                return;
            }
            ("error", &self.error)
        } else {
            let id = message["id"].to_string();
            let method = methods
                .get(&id)
                .unwrap_or_else(|| panic!("answer to an unknown id: {message}"));
            // rein's own methods have no Codex schema; their tests check their answers.
            if method.starts_with("rein/") || unpublished(method) {
                return;
            }
            let Some(v) = self.responses.get(method.as_str()) else {
                panic!("no Codex schema for the result of {method}");
            };
            let errors: Vec<String> = v
                .iter_errors(&message["result"])
                .map(|e| format!("{e} at {}", e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "result of {method} breaks Codex's schema: {errors:#?}\n{message:#}"
            );
            return;
        };
        let errors: Vec<String> = validator
            .iter_errors(message)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{what} breaks Codex's schema: {errors:#?}\n{message:#}"
        );
    }
}
