//! Hostile inputs against the real `rein app-server`: a workspace full of FIFOs and
//! devices, requests nested past every limit, lenient spellings, huge values, a client that
//! pipelines a thousand requests, and one that stops reading while twenty threads
//! stream. None of them takes the server down or loses what was recorded; each test ends
//! with the server still answering and exiting cleanly on stdin EOF.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;
use rein_test_support::fs_events;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use pretty_assertions::assert_eq;
use rein_core::tools::testing::{make_fifo, EndlessFifo};
use serde_json::{json, Value};
use support::{home_for, method, rein, AppServer, CodexSchema, MockModel};

fn text_input(text: &str) -> Value {
    json!([{ "type": "text", "text": text, "text_elements": [] }])
}

fn started(model: &MockModel) -> (AppServer, tempfile::TempDir) {
    let home = home_for(model);
    let mut server = AppServer::start(home.path(), &[]);
    assert!(server.initialize().get("result").is_some());
    (server, home)
}

/// The model reads an idle FIFO, a FIFO fed an endless line, a link to /dev/zero and a
/// 3 GiB file: each call answers at once with what the file is, the turn completes, the
/// next turn works, and stdin EOF still ends the server.
#[test]
fn read_file_on_fifos_and_devices_answers_and_the_server_lives_on() {
    let ws = tempfile::tempdir().unwrap();
    make_fifo(&ws.path().join("idle.fifo"));
    let _fed = EndlessFifo::start(&ws.path().join("fed.fifo"));
    std::os::unix::fs::symlink("/dev/zero", ws.path().join("zero")).unwrap();
    let huge = std::fs::File::create(ws.path().join("huge.txt")).unwrap();
    huge.set_len(3 << 30).unwrap();
    let reads: Vec<Value> = ["idle.fifo", "fed.fifo", "zero", "huge.txt"]
        .iter()
        .map(|p| json!({ "name": "read_file", "arguments": { "path": p } }))
        .collect();
    let model = MockModel::start(json!({
        "replies": [{ "tool_calls": reads }, { "text": "looked" }],
        "when_exhausted": "echo"
    }));
    let (mut s, _home) = started(&model);
    let thread = s.start_thread(json!({ "cwd": ws.path(), "approvalPolicy": "never" }));
    s.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("read them") }),
    );
    let seen = s.until(|m| method(m) == "turn/completed");
    assert_eq!(
        seen.last().unwrap()["params"]["turn"]["status"],
        "completed",
        "{:#}",
        seen.last().unwrap()
    );
    let outputs = model.requests()[1].to_string();
    for expected in [
        "idle.fifo is a FIFO, not a regular file",
        "fed.fifo is a FIFO, not a regular file",
        "zero is a character device, not a regular file",
        "huge.txt is a binary file",
    ] {
        assert!(outputs.contains(expected), "{expected}: {outputs}");
    }
    s.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("still alive?") }),
    );
    let seen = s.until(|m| method(m) == "turn/completed");
    assert_eq!(
        seen.last().unwrap()["params"]["turn"]["items"][0]["text"],
        "echo: still alive?"
    );
    assert!(s.finish().success());
}

/// `levels` nested objects: `{"a":{"a":...{}}}`.
fn nested_object(levels: usize) -> Value {
    let mut v = json!({});
    for _ in 1..levels {
        v = json!({ "a": v });
    }
    v
}

/// The nesting limit is checked where requests come in: just under it a turn's
/// outputSchema is recorded and read back after a restart; over it (even past the JSON
/// parser's own limit) the request is refused -32602 under its own id.
#[test]
fn nesting_under_the_limit_round_trips_and_over_it_is_refused_with_the_id() {
    const MAX_NESTING: usize = 64;
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut s = AppServer::start(home.path(), &[]);
    s.initialize();
    let thread = s.start_thread(json!({ "cwd": cwd.path() }));
    // The message, its params, then the schema: the deepest schema allowed.
    let schema = nested_object(MAX_NESTING - 2);
    let too_deep = s.call(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("x"),
                "outputSchema": nested_object(MAX_NESTING - 1) }),
    );
    assert_eq!(too_deep["error"]["code"], -32602, "{too_deep}");
    assert!(too_deep["id"].is_i64());
    // Past serde_json's 128 levels: still our refusal, under the request's id.
    let line = format!(
        "{{\"id\":\"deep\",\"method\":\"turn/start\",\"params\":{{\"x\":{}1{}}}}}\n",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    s.send_raw(line.as_bytes());
    let answer = s.recv();
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!("deep"), json!(-32602))
    );
    s.send_raw(b"{\"id\":null,\"method\":\"account/read\"}\n");
    let answer = s.recv();
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (Value::Null, json!(-32600))
    );
    s.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("deep schema"), "outputSchema": schema }),
    );
    let seen = s.until(|m| method(m) == "turn/completed");
    assert_eq!(
        seen.last().unwrap()["params"]["turn"]["status"],
        "completed"
    );
    assert_eq!(
        model.requests().pop().unwrap()["text"]["format"]["schema"],
        schema
    );
    assert!(s.finish().success());

    let mut again = AppServer::start(home.path(), &[]);
    again.initialize();
    let resumed = again.call("thread/resume", json!({ "threadId": thread }));
    let turns = resumed["result"]["thread"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1, "{resumed:#}");
    let texts: Vec<&Value> = turns[0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i.get("text"))
        .collect();
    assert_eq!(texts, [&json!("echo: deep schema")]);
    assert!(again.finish().success());
}

/// Spellings serde or uuid would accept but rein does not mean: each is -32602.
#[test]
fn lenient_spellings_are_refused() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let (mut s, _home) = started(&model);
    let cwd = tempfile::tempdir().unwrap();
    let thread = s.start_thread(json!({ "cwd": cwd.path(), "ephemeral": true }));
    let code = |m: &Value| m["error"]["code"].clone();

    let array = s.call("thread/start", json!([]));
    assert_eq!(code(&array), -32602, "{array}");
    let array = s.call("thread/loaded/list", json!([]));
    assert_eq!(code(&array), -32602, "{array}");
    let upper = thread.to_uppercase();
    let simple = thread.replace('-', "");
    for spelling in [
        format!("{{{thread}}}"),
        format!("urn:uuid:{thread}"),
        simple,
        upper,
    ] {
        let r = s.call(
            "turn/start",
            json!({ "threadId": spelling, "input": text_input("x") }),
        );
        assert_eq!(code(&r), -32602, "{spelling}: {r}");
        assert_eq!(r["error"]["data"]["field"], "threadId");
        let r = s.call("thread/unsubscribe", json!({ "threadId": spelling }));
        assert_eq!(code(&r), -32602, "{spelling}: {r}");
    }
    let garbage = s.call("thread/unsubscribe", json!({ "threadId": "garbage" }));
    assert_eq!(code(&garbage), -32602);
    let unknown = s.call(
        "thread/unsubscribe",
        json!({ "threadId": "01a22a74-0000-7000-8000-000000000000" }),
    );
    assert_eq!(unknown["result"], json!({ "status": "notLoaded" }));
    let schema = s.call(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("x"), "outputSchema": "a string" }),
    );
    assert_eq!(code(&schema), -32602);
    assert_eq!(schema["error"]["data"]["field"], "outputSchema");
    // The thread is untouched by all that: a normal turn runs.
    s.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("fine") }),
    );
    let seen = s.until(|m| method(m) == "turn/completed");
    assert_eq!(
        seen.last().unwrap()["params"]["turn"]["items"][0]["text"],
        "echo: fine"
    );
    assert!(s.finish().success());
}

/// A huge value is answered in a few hundred bytes and never recorded.
#[test]
fn huge_values_are_not_echoed_nor_recorded() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let (mut s, home) = started(&model);
    let cwd = tempfile::tempdir().unwrap();
    // The 10 MB model name; 1 MB is as telling for the rest (and quicker).
    let huge = "m".repeat(10 * 1024 * 1024);
    let big = "b".repeat(1024 * 1024);
    let thread = s.start_thread(json!({ "cwd": cwd.path() }));
    let answers = [
        s.call("thread/start", json!({ "cwd": cwd.path(), "model": huge })),
        s.call(
            "turn/start",
            json!({ "threadId": thread, "input": text_input("x"), "model": big }),
        ),
        s.call(
            "turn/interrupt",
            json!({ "threadId": thread, "turnId": big }),
        ),
        s.call(&big, json!({})),
        s.call(
            "thread/name/set",
            json!({ "threadId": thread, "name": big }),
        ),
        s.call("thread/start", json!({ big.clone(): 1, "cwd": 5 })),
    ];
    for answer in &answers {
        let size = answer.to_string().len();
        assert!(
            size < 2048,
            "an answer of {size} bytes: {:.300}",
            answer.to_string()
        );
        assert!(answer.get("error").is_some(), "{:.300}", answer.to_string());
    }
    assert!(s.finish().success());
    let recorded = walk_bytes(&home.path().join("sessions"));
    assert!(recorded < 1024 * 1024, "{recorded} bytes recorded");
}

fn walk_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .map(|e| e.unwrap())
        .map(|e| {
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                walk_bytes(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

/// A client that writes 1,000 requests before reading anything gets 1,000 answers (on
/// stdio the server stops reading while busy instead of answering "overloaded").
#[test]
fn a_pipelining_stdio_client_gets_every_answer() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let (mut s, _home) = started(&model);
    // Written without reading in between (the harness's reader only queues what comes).
    for i in 0..1000 {
        s.request_with_id(json!(format!("p{i}")), "account/read", json!({}));
    }
    for i in 0..1000 {
        let m = s.recv();
        assert_eq!(m["id"], format!("p{i}"), "{m}");
        assert_eq!(m["result"]["requiresOpenaiAuth"], false, "{m}");
    }
    assert!(s.finish().success());
}

/// 20 threads stream 2,500 deltas each while the client reads nothing; then it reads.
/// Every thread's text arrives whole and in order, and what the server held for the
/// stalled client was bounded: every delta it read was held somewhere while it stalled
/// (the turns had all ended), and it read far fewer deltas than were streamed, so the
/// rest were merged into those held rather than each kept. Unbounded queues would hold
/// all 50,000; the kernel's queue for a subscriber holds individual events only up to
/// 256 KiB (about 470 of these 400-byte deltas), then merges a continuing delta into the
/// last one, and the connection's outbound queue holds 4,096 messages, so about 14,000
/// arrive. The server's peak memory is checked too, as a guard. (This test streamed a
/// million 6-byte deltas and told bounded from unbounded by memory alone, 190 against
/// 444 MiB: minutes of a debug server's time under load, for the same claim.)
#[test]
fn a_stalled_client_costs_bounded_memory_and_loses_no_delta() {
    const THREADS: usize = 20;
    const DELTAS: usize = 2_500;
    const SEGMENT: usize = 400;
    let segment = |i: usize| {
        let mut s = format!("<{i:05}>");
        s.push_str(&"x".repeat(SEGMENT - s.len()));
        s
    };
    let text: String = (0..DELTAS).map(segment).collect();
    let model = MockModel::start(json!({
        "replies": [{ "text": text, "deltas": DELTAS }],
        "when_exhausted": "repeat_last"
    }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut child = rein()
        .arg("app-server")
        .env("REIN_HOME", home.path())
        .env("MOCK_API_KEY", "test-key")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let schema = CodexSchema::load();
    let mut methods = std::collections::HashMap::new();
    let mut read = |methods: &std::collections::HashMap<String, String>| -> Value {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout closed");
        let m: Value = serde_json::from_str(&line).unwrap();
        schema.check(&m, methods);
        m
    };
    let mut send = |id: String,
                    method: &str,
                    params: Value,
                    methods: &mut std::collections::HashMap<String, String>| {
        methods.insert(json!(id).to_string(), method.to_owned());
        let line = format!(
            "{}\n",
            json!({ "id": id, "method": method, "params": params })
        );
        stdin.write_all(line.as_bytes()).unwrap();
    };
    send(
        "init".into(),
        "initialize",
        json!({ "clientInfo": { "name": "t", "version": "1" } }),
        &mut methods,
    );
    assert!(read(&methods).get("result").is_some());
    let mut threads = Vec::new();
    for i in 0..THREADS {
        send(
            format!("t{i}"),
            "thread/start",
            json!({ "cwd": cwd.path() }),
            &mut methods,
        );
        let answer = read(&methods);
        threads.push(
            answer["result"]["thread"]["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
        assert_eq!(method(&read(&methods)), "thread/started");
    }
    for (i, thread) in threads.iter().enumerate() {
        send(
            format!("s{i}"),
            "turn/start",
            json!({ "threadId": thread, "input": text_input("go") }),
            &mut methods,
        );
    }
    // The stall: read nothing until every turn is complete in its rollout (the kernel
    // never waits for a client).
    let sessions = home.path().join("sessions");
    assert!(
        fs_events::wait_until_files_show(home.path(), Duration::from_secs(600), || {
            completed_rollouts(&sessions) >= THREADS
        }),
        "the turns did not complete"
    );
    let mut texts: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut completed = 0;
    let mut answered = 0;
    let mut delta_messages = 0;
    while completed < THREADS || answered < THREADS {
        let m = read(&methods);
        match method(&m) {
            "item/agentMessage/delta" => {
                delta_messages += 1;
                texts
                    .entry(m["params"]["threadId"].as_str().unwrap().to_owned())
                    .or_default()
                    .push_str(m["params"]["delta"].as_str().unwrap());
            }
            "turn/completed" => completed += 1,
            "" if m["id"].as_str().is_some_and(|id| id.starts_with('s')) => {
                assert!(m.get("result").is_some(), "{m}");
                answered += 1;
            }
            _ => {}
        }
    }
    let peak_kib = vm_hwm_kib(pid);
    drop(stdin);
    while read_to_end(&mut stdout) {}
    assert!(child.wait().unwrap().success());
    for thread in &threads {
        assert_eq!(
            texts.get(thread).map(String::len),
            Some(text.len()),
            "{thread}"
        );
        assert!(texts[thread] == text, "{thread}: the text differs");
    }
    eprintln!(
        "{delta_messages} delta messages for {} deltas; peak RSS of the server: {} MiB",
        THREADS * DELTAS,
        peak_kib / 1024
    );
    assert!(
        delta_messages < THREADS * DELTAS / 2,
        "{delta_messages} of {} deltas were held one by one for the stalled client",
        THREADS * DELTAS
    );
    assert!(
        peak_kib < 300 * 1024,
        "peak RSS {} MiB: events were buffered without bound",
        peak_kib / 1024
    );
}

fn read_to_end(stdout: &mut impl BufRead) -> bool {
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap_or(0) > 0
}

fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Rollouts under `dir` that record a completed turn.
fn completed_rollouts(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .map(|e| e.unwrap().path())
        .map(|p| {
            if p.is_dir() {
                completed_rollouts(&p)
            } else {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                usize::from(text.contains("\"type\":\"turn_completed\""))
            }
        })
        .sum()
}
