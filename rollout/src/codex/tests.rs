//! The Codex importer against real Codex 0.169 rollouts in `rollout-fixtures/codex/`
//! (plain, tool call, interrupted, forks) and a synthetic compaction.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use pretty_assertions::assert_eq;
use rein_protocol::{AgentStatus, EventMsg, Item, ThreadId, TurnAbortReason};

use super::import_codex_rollout;
use crate::{fork_events, RolloutStore};
use rein_core::store::DiagnosticKind;
use rein_core::thread::state::{ThreadState, TurnStatus};

fn fixture(thread: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../rollout-fixtures/codex");
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(thread))
        .unwrap()
}

fn user_texts(state: &ThreadState) -> Vec<String> {
    state
        .history
        .iter()
        .filter(|i| matches!(i.as_ref(), Item::UserMessage { .. }))
        .filter_map(|i| i.message_text())
        .collect()
}

#[test]
fn every_fixture_imports_cleanly_and_folds() {
    for id in ["816c", "8553", "8b8e", "98e6", "9c0f", "a170"] {
        let loaded = import_codex_rollout(&fixture(id)).unwrap();
        let corrupt: Vec<_> = loaded
            .diagnostics
            .iter()
            .filter(|d| !matches!(d.kind, DiagnosticKind::UnknownLineType(_)))
            .collect();
        assert!(corrupt.is_empty(), "{id}: {corrupt:?}");
        assert!(matches!(
            loaded.events[0].msg,
            EventMsg::ThreadConfigured { .. }
        ));
        let seqs: Vec<u64> = loaded.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (0..loaded.events.len() as u64).collect::<Vec<_>>());
        let state = ThreadState::from_events(&loaded.events);
        assert_eq!(state.thread_id, Some(loaded.meta.thread_id));
        assert_eq!(state.settings.as_ref().unwrap().model, "gpt-5.5");
        assert_eq!(loaded.meta.model, "gpt-5.5");
        assert_eq!(state.status, AgentStatus::Completed, "{id}");
        assert!(state.is_idle());
    }
}

#[test]
fn tool_call_and_full_output_are_kept() {
    let loaded = import_codex_rollout(&fixture("8553")).unwrap();
    let state = ThreadState::from_events(&loaded.events);
    let call = state
        .history
        .iter()
        .find_map(|i| match i.as_ref() {
            Item::ToolCall {
                id,
                call_id,
                name,
                arguments,
            } => Some((
                id.0.clone(),
                call_id.clone(),
                name.clone(),
                arguments.clone(),
            )),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        call,
        (
            "fc_mock_2_0".to_owned(),
            "call_mock_2_0".to_owned(),
            "exec_command".to_owned(),
            "{\"cmd\": \"echo hello-from-tool && pwd\", \"yield_time_ms\": 1000}".to_owned()
        )
    );
    let output = state
        .history
        .iter()
        .find_map(|i| match i.as_ref() {
            Item::ToolOutput {
                call_id, output, ..
            } if call_id == "call_mock_2_0" => Some(output.clone()),
            _ => None,
        })
        .unwrap();
    assert!(output.ends_with("Output:\nhello-from-tool\n/home/dev/demo/work\n"));
    assert_eq!(state.usage.total_tokens, 19_482);
    assert_eq!(
        state.last_agent_message(),
        Some("The command printed hello-from-tool.")
    );
    assert_eq!(state.turns.len(), 1);
}

#[test]
fn codex_fork_includes_the_parent_history_before_its_own() {
    let loaded = import_codex_rollout(&fixture("8b8e")).unwrap();
    let parent: ThreadId = "01a22a74-816c-7bf0-bd41-5b49f30ed77c".parse().unwrap();
    assert_eq!(loaded.meta.forked_from, Some(parent));
    let state = ThreadState::from_events(&loaded.events);
    assert_eq!(state.forked_from, Some(parent));
    let texts = user_texts(&state);
    let hello = texts.iter().position(|t| t == "Say hello.").unwrap();
    let fork = texts
        .iter()
        .position(|t| t == "Continue in the fork.")
        .unwrap();
    assert!(hello < fork);
    assert_eq!(state.turns.len(), 2);
    assert!(loaded
        .events
        .iter()
        .all(|e| e.thread_id == loaded.meta.thread_id));
}

#[test]
fn codex_interrupted_turn_imports_as_aborted() {
    let loaded = import_codex_rollout(&fixture("9c0f")).unwrap();
    let state = ThreadState::from_events(&loaded.events);
    assert_eq!(state.turns.len(), 2);
    assert_eq!(
        state.turns[0].status,
        TurnStatus::Aborted(TurnAbortReason::Interrupted)
    );
    assert_eq!(state.turns[1].status, TurnStatus::Completed);
}

#[test]
fn compacted_line_replaces_history() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("rollout-2026-11-30T03-16-48-01a22a74-816c-7bf0-bd41-5b49f30ed77d.jsonl");
    let lines = [
        r#"{"timestamp":"2026-11-30T03:16:48.000Z","type":"session_meta","payload":{"id":"01a22a74-816c-7bf0-bd41-5b49f30ed77d","cwd":"/w","model_provider":"openai"}}"#,
        r#"{"timestamp":"2026-11-30T03:16:48.001Z","type":"turn_context","payload":{"model":"m1","cwd":"/w","approval_policy":"on-request","sandbox_policy":{"type":"workspace-write"}}}"#,
        r#"{"timestamp":"2026-11-30T03:16:48.002Z","type":"event_msg","payload":{"type":"task_started","turn_id":"01a22a74-818a-7fe0-8da3-2cfe757e3987"}}"#,
        r#"{"timestamp":"2026-11-30T03:16:48.003Z","type":"response_item","payload":{"type":"message","id":"u1","role":"user","content":[{"type":"input_text","text":"long story"}]}}"#,
        r#"{"timestamp":"2026-11-30T03:16:48.004Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"01a22a74-818a-7fe0-8da3-2cfe757e3987"}}"#,
        r#"{"timestamp":"2026-11-30T03:16:48.005Z","type":"compacted","payload":{"message":"s","replacement_history":[{"type":"message","id":"c1","role":"user","content":[{"type":"input_text","text":"summary"}]}]}}"#,
        r#"{"timestamp":"2026-11-30T03:16:48.006Z","type":"response_item","payload":{"type":"web_search_call","id":"w"}}"#,
        r#"{"timestamp":"2026-11-30T03:16:48.007Z","type":"response_item","payload":{"type":"message","id":"u2","role"#,
    ];
    std::fs::write(&path, lines.join("\n")).unwrap();
    let loaded = import_codex_rollout(&path).unwrap();
    let state = ThreadState::from_events(&loaded.events);
    assert_eq!(user_texts(&state), vec!["summary".to_owned()]);
    let settings = state.settings.unwrap();
    assert_eq!(settings.model, "m1");
    assert_eq!(
        settings.approval_policy,
        rein_protocol::ApprovalPolicy::OnRequest
    );
    let kinds: Vec<_> = loaded
        .diagnostics
        .iter()
        .map(|d| (d.line, d.kind.clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (
                7,
                DiagnosticKind::UnknownLineType("response_item:web_search_call".into())
            ),
            (8, DiagnosticKind::TornLastLine),
        ]
    );
}

#[test]
fn imported_thread_persists_resumes_and_forks_in_rein() {
    let home = tempfile::tempdir().unwrap();
    let store = RolloutStore::new(home.path()).with_durability(crate::Durability::Never);
    let loaded = import_codex_rollout(&fixture("98e6")).unwrap();
    let mut writer = store.create(&loaded.meta).unwrap();
    for event in &loaded.events {
        writer.record(event).unwrap();
    }
    writer.sync().unwrap();
    drop(writer);
    let back = store.load(loaded.meta.thread_id).unwrap();
    assert_eq!(back.events, loaded.events);
    let forked = fork_events(&back.events, Some(0), ThreadId::new()).unwrap();
    let state = ThreadState::from_events(&forked);
    assert_eq!(state.turns.len(), 1);
    assert_eq!(state.forked_from, Some(loaded.meta.thread_id));
}
