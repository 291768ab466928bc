//! No input crashes `rein app-server` or stops it answering: a corpus of malformed,
//! mistyped, oversized and out-of-order messages, each answered with the right JSON-RPC
//! error, after which a normal turn still runs.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};

fn error_of(m: &Value) -> (Value, i64) {
    (
        m["id"].clone(),
        m["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not an error: {m}")),
    )
}

#[test]
fn bad_input_corpus_is_answered_and_the_server_keeps_working() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let mut s = AppServer::start(home.path(), &[]);

    let early = s.call("thread/start", json!({}));
    assert_eq!(error_of(&early), (json!(1), -32600));
    assert_eq!(early["error"]["message"], "Not initialized");
    assert!(s.initialize().get("result").is_some());
    let twice = s.initialize();
    assert_eq!(twice["error"]["message"], "Already initialized");

    // Lines that are not JSON at all, or not whole.
    for raw in [
        &b"this is not json\n"[..],
        b"{\"id\": 3, \"method\": \"thread/st\n",
        b"\x00\xff\xfe{\x01}\n",
        b"{\"id\":10,\"method\":\"account/read\",\"params\":{\"x\":\"\xff\"}}\n",
    ] {
        s.send_raw(raw);
        assert_eq!(error_of(&s.recv()), (Value::Null, -32700), "{raw:?}");
    }
    let deep = format!("{}\n", "[".repeat(100_000));
    s.send_raw(deep.as_bytes());
    assert_eq!(error_of(&s.recv()), (Value::Null, -32700));

    // Valid JSON that is not a request.
    for raw in [
        "[1,2,3]",
        "42",
        "\"hello\"",
        "{\"id\":{\"a\":1},\"method\":\"model/list\"}",
        "{}",
    ] {
        s.send_raw(format!("{raw}\n").as_bytes());
        assert_eq!(error_of(&s.recv()), (Value::Null, -32600), "{raw}");
    }
    s.send_raw(b"{\"id\":7,\"method\":7}\n");
    assert_eq!(error_of(&s.recv()), (json!(7), -32600));
    s.send_raw(b"{\"jsonrpc\":\"1.0\",\"id\":8,\"method\":\"account/read\"}\n");
    assert_eq!(error_of(&s.recv()), (json!(8), -32600));

    // Blank lines are skipped silently; an answer to a request never made is ignored.
    s.send_raw(b"\n   \n\r\n{\"id\":999,\"result\":{}}\n");

    // Wrong types and values name the field.
    let typed = s.call("thread/start", json!({ "cwd": 5 }));
    assert_eq!(typed["error"]["code"], -32602);
    assert_eq!(typed["error"]["data"]["field"], "cwd");
    let relative = s.call("thread/start", json!({ "cwd": "relative/dir" }));
    assert_eq!(relative["error"]["data"]["field"], "cwd");
    let array = s.call("model/list", json!([1]));
    assert_eq!(array["error"]["code"], -32602);
    let policy = s.call("thread/start", json!({ "approvalPolicy": "sometimes" }));
    assert_eq!(policy["error"]["data"]["field"], "approvalPolicy");
    let missing = s.call("turn/start", json!({ "input": [] }));
    assert_eq!(missing["error"]["data"]["field"], "threadId");

    let unknown = s.call("does/not/exist", json!({}));
    assert_eq!(unknown["error"]["code"], -32601);
    let no_thread = s.call(
        "turn/start",
        json!({ "threadId": "01a22a74-0000-7000-8000-000000000000", "input": [] }),
    );
    assert_eq!(no_thread["error"]["code"], -32600);

    // Duplicate ids: each request is answered, under the id it came with.
    s.request_with_id(json!("dup"), "account/read", json!({}));
    s.request_with_id(json!("dup"), "account/read", json!({}));
    for _ in 0..2 {
        let m = s.recv();
        assert_eq!(m["id"], "dup");
        assert_eq!(m["result"]["requiresOpenaiAuth"], false);
    }

    // A line over the default 16 MiB limit is refused and skipped, not buffered whole.
    let mut huge = b"{\"id\":11,\"method\":\"account/read\",\"params\":{\"pad\":\"".to_vec();
    huge.resize(17 * 1024 * 1024, b'a');
    huge.extend_from_slice(b"\"}}\n");
    s.send_raw(&huge);
    let too_long = s.recv();
    assert_eq!(error_of(&too_long), (Value::Null, -32600));
    assert!(too_long["error"]["message"]
        .as_str()
        .unwrap()
        .contains("exceeds"));

    // Empty input is refused, the thread survives it, and a real turn still runs.
    let cwd = tempfile::tempdir().unwrap();
    let thread = s.start_thread(json!({ "cwd": cwd.path() }));
    let empty = s.call("turn/start", json!({ "threadId": thread, "input": [] }));
    assert_eq!(empty["error"]["code"], -32602);
    s.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "still alive?" }] }),
    );
    let seen = s.until(|m| method(m) == "turn/completed");
    assert_eq!(
        seen.last().unwrap()["params"]["turn"]["items"][0]["text"],
        "echo: still alive?"
    );
    assert!(s.finish().success());
}

#[test]
fn a_kernel_that_cannot_start_answers_every_request_with_why() {
    // A config naming a provider without its key: the kernel cannot be built.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "model = \"m\"\nmodel_provider = \"p\"\n\n[model_providers.p]\nbase_url = \"http://127.0.0.1:9/v1\"\nwire_api = \"responses\"\nenv_key = \"REIN_TEST_KEY_THAT_IS_NOT_SET\"\n",
    )
    .unwrap();
    let mut s = AppServer::start(home.path(), &[]);
    let init = s.initialize();
    assert!(
        init.get("result").is_some(),
        "initialize needs only rein's home: {init}"
    );
    let refused = s.call("thread/start", json!({}));
    assert_eq!(refused["error"]["code"], -32603);
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("REIN_TEST_KEY_THAT_IS_NOT_SET"),
        "{message}"
    );
    assert!(s.finish().success());
}
