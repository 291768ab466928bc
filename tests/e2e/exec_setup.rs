//! `rein exec` setup against a real `rein mock-model` server: configuration, flags and
//! keys that choose the provider and model, and setup errors that must exit 1 with a
//! message naming what to fix.
#![allow(clippy::unwrap_used)]

use rein_test_support::exec as support;

use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::json;
use support::{json_lines, Home, MockModel};

fn hello_script() -> serde_json::Value {
    json!({"replies": [{"text": "Hello from the mock model.", "deltas": 3,
        "usage": {"input_tokens": 12, "cached_input_tokens": 2, "output_tokens": 5,
                  "reasoning_output_tokens": 0, "total_tokens": 17}}]})
}

#[test]
fn a_missing_api_key_fails_with_exit_1_and_names_the_variable() {
    let mock = MockModel::start(hello_script());
    let home = Home::new(&mock, "responses");
    let out = home
        .exec(&["--json", "hi"])
        .env_remove("MOCK_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("MOCK_API_KEY"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing on stdout: {:?}", out.stdout);
    assert!(mock.requests().is_empty());
}

#[test]
fn a_bad_config_fails_with_exit_1_and_names_the_file() {
    let mock = MockModel::start(hello_script());
    let home = Home::new(&mock, "responses");
    std::fs::write(home.path().join("config.toml"), "model = [unclosed\n").unwrap();
    let out = home.exec(&["hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("config.toml"), "{stderr}");
}

#[test]
fn sdk_config_keys_are_accepted_and_unsupported_ones_warned() {
    let mock = MockModel::start(hello_script());
    let home = Home::new(&mock, "responses");
    let out = home
        .exec(&[
            "--experimental-json",
            "--skip-git-repo-check",
            "--sandbox",
            "workspace-write",
            "--config",
            "approval_policy=\"never\"",
            "--config",
            "model_reasoning_effort=\"high\"",
            "--config",
            "web_search=\"disabled\"",
            "Say hello.",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: config key `web_search`"),
        "{stderr}"
    );
    assert!(!stderr.contains("approval_policy"), "{stderr}");
    assert_eq!(json_lines(&out.stdout).len(), 4);
}

#[test]
fn codex_api_key_and_openai_base_url_reach_the_openai_provider() {
    let mock = MockModel::start(hello_script());
    let home = tempfile::tempdir().unwrap();
    let out = support::rein()
        .args(["exec", "--json", "-c"])
        .arg(format!("openai_base_url=\"{}\"", mock.base_url))
        .arg("Say hello.")
        .env("REIN_HOME", home.path())
        .env("CODEX_API_KEY", "sdk-key")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        json_lines(&out.stdout)[2]["item"]["text"],
        "Hello from the mock model."
    );
}

#[test]
fn a_missing_cd_directory_or_image_is_a_setup_error() {
    let mock = MockModel::start(hello_script());
    let home = Home::new(&mock, "responses");
    for args in [
        vec!["-C", "/nonexistent/rein-test", "hi"],
        vec!["-i", "/nonexistent/rein-test.png", "hi"],
        vec!["-i", "notes.txt", "hi"],
    ] {
        let out = home.exec(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(!stderr.contains("Stack backtrace"), "{stderr}");
    }
    assert!(mock.requests().is_empty());
}

#[test]
fn model_and_profile_flags_choose_what_the_request_names() {
    let mock = MockModel::start(hello_script());
    let home = Home::new(&mock, "responses");
    let config = home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[profiles.fast]\nmodel = \"mock-fast\"\n");
    std::fs::write(&config, text).unwrap();
    for (args, model) in [
        (vec!["--json", "-m", "mock-large", "hi"], "mock-large"),
        (vec!["--json", "-p", "fast", "hi"], "mock-fast"),
    ] {
        let out = home.exec(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(mock.requests().last().unwrap()["model"], model, "{args:?}");
    }
    let out = home.exec(&["-p", "missing", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing"));
}

#[test]
fn an_unreadable_output_schema_is_a_setup_error() {
    let mock = MockModel::start(hello_script());
    let home = Home::new(&mock, "responses");
    let schema = home.path().join("schema.json");
    std::fs::write(&schema, "{ not json").unwrap();
    let out = home
        .exec(&["--output-schema", schema.to_str().unwrap(), "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not valid JSON"), "{stderr}");
    assert!(mock.requests().is_empty(), "nothing was sent");
}
