//! Harness of the `rein acp` end-to-end tests: a real `rein mock-model` process as the
//! model, a real `rein acp` process driven over its stdio with NDJSON JSON-RPC, and every
//! message it sends parsed into the ACP SDK's own types (a message that does not fit the
//! protocol fails the test).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema as acp;
use serde_json::{json, Value};

pub use crate::PATIENCE;

use crate::line_peer::LinePeer;
pub use crate::mock_model::{home_for, rein, MockModel};

/// What a test over one session holds: the home and the working directory (keep both
/// bound for the test's length), the directory's canonical path, the agent, the session id.
pub type Opened = (tempfile::TempDir, tempfile::TempDir, PathBuf, Acp, String);

/// `rein acp` over `model`, initialized, with one session in a fresh working directory.
pub fn open_session(model: &MockModel) -> Opened {
    let home = home_for(model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let session = acp.new_session(&cwd_path);
    (home, cwd, cwd_path, acp, session)
}

/// A running `rein acp`.
pub struct Acp {
    peer: LinePeer,
    next_id: i64,
    /// Every message received, in order.
    pub transcript: Vec<Value>,
}

impl Acp {
    pub fn start(home: &Path) -> Self {
        let mut cmd = rein();
        cmd.arg("acp")
            .env("REIN_HOME", home)
            .env("MOCK_API_KEY", "test-key")
            .env_remove("RUST_LOG");
        Self {
            peer: LinePeer::spawn(cmd),
            next_id: 1,
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
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        id
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// The next message, checked against the protocol's types.
    pub fn recv(&mut self) -> Value {
        let line = self.peer.recv_line(PATIENCE).unwrap_or_else(|e| {
            panic!(
                "no message from rein acp: {e}; so far: {:#?}",
                self.transcript
            )
        });
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        check(&message);
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

    /// The messages before the answer to `id`, and the answer.
    pub fn answer_to(&mut self, id: &Value) -> (Vec<Value>, Value) {
        let mut seen = self.until(|m| is_answer(m, id));
        let answer = seen.pop().unwrap();
        (seen, answer)
    }

    /// Send a request and wait for its answer (what came before it is returned too).
    pub fn call(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        let id = self.request(method, params);
        self.answer_to(&id)
    }

    pub fn initialize(&mut self) -> Value {
        self.initialize_with(json!({}))
    }

    /// `initialize` from a client that offers `capabilities` (`clientCapabilities`).
    pub fn initialize_with(&mut self, capabilities: Value) -> Value {
        let (_, answer) = self.call(
            "initialize",
            json!({ "protocolVersion": 1, "clientCapabilities": capabilities,
                    "clientInfo": { "name": "rein-tests", "version": "1" } }),
        );
        answer["result"].clone()
    }

    /// A new session in `cwd`; returns its id and the updates that followed the answer up
    /// to the commands update.
    pub fn new_session(&mut self, cwd: &Path) -> String {
        let (before, answer) = self.call("session/new", json!({ "cwd": cwd, "mcpServers": [] }));
        assert_eq!(
            before,
            Vec::<Value>::new(),
            "nothing precedes the session/new answer"
        );
        let id = answer["result"]["sessionId"].as_str().unwrap().to_owned();
        let next = self.recv();
        assert_eq!(update_kind(&next), "available_commands_update");
        id
    }

    pub fn prompt(&mut self, session: &str, text: &str) -> Value {
        self.request(
            "session/prompt",
            json!({ "sessionId": session, "prompt": [{ "type": "text", "text": text }] }),
        )
    }

    /// Close stdin and wait for the process: it must exit cleanly.
    pub fn finish(mut self) {
        self.peer.close_stdin();
        let status = self.peer.wait();
        assert!(status.success(), "rein acp exited with {status}");
    }
}

pub fn is_answer(m: &Value, id: &Value) -> bool {
    m.get("method").is_none() && m.get("id") == Some(id)
}

pub fn method(m: &Value) -> &str {
    m["method"].as_str().unwrap_or_default()
}

/// The `sessionUpdate` kind of a `session/update`, or "" for anything else.
pub fn update_kind(m: &Value) -> &str {
    if method(m) != "session/update" {
        return "";
    }
    m["params"]["update"]["sessionUpdate"]
        .as_str()
        .unwrap_or_default()
}

/// The updates among `messages`, without their envelopes.
pub fn updates(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| method(m) == "session/update")
        .map(|m| m["params"]["update"].clone())
        .collect()
}

/// A method the client answers, with its params.
pub fn asked(m: &Value) -> Option<(String, Value)> {
    let name = method(m);
    (m.get("id").is_some() && !name.is_empty()).then(|| (name.to_owned(), m["params"].clone()))
}

/// Play the client until the prompt `id` is answered: every request rein makes is answered
/// with what `answer` returns for it (`Ok` a result, `Err` an error object). Returns what
/// came before the answer, and the answer.
pub fn serve(
    acp: &mut Acp,
    id: &Value,
    mut answer: impl FnMut(&str, &Value) -> Result<Value, Value>,
) -> (Vec<Value>, Value) {
    let mut seen = Vec::new();
    loop {
        let m = acp.recv();
        if is_answer(&m, id) {
            return (seen, m);
        }
        if let Some((name, params)) = asked(&m) {
            let reply = match answer(&name, &params) {
                Ok(result) => json!({ "jsonrpc": "2.0", "id": m["id"], "result": result }),
                Err(error) => json!({ "jsonrpc": "2.0", "id": m["id"], "error": error }),
            };
            acp.send(&reply);
        }
        seen.push(m);
    }
}

/// The requests rein made of the client, in order (method and params).
pub fn requests(seen: &[Value]) -> Vec<Value> {
    seen.iter()
        .filter_map(asked)
        .map(|(name, params)| json!({ "method": name, "params": params }))
        .collect()
}

/// What the model was given back for `call_id`.
pub fn output_for(model: &MockModel, call_id: &str) -> Value {
    model
        .requests()
        .iter()
        .flat_map(|r| r["input"].as_array().cloned().unwrap_or_default())
        .find(|item| item["type"] == "function_call_output" && item["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no output of {call_id} reached the model"))["output"]
        .clone()
}

/// A home whose configuration asks for the editor's terminals.
pub fn home_with_terminals(model: &MockModel) -> tempfile::TempDir {
    let home = home_for(model);
    let config = home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[acp]\nclient_terminals = true\n");
    std::fs::write(&config, text).unwrap();
    home
}

/// `rein acp` for `home`, initialized with `capabilities`, one session in `cwd`.
pub fn session_with(home: &Path, cwd: &Path, capabilities: Value) -> (Acp, String) {
    let mut acp = Acp::start(home);
    acp.initialize_with(capabilities);
    let session = acp.new_session(cwd);
    (acp, session)
}

/// The client's answer to a permission request: rejected, this once.
pub fn reject_once() -> Value {
    json!({ "outcome": { "outcome": "selected", "optionId": "reject_once" } })
}

/// Every message must be JSON-RPC 2.0 and fit the ACP type of its method.
fn check(m: &Value) {
    assert_eq!(m["jsonrpc"], "2.0", "not JSON-RPC 2.0: {m}");
    let params = m["params"].clone();
    let parsed = match method(m) {
        "session/update" => serde_json::from_value::<acp::SessionNotification>(params).err(),
        "session/request_permission" => {
            serde_json::from_value::<acp::RequestPermissionRequest>(params).err()
        }
        "fs/read_text_file" => serde_json::from_value::<acp::ReadTextFileRequest>(params).err(),
        "fs/write_text_file" => serde_json::from_value::<acp::WriteTextFileRequest>(params).err(),
        "terminal/create" => serde_json::from_value::<acp::CreateTerminalRequest>(params).err(),
        "terminal/output" => serde_json::from_value::<acp::TerminalOutputRequest>(params).err(),
        "terminal/wait_for_exit" => {
            serde_json::from_value::<acp::WaitForTerminalExitRequest>(params).err()
        }
        "terminal/kill" => serde_json::from_value::<acp::KillTerminalRequest>(params).err(),
        "terminal/release" => serde_json::from_value::<acp::ReleaseTerminalRequest>(params).err(),
        "$/cancel_request" | "" => None,
        other => panic!("rein acp sent an unexpected method {other}: {m}"),
    };
    if let Some(e) = parsed {
        panic!("{} does not fit the protocol ({e}): {m:#}", method(m));
    }
}
