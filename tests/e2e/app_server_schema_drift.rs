//! The checked-in schema of the app-server messages in `schema/app-server/` must be what
//! the code generates (`rein app-server generate-json-schema` writes the same files).
//! After an intended change, regenerate with
//! `cargo run -p rein-cli -- app-server generate-json-schema --out schema/app-server`.
//! And the harness's check against Codex's schema refuses what Codex would not accept.

use std::path::PathBuf;

use rein_test_support::app_server as support;
use serde_json::json;

#[test]
fn checked_in_app_server_schema_matches_the_code() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schema/app-server");
    let rendered = rein_app_server_protocol::schema::rendered();
    for (name, generated) in &rendered {
        let path = dir.join(name);
        let on_disk = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{} is missing ({e}); regenerate the schema", path.display())
        });
        assert!(
            on_disk == *generated,
            "{} drifted from the code; run `cargo run -p rein-cli -- app-server generate-json-schema --out schema/app-server`",
            path.display()
        );
    }
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(
        files,
        rendered.len(),
        "schema/app-server holds files the code no longer generates"
    );
}

#[test]
fn the_schema_check_rejects_what_codex_would_not_accept() {
    let schema = support::CodexSchema::load();
    let methods = std::collections::HashMap::from([("1".to_owned(), "turn/start".to_owned())]);
    let bad = [
        json!({ "method": "turn/completed", "params": { "threadId": "t" } }),
        json!({ "method": "thread/status/changed", "params": { "threadId": "t", "status": { "type": "busy" } } }),
        json!({ "id": 1, "result": { "turn": { "id": "x", "items": [], "status": "running" } } }),
    ];
    for message in bad {
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            schema.check(&message, &methods)
        }));
        assert!(caught.is_err(), "accepted: {message}");
    }
    schema.check(
        &json!({ "id": 1, "result": { "turn": { "id": "x", "items": [], "status": "inProgress" } } }),
        &methods,
    );
}

#[test]
fn generate_json_schema_writes_the_checked_in_schema() {
    let out = tempfile::tempdir().unwrap();
    let status = support::rein()
        .args(["app-server", "generate-json-schema", "--out"])
        .arg(out.path())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let checked_in = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/app-server");
    for entry in std::fs::read_dir(&checked_in).unwrap() {
        let entry = entry.unwrap();
        let written = std::fs::read_to_string(out.path().join(entry.file_name())).unwrap();
        assert_eq!(written, std::fs::read_to_string(entry.path()).unwrap());
    }
}
