//! `rein app-server --listen ws://…`: the same protocol over WebSocket text frames, a
//! session per connection, `/readyz`, and bearer-token auth.
#![allow(clippy::unwrap_used)]

#[path = "support/app_server.rs"]
mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};

use serde_json::{json, Value};
use support::{home_for, method, CodexSchema, MockModel};
use tungstenite::client::IntoClientRequest;
use tungstenite::{Message, WebSocket};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Client {
    ws: WebSocket<TcpStream>,
    methods: HashMap<String, String>,
    next_id: i64,
}

impl Client {
    fn connect(url: &str, token: Option<&str>) -> Result<Self, tungstenite::Error> {
        let mut request = url.into_client_request().unwrap();
        if let Some(token) = token {
            request
                .headers_mut()
                .insert("authorization", format!("Bearer {token}").parse().unwrap());
        }
        let addr = url.trim_start_matches("ws://");
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(support::PATIENCE)).unwrap();
        let (ws, _) = tungstenite::client(request, stream).map_err(|e| match e {
            tungstenite::HandshakeError::Failure(e) => e,
            tungstenite::HandshakeError::Interrupted(_) => panic!("interrupted handshake"),
        })?;
        Ok(Self {
            ws,
            methods: HashMap::new(),
            next_id: 1,
        })
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.methods.insert(id.to_string(), method.to_owned());
        let text = json!({ "id": id, "method": method, "params": params }).to_string();
        self.ws.send(Message::text(text)).unwrap();
        id
    }

    fn recv(&mut self, schema: &CodexSchema) -> Value {
        loop {
            match self.ws.read().unwrap() {
                Message::Text(text) => {
                    let message: Value = serde_json::from_str(text.as_str()).unwrap();
                    schema.check(&message, &self.methods);
                    return message;
                }
                Message::Ping(_) | Message::Pong(_) => {}
                other => panic!("unexpected frame {other:?}"),
            }
        }
    }

    fn call(&mut self, schema: &CodexSchema, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        loop {
            let m = self.recv(schema);
            if m.get("id") == Some(&id) && m.get("method").is_none() {
                return m;
            }
        }
    }
}

#[test]
fn websocket_sessions_readyz_and_token() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let token_file = home.path().join("token");
    std::fs::write(&token_file, "s3cret\n").unwrap();
    let mut child = support::rein()
        .args([
            "app-server",
            "--listen",
            "ws://127.0.0.1:0",
            "--ws-token-file",
        ])
        .arg(&token_file)
        .env("REIN_HOME", home.path())
        .env("MOCK_API_KEY", "test-key")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let _server = Killed(child);
    let url = url.trim().to_owned();
    assert!(url.starts_with("ws://127.0.0.1:"), "{url}");

    let mut probe = TcpStream::connect(url.trim_start_matches("ws://")).unwrap();
    probe
        .write_all(b"GET /readyz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    probe.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("ok"), "{answer}");

    match Client::connect(&url, Some("wrong")) {
        Err(tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 401),
        Err(e) => panic!("expected a 401, got {e}"),
        Ok(_) => panic!("a wrong token was accepted"),
    }

    let schema = CodexSchema::load();
    let mut first = Client::connect(&url, Some("s3cret")).unwrap();
    let mut second = Client::connect(&url, Some("s3cret")).unwrap();
    let init = first.call(
        &schema,
        "initialize",
        json!({ "clientInfo": { "name": "ws", "version": "1" } }),
    );
    assert!(init.get("result").is_some(), "{init}");
    // Each connection has its own initialize gate.
    let early = second.call(&schema, "model/list", json!({}));
    assert_eq!(early["error"]["message"], "Not initialized");

    let cwd = tempfile::tempdir().unwrap();
    let started = first.call(&schema, "thread/start", json!({ "cwd": cwd.path() }));
    let thread = started["result"]["thread"]["id"].clone();
    first.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "over ws" }] }),
    );
    let completed = loop {
        let m = first.recv(&schema);
        if method(&m) == "turn/completed" {
            break m;
        }
    };
    assert_eq!(
        completed["params"]["turn"]["items"][0]["text"],
        "echo: over ws"
    );
}
