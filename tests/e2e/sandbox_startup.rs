//! Startup with the sandbox verdict cached under rein's home (issue 29, item 3): the
//! first `rein app-server` of a home probes the sandbox (confining a probe process) and
//! caches the verdict; the next one answers `initialize` from the cache, without probing
//! on the request path, and names the same sandbox. A damaged cache is probed again.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use rein_test_support::mock_model::rein_bin;
use serde_json::{json, Value};

/// Start `rein app-server` in `home`, answer one `initialize`, close stdin; the answer
/// and what the server logged.
fn initialize_once(home: &std::path::Path) -> (Value, String) {
    let mut child = Command::new(rein_bin())
        .arg("app-server")
        .env("REIN_HOME", home)
        .env("RUST_LOG", "rein_tools::sandbox=info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let init = json!({"id": 1, "method": "initialize", "params": {
        "clientInfo": {"name": "t", "title": null, "version": "0"}}});
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{init}").unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(stdin);
    let mut log = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(child.wait().unwrap().success(), "{log}");
    (serde_json::from_str(&line).unwrap(), log)
}

#[test]
fn the_second_start_answers_initialize_from_the_cached_verdict() {
    let home = tempfile::tempdir().unwrap();
    let (first, log) = initialize_once(home.path());
    assert!(log.contains("sandbox: probed (landlock)"), "{log}");
    assert!(home.path().join("cache/sandbox-verdict.json").is_file());

    let (second, log) = initialize_once(home.path());
    assert!(log.contains("sandbox: verdict read from"), "{log}");
    assert!(!log.contains("sandbox: probed"), "{log}");
    assert_eq!(
        second["result"]["reinSandbox"], first["result"]["reinSandbox"],
        "{second:#}"
    );
    assert_eq!(second["result"]["reinSandbox"]["mechanism"], "landlock");

    std::fs::write(home.path().join("cache/sandbox-verdict.json"), b"garbage").unwrap();
    let (_, log) = initialize_once(home.path());
    assert!(log.contains("sandbox: probed (landlock)"), "{log}");
}
