//! `rein replay` over sessions recorded by `rein exec` against a real `rein mock-model`:
//! an unchanged session replays identical (and its rollout is not touched); a model
//! override, a changed instructions file and a changed tool set are each caught at the
//! first step with a diff of that part; `--all` summarises a mixed set (identical,
//! differing, recorded without fingerprints, not replayable).
#![allow(clippy::unwrap_used)]

use rein_test_support::replay as support;

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use support::{call, home_for, record, record_ending, rollout_of, run as rein_in, MockModel};

#[test]
fn a_replay_is_identical_until_the_model_the_instructions_or_the_tools_change() {
    let mock = MockModel::start(json!({ "replies": [
        { "tool_calls": [call("call_echo", "shell", json!({ "command": ["echo", "hello"] }))] },
        { "tool_calls": [call("call_patch", "apply_patch", json!({
            "input": "*** Begin Patch\n*** Add File: notes.txt\n+note\n*** End Patch\n"
        }))] },
        { "text": "Notes made." }
    ] }));
    let home = home_for(&mock);
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let id = record(home.path(), &cwd, &[], "Make notes.");
    let rollout = rollout_of(home.path(), &id);
    let recorded = std::fs::read(&rollout).unwrap();

    // Unchanged: every step sends what it sent.
    let (code, stdout, stderr) = rein_in(home.path(), &["replay", &id]);
    assert_eq!(
        (code, stdout.as_str()),
        (0, "identical: 1 turns, 3 steps identical\n"),
        "{stderr}"
    );
    // The tools' recorded results were replayed: nothing ran again in the workspace.
    std::fs::remove_file(cwd.join("notes.txt")).unwrap();
    let (code, _, stderr) = rein_in(home.path(), &["replay", &id]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!cwd.join("notes.txt").exists());

    // Another model: caught at the first step.
    let (code, stdout, stderr) = rein_in(home.path(), &["replay", &id, "-c", "model=other"]);
    assert_eq!(
        (code, stdout.as_str()),
        (
            1,
            "differs at step 1 (turn 1, step 1 of the turn): model\n- mock\n+ other\n"
        ),
        "{stderr}"
    );

    // Fewer tools (no sub-agents): caught at the first step, naming what is gone.
    let (code, stdout, stderr) = rein_in(
        home.path(),
        &["replay", &id, "-c", "features.multi_agent=false"],
    );
    assert_eq!(
        (code, stdout.as_str()),
        (
            1,
            "differs at step 1 (turn 1, step 1 of the turn): tools\n\
             - spawn_agent (only in the recording)\n\
             - send_input (only in the recording)\n\
             - wait_agent (only in the recording)\n\
             - close_agent (only in the recording)\n\
             - resume_agent (only in the recording)\n\
             - list_agents (only in the recording)\n"
        ),
        "{stderr}"
    );

    // An instructions file appears in the configuration: caught at the first step, with
    // the text that changed; as JSON, the whole difference.
    std::fs::write(home.path().join("instructions.md"), "Be terse.\n").unwrap();
    let (code, stdout, stderr) = rein_in(
        home.path(),
        &[
            "replay",
            &id,
            "--json",
            "-c",
            "model_instructions_file=\"instructions.md\"",
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        report,
        json!({
            "turns": 1,
            "steps": 1,
            "fingerprinted": true,
            "difference": {
                "step": 1,
                "turn": 1,
                "step_in_turn": 1,
                "part": { "part": "instructions" },
                "diff": "--- recorded\n+++ replay\n@@ -0,0 +1 @@\n+Be terse.\n"
            }
        })
    );

    // A recording whose tool output was edited (a rollout file given by path): the
    // replay feeds the edited output, so the second step's input item 2 is not what the
    // recorded step sent.
    let edited = dir.path().join("edited.jsonl");
    let text: Vec<String> = String::from_utf8(recorded.clone())
        .unwrap()
        .lines()
        .map(|line| {
            if line.contains(r#""type":"tool_output""#) && line.contains("call_echo") {
                line.replace("hello", "bye")
            } else {
                line.to_owned()
            }
        })
        .collect();
    std::fs::write(&edited, text.join("\n") + "\n").unwrap();
    let (code, stdout, stderr) = rein_in(home.path(), &["replay", edited.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stdout.starts_with("differs at step 2 (turn 1, step 2 of the turn): input item 2\n"),
        "{stdout}"
    );
    // The recorded item no longer hashes to what was sent, so only its hash is shown.
    let (head, diff) = stdout.split_once("@@ -1 +1,6 @@\n").unwrap();
    assert_eq!(
        head,
        "differs at step 2 (turn 1, step 2 of the turn): input item 2\n--- recorded\n+++ replay\n"
    );
    assert!(diff.starts_with("-(item with hash "), "{diff}");
    assert!(
        diff.contains(r#"+  "output": "{\"output\":\"bye\\n\","#),
        "{diff}"
    );

    // Replaying never wrote to the session.
    assert_eq!(std::fs::read(&rollout).unwrap(), recorded);
}

/// A copy of a rein rollout under another thread id, cut before its turn ended.
fn unfinished_copy(source: &Path, old_id: &str) -> String {
    let new_id = "01a2ffff-0000-7000-8000-000000000001";
    let text = std::fs::read_to_string(source)
        .unwrap()
        .replace(old_id, new_id);
    let kept: Vec<&str> = text
        .lines()
        .take_while(|l| !l.contains("\"turn_completed\""))
        .collect();
    let name = source
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace(old_id, new_id);
    std::fs::write(
        source.parent().unwrap().join(name),
        format!("{}\n", kept.join("\n")),
    )
    .unwrap();
    new_id.to_owned()
}

#[test]
fn replay_all_summarises_a_mixed_set_of_sessions() {
    let mock = MockModel::start(json!({ "replies": [
        { "tool_calls": [call("call_a", "shell", json!({ "command": ["echo", "a"] }))] },
        { "text": "A done." },
        { "text": "B done." },
        { "fault": { "type": "http_error", "status": 400, "message": "bad input" } }
    ] }));
    let home = home_for(&mock);
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let same = record(home.path(), &cwd, &[], "Do A.");
    // Recorded without the sub-agent tools: today's configuration offers more.
    let fewer_tools = record(
        home.path(),
        &cwd,
        &["-c", "features.multi_agent=false"],
        "Do B.",
    );
    // A turn that failed replays too: its model fails the same way at the same step.
    let failed = record_ending(home.path(), &cwd, &[], "Do C.", 1);
    let unfinished = unfinished_copy(&rollout_of(home.path(), &same), &same);
    // A session written before rein recorded request fingerprints.
    let old = "01a2310d-b683-7557-9fe5-ac24f87e20a9";
    let fixture = format!(
        "{}/rollout-fixtures/rein-before-tool-facts/rollout-2026-12-01T10-01-52-{old}.jsonl",
        env!("CARGO_MANIFEST_DIR").trim_end_matches("/cli")
    );
    let day = home.path().join("sessions/2026/12/01");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::copy(&fixture, day.join(Path::new(&fixture).file_name().unwrap())).unwrap();

    let (code, stdout, stderr) = rein_in(home.path(), &["replay", "--all", "--json"]);
    assert_eq!(code, 1, "one session differs: {stderr}");
    let rows: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    let by_id = |id: &str| {
        rows.iter()
            .find(|r| r["session"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} missing from {rows:#?}"))
    };
    assert_eq!(rows.len(), 5, "{rows:#?}");
    assert_eq!(
        by_id(&failed),
        json!({ "session": failed, "result": "identical",
                "report": { "turns": 1, "steps": 1, "fingerprinted": true, "difference": null } })
    );
    assert_eq!(
        by_id(&same),
        json!({ "session": same, "result": "identical",
                "report": { "turns": 1, "steps": 2, "fingerprinted": true, "difference": null } })
    );
    let differs = by_id(&fewer_tools);
    assert_eq!(differs["result"], "differs");
    assert_eq!(differs["report"]["difference"]["step"], 1);
    assert_eq!(
        differs["report"]["difference"]["part"],
        json!({ "part": "tools" })
    );
    assert_eq!(
        by_id(&unfinished),
        json!({ "session": unfinished, "result": "not_replayable",
                "reason": "turn 1 never ended (the process stopped during it)" })
    );
    let old_row = by_id(old);
    assert_eq!(old_row["report"]["fingerprinted"], false, "{old_row:#}");

    // The table says the same for people, the unfingerprinted session included.
    let (code, stdout, _) = rein_in(home.path(), &["replay", "--all"]);
    assert_eq!(code, 1);
    let line = |id: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("{id} missing from\n{stdout}"))
            .to_owned()
    };
    assert_eq!(line(&same), format!("{same}  identical: 1 turns, 2 steps"));
    assert_eq!(
        line(&fewer_tools),
        format!("{fewer_tools}  differs at step 1: tools")
    );
    assert_eq!(
        line(&unfinished),
        format!("{unfinished}  not replayable: turn 1 never ended (the process stopped during it)")
    );
    assert!(line(old).contains("no request fingerprints"), "{stdout}");
}

#[test]
fn a_codex_rollout_given_by_path_replays_its_tool_calls_and_says_it_has_no_fingerprints() {
    let home = tempfile::tempdir().unwrap();
    let codex = format!(
        "{}/rollout-fixtures/codex/rollout-2026-11-30T03-16-49-01a22a74-8553-7920-92eb-58aedba48c24.jsonl",
        env!("CARGO_MANIFEST_DIR").trim_end_matches("/cli")
    );
    let (code, stdout, stderr) = rein_in(home.path(), &["replay", &codex]);
    // rein has no `exec_command` tool: the call that succeeded under Codex fails here.
    assert_eq!(code, 1, "{stderr}");
    let (head, rest) = stdout.split_once('\n').unwrap();
    assert_eq!(
        head,
        "differs at step 1 (turn 1, step 1 of the turn): tool calls"
    );
    assert!(
        rest.contains("-exec_command ") && rest.contains("→ ok"),
        "{rest}"
    );
    assert!(
        rest.contains("+exec_command ") && rest.contains("→ failed"),
        "{rest}"
    );
    assert!(rest.ends_with(
        "note: the recording has no request fingerprints (written before rein recorded them, \
         or imported from Codex): only tool calls were compared\n"
    ));
}
