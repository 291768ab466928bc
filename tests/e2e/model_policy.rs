//! The model policy end to end through `rein exec` against a real `rein mock-model`
//! server: thinking off means off (the request's flags, streamed reasoning dropped from
//! `--json` and the rollout), efforts as Codex takes them, the multimodal model for
//! turns that carry images, and the precedence of docs/model-policy.md, row by row.
#![allow(clippy::unwrap_used)]

use rein_test_support::exec as support;

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{json_lines, rein_in, MockModel};

/// A reply that thinks aloud before answering.
fn thinking_script() -> Value {
    json!({"replies": [{"reasoning": "SECRET-THOUGHTS about the answer", "text": "The answer."}]})
}

/// A `REIN_HOME` whose config puts `top` at the top level, selects provider `mock`
/// (speaking `wire`) and appends `tables`.
fn home(mock: &MockModel, wire: &str, top: &str, tables: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "model = \"mock\"\nmodel_provider = \"mock\"\n{top}\n\n[model_providers.mock]\n\
             base_url = \"{}\"\nwire_api = \"{wire}\"\nenv_key = \"MOCK_API_KEY\"\n{tables}\n",
            mock.base_url
        ),
    )
    .unwrap();
    dir
}

fn exec(home: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = rein_in(
        home,
        &[&["exec", "--json", "--skip-git-repo-check"], args].concat(),
    );
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn exec_ok(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Vec<Value> {
    let out = exec(home, args, env);
    assert!(
        out.status.success(),
        "rein exec {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_lines(&out.stdout)
}

/// Every rollout line under `home`'s sessions, as text.
fn rollout_text(home: &Path) -> String {
    fn walk(dir: &Path, out: &mut String) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                out.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut text = String::new();
    walk(home, &mut text);
    assert!(!text.is_empty(), "no rollout under {}", home.display());
    text
}

/// The model named by each step's fingerprint in the rollout, in order.
fn fingerprint_models(home: &Path) -> Vec<String> {
    rollout_text(home)
        .lines()
        .filter(|l| l.contains("\"fingerprint\""))
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            find_key(&v, "fingerprint").unwrap()["model"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

fn find_key<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(map) => map
            .get(key)
            .or_else(|| map.values().find_map(|x| find_key(x, key))),
        Value::Array(items) => items.iter().find_map(|x| find_key(x, key)),
        _ => None,
    }
}

#[test]
fn effort_none_sends_both_flags_and_streamed_reasoning_never_reaches_json_or_rollout() {
    let mock = MockModel::start(thinking_script());
    let home = home(&mock, "chat", "", "");
    let events = exec_ok(
        home.path(),
        &["-c", "model_reasoning_effort=\"none\"", "Think?"],
        &[],
    );
    let body = &mock.requests()[0];
    assert_eq!(body["enable_thinking"], json!(false));
    assert_eq!(
        body["chat_template_kwargs"],
        json!({"enable_thinking": false})
    );
    assert_eq!(body.get("reasoning_effort"), None, "{body}");
    let stdout = serde_json::to_string(&events).unwrap();
    assert!(!stdout.contains("SECRET-THOUGHTS"), "{stdout}");
    assert!(!stdout.contains("\"reasoning\""), "{stdout}");
    assert!(stdout.contains("The answer."), "{stdout}");
    let rollout = rollout_text(home.path());
    assert!(!rollout.contains("SECRET-THOUGHTS"), "{rollout}");
}

#[test]
fn with_another_effort_the_same_reasoning_is_shown_and_no_flag_is_sent() {
    let mock = MockModel::start(thinking_script());
    let home = home(&mock, "chat", "model_reasoning_effort = \"high\"", "");
    let events = exec_ok(home.path(), &["Think?"], &[]);
    let body = &mock.requests()[0];
    assert_eq!(body["reasoning_effort"], json!("high"));
    assert_eq!(body.get("enable_thinking"), None);
    assert_eq!(body.get("chat_template_kwargs"), None);
    let reasoning = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "reasoning")
        .unwrap();
    assert_eq!(
        reasoning["item"]["text"],
        json!("SECRET-THOUGHTS about the answer")
    );
}

#[test]
fn thinking_off_per_provider_chooses_the_flags() {
    for (mode, flag, template, effort) in [
        ("flag", Some(json!(false)), None, None),
        (
            "template",
            None,
            Some(json!({"enable_thinking": false})),
            None,
        ),
        ("none", None, None, Some(json!("none"))),
    ] {
        let mock = MockModel::start(thinking_script());
        let home = home(
            &mock,
            "chat",
            "model_reasoning_effort = \"none\"",
            &format!("thinking_off = \"{mode}\""),
        );
        let events = exec_ok(home.path(), &["Think?"], &[]);
        let body = &mock.requests()[0];
        assert_eq!(body.get("enable_thinking").cloned(), flag, "{mode}");
        assert_eq!(
            body.get("chat_template_kwargs").cloned(),
            template,
            "{mode}"
        );
        assert_eq!(body.get("reasoning_effort").cloned(), effort, "{mode}");
        assert!(!serde_json::to_string(&events)
            .unwrap()
            .contains("SECRET-THOUGHTS"));
    }
}

#[test]
fn responses_api_sends_effort_none_as_the_api_defines_it_and_drops_reasoning() {
    let mock = MockModel::start(thinking_script());
    let home = home(&mock, "responses", "model_reasoning_effort = \"none\"", "");
    let events = exec_ok(home.path(), &["Think?"], &[]);
    let body = &mock.requests()[0];
    assert_eq!(body["reasoning"], json!({"effort": "none"}));
    assert_eq!(body["include"], json!([]));
    assert_eq!(body.get("enable_thinking"), None);
    assert!(!serde_json::to_string(&events)
        .unwrap()
        .contains("SECRET-THOUGHTS"));
    assert!(!rollout_text(home.path()).contains("SECRET-THOUGHTS"));
}

#[test]
fn xhigh_is_taken_as_codex_takes_it() {
    let mock = MockModel::start(thinking_script());
    let home = home(&mock, "chat", "", "");
    exec_ok(
        home.path(),
        &["-c", "model_reasoning_effort=\"xhigh\"", "Think?"],
        &[],
    );
    assert_eq!(mock.requests()[0]["reasoning_effort"], json!("xhigh"));
}

#[test]
fn an_effort_the_catalog_does_not_list_is_refused_naming_the_allowed_ones() {
    let mock = MockModel::start(thinking_script());
    // Built-in knowledge: gpt-5 takes minimal, low, medium, high.
    let home_a = home(&mock, "chat", "", "");
    let out = exec(
        home_a.path(),
        &["-m", "gpt-5", "-c", "model_reasoning_effort=\"none\"", "hi"],
        &[],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "does not support reasoning effort `none` (it supports: minimal, low, medium, high)"
        ),
        "{stderr}"
    );
    // A model's own table.
    let home_b = home(
        &mock,
        "chat",
        "model_reasoning_effort = \"xhigh\"",
        "[models.mock]\nreasoning_efforts = [\"none\", \"low\"]",
    );
    let out = exec(home_b.path(), &["hi"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("(it supports: none, low)"), "{stderr}");
    assert!(mock.requests().is_empty(), "refused before any request");
}

fn image(dir: &Path) -> String {
    let path = dir.join("dot.png");
    std::fs::write(&path, b"\x89PNG fake").unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_turn_with_an_image_goes_to_the_multimodal_model_and_its_fingerprint_says_so() {
    let mock = MockModel::start(json!({"replies": [{"text": "A dot."}, {"text": "Plain."}]}));
    let home = home(
        &mock,
        "chat",
        "multimodal_model = \"mock-vl\"",
        "[models.mock]\ninput_modalities = [\"text\"]",
    );
    let work = tempfile::tempdir().unwrap();
    exec_ok(
        home.path(),
        &["-i", &image(work.path()), "What is this?"],
        &[],
    );
    exec_ok(home.path(), &["No image here."], &[]);
    let models: Vec<Value> = mock.requests().iter().map(|r| r["model"].clone()).collect();
    assert_eq!(models, [json!("mock-vl"), json!("mock")]);
    let mut fingerprints = fingerprint_models(home.path());
    fingerprints.sort();
    assert_eq!(fingerprints, ["mock", "mock-vl"]);
}

#[test]
fn an_image_and_no_model_that_reads_it_is_an_error_naming_the_setting() {
    let mock = MockModel::start(json!({"replies": [{"text": "never"}]}));
    let home = home(
        &mock,
        "chat",
        "",
        "[models.mock]\ninput_modalities = [\"text\"]",
    );
    let work = tempfile::tempdir().unwrap();
    let out = exec(
        home.path(),
        &["-i", &image(work.path()), "What is this?"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("set `multimodal_model`"), "{stdout}");
    assert!(stdout.contains("turn.failed"), "{stdout}");
    assert!(mock.requests().is_empty(), "no request was sent");
}

/// A chat home with `top` and `tables`, plus `[profiles.p]` (selected) when given.
fn layered_home(
    mock: &MockModel,
    top: &str,
    tables: &str,
    profile_body: Option<&str>,
) -> tempfile::TempDir {
    match profile_body {
        None => home(mock, "chat", top, tables),
        Some(p) => home(
            mock,
            "chat",
            &format!("{top}\nprofile = \"p\""),
            &format!("{tables}\n[profiles.p]\n{p}\n"),
        ),
    }
}

/// The model of the first request a run sends, with `top` in the file, `profile_body`
/// as `[profiles.p]` (selected when given), `env` and `args`.
fn model_sent(top: &str, profile_body: Option<&str>, env: &[(&str, &str)], args: &[&str]) -> Value {
    let mock = MockModel::start(thinking_script());
    let home = layered_home(&mock, top, "", profile_body);
    exec_ok(home.path(), &[args, &["hi"]].concat(), env);
    mock.requests()[0].clone()
}

#[test]
fn precedence_model_request_env_profile_file_default() {
    // The file's `model = "mock"` is the "config" layer in every case.
    let p = Some("model = \"from-profile\"");
    let env = [("REIN_MODEL", "from-env")];
    assert_eq!(
        model_sent("", p, &env, &["-m", "from-flag"])["model"],
        "from-flag"
    );
    assert_eq!(model_sent("", p, &env, &[])["model"], "from-env");
    assert_eq!(model_sent("", p, &[], &[])["model"], "from-profile");
    assert_eq!(model_sent("", None, &[], &[])["model"], "mock");
}

#[test]
fn precedence_effort_env_profile_file() {
    let p = Some("model_reasoning_effort = \"low\"");
    let file = "model_reasoning_effort = \"medium\"";
    let env = [("REIN_REASONING_EFFORT", "xhigh")];
    assert_eq!(model_sent(file, p, &env, &[])["reasoning_effort"], "xhigh");
    assert_eq!(model_sent(file, p, &[], &[])["reasoning_effort"], "low");
    assert_eq!(
        model_sent(file, None, &[], &[])["reasoning_effort"],
        "medium"
    );
    // Built-in default: no effort sent at all.
    assert_eq!(model_sent("", None, &[], &[]).get("reasoning_effort"), None);
}

#[test]
fn precedence_provider_env_profile_file() {
    let a = MockModel::start(thinking_script());
    let b = MockModel::start(thinking_script());
    let c = MockModel::start(thinking_script());
    let providers = format!(
        "[model_providers.b]\nbase_url = \"{}\"\nwire_api = \"chat\"\n\
         [model_providers.c]\nbase_url = \"{}\"\nwire_api = \"chat\"\n",
        b.base_url, c.base_url
    );
    let with_profile = home(
        &a,
        "chat",
        "profile = \"p\"",
        &format!("{providers}[profiles.p]\nmodel_provider = \"b\"\n"),
    );
    exec_ok(
        with_profile.path(),
        &["hi"],
        &[("REIN_MODEL_PROVIDER", "c")],
    );
    assert_eq!(
        (a.requests().len(), b.requests().len(), c.requests().len()),
        (0, 0, 1)
    );
    exec_ok(with_profile.path(), &["hi"], &[]);
    assert_eq!(
        (a.requests().len(), b.requests().len(), c.requests().len()),
        (0, 1, 1)
    );
    let file_only = home(&a, "chat", "", &providers);
    exec_ok(file_only.path(), &["hi"], &[]);
    assert_eq!(
        (a.requests().len(), b.requests().len(), c.requests().len()),
        (1, 1, 1)
    );
}

/// The model the image turn's request went to.
fn multimodal_sent(top: &str, profile_body: Option<&str>, env: &[(&str, &str)]) -> Value {
    let mock = MockModel::start(json!({"replies": [{"text": "A dot."}]}));
    let tables = "[models.mock]\ninput_modalities = [\"text\"]";
    let home = layered_home(&mock, top, tables, profile_body);
    let work = tempfile::tempdir().unwrap();
    exec_ok(home.path(), &["-i", &image(work.path()), "What?"], env);
    mock.requests()[0]["model"].clone()
}

#[test]
fn precedence_multimodal_env_profile_file() {
    let file = "multimodal_model = \"vl-file\"";
    let p = Some("multimodal_model = \"vl-profile\"");
    let env = [("REIN_MULTIMODAL_MODEL", "vl-env")];
    assert_eq!(multimodal_sent(file, p, &env), "vl-env");
    assert_eq!(multimodal_sent(file, p, &[]), "vl-profile");
    assert_eq!(multimodal_sent(file, None, &[]), "vl-file");
}

/// The model the request after a failed one went to (the fallback).
fn fallback_sent(top: &str, profile_body: Option<&str>, env: &[(&str, &str)]) -> Value {
    let mock = MockModel::start(json!({"replies": [
        {"fault": {"type": "http_error", "status": 503, "message": "down"}},
        {"text": "From the fallback."}
    ]}));
    let tables = "request_max_retries = 0\nstream_max_retries = 0";
    let home = layered_home(&mock, top, tables, profile_body);
    exec_ok(home.path(), &["hi"], env);
    let requests = mock.requests();
    assert_eq!(requests[0]["model"], "mock");
    requests[1]["model"].clone()
}

#[test]
fn precedence_fallback_env_profile_file() {
    let file = "fallback_model = \"fb-file\"";
    let p = Some("fallback_model = \"fb-profile\"");
    let env = [("REIN_FALLBACK_MODEL", "fb-env")];
    assert_eq!(fallback_sent(file, p, &env), "fb-env");
    assert_eq!(fallback_sent(file, p, &[]), "fb-profile");
    assert_eq!(fallback_sent(file, None, &[]), "fb-file");
}
