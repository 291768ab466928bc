//! A WebSocket client of `rein app-server --listen ws://…` for the end-to-end tests, which
//! checks every message it reads against Codex's schema, and the server process itself.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};

use serde_json::{json, Value};
use tungstenite::client::IntoClientRequest;
use tungstenite::{Message, WebSocket};

use crate::app_server::{self as support, CodexSchema};

pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub struct Client {
    pub ws: WebSocket<TcpStream>,
    methods: HashMap<String, String>,
    next_id: i64,
    /// Messages read while waiting for an answer, not yet looked at.
    stash: VecDeque<Value>,
}

impl Client {
    pub fn connect(url: &str, token: Option<&str>) -> Result<Self, tungstenite::Error> {
        let stream = TcpStream::connect(url.trim_start_matches("ws://")).unwrap();
        Self::handshake(url, token, stream)
    }

    /// A client whose socket takes at most about `bytes` unread bytes, so a test can make
    /// the server's writes to it block after a few messages rather than megabytes.
    pub fn connect_with_small_buffer(url: &str, bytes: u32) -> Self {
        let addr = url.trim_start_matches("ws://").parse().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        // Set before connecting, so the window the client offers is small from the start.
        socket.set_recv_buffer_size(bytes).unwrap();
        let stream = runtime.block_on(socket.connect(addr)).unwrap();
        let stream = stream.into_std().unwrap();
        stream.set_nonblocking(false).unwrap();
        Self::handshake(url, None, stream).unwrap()
    }

    /// A client whose upgrade request also carries `headers` (replacing `Host`, say).
    pub fn connect_with_headers(
        url: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Result<Self, tungstenite::Error> {
        let stream = TcpStream::connect(url.trim_start_matches("ws://")).unwrap();
        Self::handshake_with(url, token, headers, stream)
    }

    fn handshake(
        url: &str,
        token: Option<&str>,
        stream: TcpStream,
    ) -> Result<Self, tungstenite::Error> {
        Self::handshake_with(url, token, &[], stream)
    }

    fn handshake_with(
        url: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        stream: TcpStream,
    ) -> Result<Self, tungstenite::Error> {
        let mut request = url.into_client_request().unwrap();
        if let Some(token) = token {
            request
                .headers_mut()
                .insert("authorization", format!("Bearer {token}").parse().unwrap());
        }
        for (name, value) in headers {
            let name = tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap();
            request.headers_mut().insert(name, value.parse().unwrap());
        }
        stream.set_read_timeout(Some(support::PATIENCE)).unwrap();
        let (ws, _) = tungstenite::client(request, stream).map_err(|e| match e {
            tungstenite::HandshakeError::Failure(e) => e,
            tungstenite::HandshakeError::Interrupted(_) => panic!("interrupted handshake"),
        })?;
        Ok(Self {
            ws,
            methods: HashMap::new(),
            next_id: 1,
            stash: VecDeque::new(),
        })
    }

    /// Wait at most `patience` for each frame (the default is [`support::PATIENCE`]): a
    /// guard against a hang, for a test whose server may take long under load.
    pub fn set_patience(&mut self, patience: std::time::Duration) {
        self.ws.get_ref().set_read_timeout(Some(patience)).unwrap();
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.methods.insert(id.to_string(), method.to_owned());
        let text = json!({ "id": id, "method": method, "params": params }).to_string();
        self.ws.send(Message::text(text)).unwrap();
        id
    }

    pub fn recv(&mut self, schema: &CodexSchema) -> Value {
        let message = self.recv_unchecked();
        self.check(schema, &message);
        message
    }

    /// The next message, not yet checked against the schema: for a test that must read
    /// fast and checks what it read afterwards with [`check`](Self::check).
    pub fn recv_unchecked(&mut self) -> Value {
        loop {
            match self.ws.read().unwrap() {
                Message::Text(text) => return serde_json::from_str(text.as_str()).unwrap(),
                Message::Ping(_) | Message::Pong(_) => {}
                other => panic!("unexpected frame {other:?}"),
            }
        }
    }

    /// Messages read before an answer and kept for [`until`](Self::until).
    pub fn stashed(&self) -> &VecDeque<Value> {
        &self.stash
    }

    pub fn check(&self, schema: &CodexSchema, message: &Value) {
        schema.check(message, &self.methods);
    }

    pub fn call(&mut self, schema: &CodexSchema, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        loop {
            let m = self.recv(schema);
            if m.get("id") == Some(&id) && m.get("method").is_none() {
                return m;
            }
            self.stash.push_back(m);
        }
    }

    /// Messages up to and including the first that `done` accepts, stashed ones first.
    pub fn until(&mut self, schema: &CodexSchema, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let m = match self.stash.pop_front() {
                Some(m) => m,
                None => self.recv(schema),
            };
            let last = done(&m);
            seen.push(m);
            if last {
                return seen;
            }
        }
    }

    pub fn initialize(&mut self, schema: &CodexSchema) {
        let init = self.call(
            schema,
            "initialize",
            json!({ "clientInfo": { "name": "ws", "version": "1" } }),
        );
        assert!(init.get("result").is_some(), "{init}");
    }
}

/// A `rein app-server --listen ws://127.0.0.1:0` with `extra` arguments, and its URL;
/// without a token (`--no-auth`) unless `extra` names a `--ws-token-file`.
pub fn serve(home: &Path, extra: &[&str]) -> (Killed, String) {
    serve_in(home, None, extra)
}

/// [`serve`], in the directory `cwd` (where a `thread/start` without a cwd runs).
pub fn serve_in(home: &Path, cwd: Option<&Path>, extra: &[&str]) -> (Killed, String) {
    let mut args = extra.to_vec();
    if !extra.contains(&"--ws-token-file") {
        args.push("--no-auth");
    }
    let mut cmd = server_command(home, &args);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    cmd.stderr(Stdio::inherit());
    start(cmd)
}

/// [`serve`] with exactly `extra` (so rein's own token by default).
pub fn serve_as_given(home: &Path, extra: &[&str]) -> (Killed, String) {
    let mut cmd = server_command(home, extra);
    cmd.stderr(Stdio::inherit());
    start(cmd)
}

/// The command [`serve_as_given`] runs, for a test that adds to it.
pub fn server_command(home: &Path, extra: &[&str]) -> std::process::Command {
    let mut cmd = support::rein();
    cmd.args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .args(extra)
        .env("REIN_HOME", home)
        .env("MOCK_API_KEY", "test-key")
        .stdout(Stdio::piped());
    cmd
}

/// Spawn `cmd` (a [`server_command`]) and read the URL it prints first.
pub fn start(mut cmd: std::process::Command) -> (Killed, String) {
    let mut child = cmd.spawn().unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    (Killed(child), url.trim().to_owned())
}
