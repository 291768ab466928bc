//! Harness of the `rein serve` end-to-end tests: a real `rein serve` child on 127.0.0.1 and
//! a small HTTP/1.1 client over a plain `TcpStream` (one request per connection), so a test
//! can send exactly the headers and bytes it means to (a foreign `Host`, an `Origin`, a body
//! cut short) and read a server-sent-event stream as it comes.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use serde_json::{json, Value};

pub use crate::mock_model::{home_for, rein_in, MockModel};
pub use crate::PATIENCE;

/// A running `rein serve`; killed when dropped.
pub struct Server {
    child: Child,
    pub url: String,
    pub addr: SocketAddr,
    pub token: String,
    pub home: PathBuf,
}

impl Server {
    /// `rein serve --listen 127.0.0.1:0 EXTRA` with `home` as `REIN_HOME`.
    pub fn start(home: &Path, extra: &[&str]) -> Self {
        Self::start_on(home, "127.0.0.1:0", extra)
    }

    pub fn start_on(home: &Path, listen: &str, extra: &[&str]) -> Self {
        let mut args = vec!["serve", "--listen", listen];
        args.extend_from_slice(extra);
        let mut child = rein_in(home, &args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().to_owned();
        assert!(
            url.starts_with("http://127.0.0.1:"),
            "rein serve said {line:?}"
        );
        let addr = url.trim_start_matches("http://").parse().unwrap();
        let token = std::fs::read_to_string(home.join("serve-token"))
            .unwrap()
            .trim()
            .to_owned();
        Self {
            child,
            url,
            addr,
            token,
            home: home.to_owned(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// kill -9, and wait for it.
    pub fn kill9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM, and its exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        self.child.wait().unwrap()
    }

    /// The headers every admitted request carries: the right `Host` and the token.
    fn proper(&self) -> Vec<(String, String)> {
        vec![
            ("Host".into(), self.addr.to_string()),
            ("Authorization".into(), format!("Bearer {}", self.token)),
        ]
    }

    /// `METHOD PATH` with the proper headers and a JSON body.
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Reply {
        let body = body.map(|b| b.to_string().into_bytes());
        self.send(method, path, &self.proper(), body.as_deref())
    }

    pub fn post(&self, path: &str, body: &Value) -> Reply {
        self.call("POST", path, Some(body))
    }

    pub fn get(&self, path: &str) -> Reply {
        self.call("GET", path, None)
    }

    /// A request with exactly these headers (plus `Content-Length` for a body).
    pub fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(String, String)],
        body: Option<&[u8]>,
    ) -> Reply {
        read_reply(self.open(method, path, headers, body))
    }

    /// A streamed request: the events as they come.
    pub fn stream(&self, method: &str, path: &str, body: Option<&Value>) -> Events {
        self.stream_with(method, path, &[], body)
    }

    /// A streamed request with these headers besides the proper ones (`Last-Event-ID`).
    pub fn stream_with(
        &self,
        method: &str,
        path: &str,
        extra: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Events {
        let body = body.map(|b| b.to_string().into_bytes());
        let mut headers = self.proper();
        headers.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        let mut reader = BufReader::new(self.open(method, path, &headers, body.as_deref()));
        let (status, headers) = read_head(&mut reader);
        assert_eq!(status, 200, "a stream was refused: {headers:?}");
        Events::new(reader)
    }

    fn open(
        &self,
        method: &str,
        path: &str,
        headers: &[(String, String)],
        body: Option<&[u8]>,
    ) -> TcpStream {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(body) = body {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        if let Some(body) = body {
            // A server that refuses early may close before reading it all.
            let _ = stream.write_all(body);
        }
        stream
    }

    /// The proper headers with `name` replaced (or added) by `value`, or removed (`None`).
    pub fn headers_with(&self, name: &str, value: Option<&str>) -> Vec<(String, String)> {
        let mut headers: Vec<_> = self
            .proper()
            .into_iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case(name))
            .collect();
        if let Some(value) = value {
            headers.push((name.to_owned(), value.to_owned()));
        }
        headers
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as JSON, once the status is 200 (else the test fails, showing the body).
    pub fn ok(&self) -> Value {
        assert_eq!(self.status, 200, "{}", String::from_utf8_lossy(&self.body));
        self.json()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "{e}: {} {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn read_head(reader: &mut impl BufRead) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("no status line: {line:?}"))
        .parse()
        .unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    (status, headers)
}

fn read_reply(stream: TcpStream) -> Reply {
    let mut reader = BufReader::new(stream);
    let (status, headers) = read_head(&mut reader);
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let mut body = Vec::new();
    if chunked {
        let mut events = Events::new(reader);
        while let Some(bytes) = events.chunk() {
            body.extend(bytes);
        }
    } else {
        reader.read_to_end(&mut body).unwrap();
    }
    Reply {
        status,
        headers,
        body,
    }
}

/// One server-sent event: its `event:` name and its `data:` JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct Sse {
    pub event: String,
    pub data: Value,
    /// Its `id:`, if it had one (the Agent Protocol's streams do).
    pub id: Option<String>,
}

/// A server-sent-event stream being read (a chunked body).
pub struct Events {
    reader: BufReader<TcpStream>,
    pending: String,
    done: bool,
}

impl Events {
    fn new(reader: BufReader<TcpStream>) -> Self {
        Self {
            reader,
            pending: String::new(),
            done: false,
        }
    }

    /// The next event, or `None` once the stream has ended.
    pub fn next_event(&mut self) -> Option<Sse> {
        loop {
            if let Some(end) = self.pending.find("\n\n") {
                let block: String = self.pending.drain(..end + 2).collect();
                let mut event = String::new();
                let mut data = String::new();
                let mut id = None;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        event = v.to_owned();
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push_str(v);
                    }
                }
                let data = serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {data}"));
                return Some(Sse { event, data, id });
            }
            let chunk = self.chunk()?;
            self.pending.push_str(&String::from_utf8(chunk).unwrap());
        }
    }

    /// Every event to the end of the stream.
    pub fn collect_all(mut self) -> Vec<Sse> {
        let mut all = Vec::new();
        while let Some(event) = self.next_event() {
            all.push(event);
        }
        all
    }

    /// Events up to and including the first of type `kind`.
    pub fn until(&mut self, kind: &str) -> Vec<Sse> {
        let mut seen = Vec::new();
        while let Some(event) = self.next_event() {
            let last = event.event == kind;
            seen.push(event);
            if last {
                return seen;
            }
        }
        panic!("the stream ended before {kind}: {seen:?}");
    }

    /// The next chunk of a chunked body, or `None` at its end.
    fn chunk(&mut self) -> Option<Vec<u8>> {
        if self.done {
            return None;
        }
        let mut line = String::new();
        self.reader.read_line(&mut line).ok()?;
        let size = usize::from_str_radix(line.trim(), 16).ok()?;
        if size == 0 {
            self.done = true;
            return None;
        }
        let mut bytes = vec![0; size];
        self.reader.read_exact(&mut bytes).ok()?;
        let mut crlf = [0; 2];
        self.reader.read_exact(&mut crlf).ok()?;
        Some(bytes)
    }
}

/// The mock model's script of the SDK tests (tests/sdk/openai_responses.*): replies for the
/// plain, streamed and background responses, then one that hangs (to be cancelled), then
/// echoes.
pub fn sdk_script() -> Value {
    json!({
        "replies": [
            { "text": "Hello there.", "deltas": 2 },
            { "text": "Streamed here.", "deltas": 3 },
            { "text": "Background." },
            { "text": "thinking", "deltas": 1, "fault": { "type": "hang" } }
        ],
        "when_exhausted": "echo"
    })
}

/// What the SDK scripts report against [`sdk_script`], whichever SDK ran them.
pub fn sdk_outcome() -> Value {
    let streamed_types = json!([
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed"
    ]);
    json!({
        "misfits": [],
        "plain": { "status": "completed", "text": "Hello there.", "model": "mock" },
        "streamed": {
            "types": streamed_types,
            "text": "Streamed here.",
            "final": "Streamed here.",
            "numbers_increase": true
        },
        "resumed": {
            "types": [
                "response.created",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed"
            ],
            "restated": true,
            "all_after": true,
            "accumulated": "Streamed here."
        },
        "background": {
            "status": "completed",
            "text": "Background.",
            "previous_is_plain": true,
            "polled_until_final": true,
            "metadata": { "job": "nightly-42" },
            "background": true
        },
        "cancelled": { "status": "cancelled", "again": "cancelled" },
        "continued": { "status": "completed", "text": "echo: and now?" },
        "input_items": [{ "role": "user", "text": "and now?" }],
        "errors": {
            "not_found": 404,
            "bad_request": [400, "temperature"],
            "unauthorized": 401
        }
    })
}

/// Every event of the rollouts under `home` made `ms` milliseconds older, in place (the
/// same number of digits, so every byte offset stays): a stored run that is days old.
pub fn age_rollouts(home: &std::path::Path, ms: u64) {
    let mut dirs = vec![home.join("sessions")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let key = "\"timestamp_ms\":";
            let mut aged = String::new();
            let mut rest = text.as_str();
            while let Some(at) = rest.find(key) {
                let (head, tail) = rest.split_at(at + key.len());
                let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
                let old: u64 = tail[..digits].parse().unwrap();
                let new = (old - ms).to_string();
                assert_eq!(new.len(), digits);
                aged.push_str(head);
                aged.push_str(&new);
                rest = &tail[digits..];
            }
            aged.push_str(rest);
            std::fs::write(&path, aged).unwrap();
        }
    }
}

/// The mock model's script of the chat SDK tests (tests/sdk/openai_chat.*): replies for
/// the plain completion, its continuation and the streamed one; the rest echo.
pub fn chat_sdk_script() -> Value {
    json!({
        "replies": [
            { "text": "Hello there.", "deltas": 2 },
            { "text": "Fine, thanks." },
            { "text": "Streamed here.", "deltas": 3 }
        ],
        "when_exhausted": "echo"
    })
}

/// What the chat SDK scripts report against [`chat_sdk_script`], whichever SDK ran them.
pub fn chat_sdk_outcome() -> Value {
    let said = |content: &str| {
        json!({
            "object": "chat.completion", "model": "mock", "role": "assistant",
            "content": content, "finish_reason": "stop", "counted": true,
        })
    };
    let mut continued = said("Fine, thanks.");
    continued["same_thread"] = json!(true);
    let mut foreign = said("echo: c");
    foreign["new_thread"] = json!(true);
    json!({
        "misfits": [],
        "plain": said("Hello there."),
        "continued": continued,
        "streamed": {
            "first_role": "assistant", "text": "Streamed here.", "finish_reason": "stop",
            "usage_last": true, "one_id": true,
        },
        "foreign": foreign,
        "errors": {
            "temperature": [400, "temperature"],
            "tool_message": [400, "messages[1].role"],
            "unauthorized": 401
        }
    })
}

/// The event names of a stream, in order.
pub fn types(events: &[Sse]) -> Vec<String> {
    events.iter().map(|e| e.event.clone()).collect()
}

/// The `sequence_number`s of a stream, in order.
pub fn numbers(events: &[Sse]) -> Vec<u64> {
    events
        .iter()
        .map(|e| e.data["sequence_number"].as_u64().unwrap())
        .collect()
}

/// A mock model answering "Hello there." in two deltas, then echoing.
pub fn hello_model() -> MockModel {
    MockModel::start(json!({
        "replies": [{ "text": "Hello there.", "deltas": 2 }],
        "when_exhausted": "echo"
    }))
}
