//! A hostile local web page and a hostile local process against
//! `rein app-server --listen ws://…`, through the real binary and real sockets: a foreign
//! `Origin`, a DNS-rebinding `Host`, no token (rein's own, generated into `$REIN_HOME`, is
//! required by default; `--no-auth` only on loopback), thousands of unfinished handshakes,
//! idle upgraded sockets, the connection cap, and running out of file descriptors.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;
use rein_test_support::ws_client;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{home_for, CodexSchema, MockModel};
use tungstenite::Message;
use ws_client::{serve, serve_as_given, server_command, start, Client};

fn echo_model() -> MockModel {
    MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }))
}

/// The HTTP status a refused upgrade got.
fn refused(result: Result<Client, tungstenite::Error>) -> u16 {
    match result {
        Err(tungstenite::Error::Http(resp)) => resp.status().as_u16(),
        Err(e) => panic!("expected an HTTP refusal, got {e}"),
        Ok(_) => panic!("the upgrade was accepted"),
    }
}

fn port(url: &str) -> &str {
    url.rsplit(':').next().unwrap()
}

/// What a browser page on `http://evil.example` sends, and what a page that rebound its
/// own name to 127.0.0.1 sends.
fn hostile_headers(url: &str) -> Vec<Vec<(String, String)>> {
    let rebound = format!("evil.example:{}", port(url));
    let own_origin = format!("http://127.0.0.1:{}", port(url));
    vec![
        vec![("origin".into(), "http://evil.example".into())],
        vec![("origin".into(), "null".into())],
        vec![("origin".into(), own_origin)],
        vec![("host".into(), rebound.clone())],
        vec![
            ("host".into(), rebound),
            ("origin".into(), "http://evil.example".into()),
        ],
    ]
}

fn try_headers(url: &str, token: Option<&str>, headers: &[(String, String)]) -> u16 {
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    refused(Client::connect_with_headers(url, token, &headers))
}

#[test]
fn websocket_requires_a_token_and_refuses_origins_and_foreign_hosts() {
    let model = echo_model();
    let home = home_for(&model);
    let schema = CodexSchema::load();
    let token_file = home.path().join("app-server-ws-token");
    let (server, url) = serve_as_given(home.path(), &[]);
    // rein's own token, made on this first start, private to the user.
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(token.len(), 64, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    assert_eq!(refused(Client::connect(&url, None)), 401);
    assert_eq!(refused(Client::connect(&url, Some("guess"))), 401);
    for headers in hostile_headers(&url) {
        assert_eq!(
            try_headers(&url, Some(&token), &headers),
            403,
            "{headers:?}"
        );
    }
    // The token, and `localhost` for the Host, get in.
    let mut client = Client::connect(&url, Some(&token)).unwrap();
    client.initialize(schema);
    let local = format!("localhost:{}", port(&url));
    let mut named = Client::connect_with_headers(&url, Some(&token), &[("host", &local)]).unwrap();
    named.initialize(schema);
    drop((client, named, server));

    // A later start keeps the token (a configured client keeps working).
    let (_server, url) = serve_as_given(home.path(), &[]);
    assert_eq!(refused(Client::connect(&url, None)), 401);
    Client::connect(&url, Some(&token))
        .unwrap()
        .initialize(schema);
}

#[test]
fn no_auth_is_loopback_only_and_still_refuses_browsers() {
    let model = echo_model();
    let home = home_for(&model);
    let schema = CodexSchema::load();
    let (_server, url) = serve(home.path(), &[]);
    Client::connect(&url, None).unwrap().initialize(schema);
    for headers in hostile_headers(&url) {
        assert_eq!(try_headers(&url, None, &headers), 403, "{headers:?}");
    }
    assert!(!home.path().join("app-server-ws-token").exists());

    // Beyond loopback a token is required: --no-auth is refused before anything listens.
    let out = support::rein()
        .args(["app-server", "--listen", "ws://0.0.0.0:0", "--no-auth"])
        .env("REIN_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "it listened: {:?}", out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--no-auth is refused on 0.0.0.0:0"),
        "{stderr}"
    );
}

/// Read from `socket` until the server closes it; false if it is still open after
/// `patience`.
fn closed_by_server(socket: &mut TcpStream, patience: Duration) -> bool {
    socket.set_read_timeout(Some(patience)).unwrap();
    let mut buf = [0u8; 512];
    loop {
        match socket.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[test]
fn unfinished_handshakes_and_idle_sockets_are_closed_and_capped() {
    const SOCKETS: usize = 4096;
    let model = echo_model();
    let home = home_for(&model);
    let schema = CodexSchema::load();
    let (server, url) = serve(
        home.path(),
        &["--handshake-timeout-ms", "500", "--max-connections", "64"],
    );
    let addr = url.trim_start_matches("ws://").to_owned();
    let partial = format!("GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\n");
    // An upgraded client that never sends a message holds a slot too, until it is closed.
    let mut idle = Client::connect(&url, None).unwrap();
    let started = Instant::now();
    let mut sockets: Vec<TcpStream> = (0..SOCKETS)
        .map(|i| {
            let mut s = TcpStream::connect(&addr).unwrap();
            // Half say nothing, half start a request and never finish it.
            if i % 2 == 1 {
                let _ = s.write_all(partial.as_bytes());
            }
            s
        })
        .collect();
    // One patience for them all: they time out together.
    let deadline = Instant::now() + support::PATIENCE;
    let held: Vec<usize> = sockets
        .iter_mut()
        .enumerate()
        .filter_map(|(i, s)| {
            let left = deadline.saturating_duration_since(Instant::now());
            (!closed_by_server(s, left.max(Duration::from_millis(1)))).then_some(i)
        })
        .collect();
    assert!(
        held.is_empty(),
        "{} of {SOCKETS} unfinished handshakes still held after {:?}",
        held.len(),
        started.elapsed()
    );
    match idle.ws.read() {
        Ok(Message::Close(_)) | Err(_) => {}
        Ok(other) => panic!("an idle client got {other:?}"),
    }
    drop(sockets);
    let fds = open_descriptors(server.0.id());
    assert!(fds < 64, "the server still holds {fds} descriptors");
    // The server still serves.
    let mut client = Client::connect(&url, None).unwrap();
    client.initialize(schema);
    let listed = client.call(schema, "thread/list", json!({}));
    assert!(listed.get("result").is_some(), "{listed}");
}

#[test]
fn running_out_of_descriptors_pauses_accepting_and_never_ends_the_server() {
    const LIMIT: u64 = 256;
    let model = echo_model();
    let home = home_for(&model);
    let schema = CodexSchema::load();
    let mut cmd = server_command(
        home.path(),
        &[
            "--no-auth",
            "--max-connections",
            "100000",
            "--handshake-timeout-ms",
            "600000",
        ],
    );
    cmd.stderr(Stdio::piped());
    // SAFETY: setrlimit only, in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = rustix::process::Rlimit {
                current: Some(LIMIT),
                maximum: Some(LIMIT),
            };
            rustix::process::setrlimit(rustix::process::Resource::Nofile, limit)
                .map_err(std::io::Error::from)
        });
    }
    let (mut server, url) = start(cmd);
    let mut stderr = BufReader::new(server.0.stderr.take().unwrap());
    // The kernel is ready (and has opened what it needs) before the flood.
    let mut client = Client::connect(&url, None).unwrap();
    client.initialize(schema);
    let addr = url.trim_start_matches("ws://").to_owned();
    let sockets: Vec<TcpStream> = (0..LIMIT as usize + 64)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    // The server says it is out of descriptors and pauses, rather than exiting.
    let mut line = String::new();
    loop {
        line.clear();
        let n = stderr.read_line(&mut line).unwrap();
        assert!(
            n > 0,
            "the server's stderr ended: {:?}",
            server.0.try_wait()
        );
        if line.contains("websocket accept") && line.contains("pausing") {
            break;
        }
    }
    assert!(line.contains("Too many open files"), "{line}");
    drop(sockets);
    // Once descriptors are free again, new clients are served and old ones kept.
    let mut fresh = Client::connect(&url, None).unwrap();
    fresh.initialize(schema);
    let cwd = tempfile::tempdir().unwrap();
    let started = fresh.call(schema, "thread/start", json!({ "cwd": cwd.path() }));
    assert!(started.get("result").is_some(), "{started}");
    let listed = client.call(schema, "thread/list", json!({}));
    assert!(listed.get("result").is_some(), "{listed}");
    assert!(server.0.try_wait().unwrap().is_none(), "the server exited");
}
