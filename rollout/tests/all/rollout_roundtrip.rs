//! Write → read round trips through real files: every event variant, blobs, resume fold,
//! fork at each turn, repair of a crashed turn.
#![allow(clippy::unwrap_used)]

use rein_test_support::rollout as support;

use std::collections::BTreeSet;

use pretty_assertions::assert_eq;
use rein_core::store::{ForkError, SessionMeta};
use rein_core::thread::state::fold_owned;
use rein_core::thread::state::{ThreadState, TurnStatus};
use rein_protocol::{
    AgentStatus, Event, EventMsg, Item, ItemId, ThreadId, ToolAction, ToolOutcome, TurnAbortReason,
    INTERRUPTION_MARKER,
};
use rein_rollout::resume::{
    interrupted_call_output, turn_order, CallProgress, ABORTED_TOOL_OUTPUT,
};
use rein_rollout::{fork_events, repair_for_resume, RolloutStore};
use support::{every_variant_thread, ThreadScript};

/// Exhaustive on purpose: a new variant fails to compile here until the round trip
/// covers it.
fn variant(msg: &EventMsg) -> &'static str {
    match msg {
        EventMsg::ThreadConfigured { .. } => "ThreadConfigured",
        EventMsg::SettingsChanged { .. } => "SettingsChanged",
        EventMsg::ThreadNamed { .. } => "ThreadNamed",
        EventMsg::ContextLoaded { .. } => "ContextLoaded",
        EventMsg::AgentOrigin { .. } => "AgentOrigin",
        EventMsg::AgentSpawned { .. } => "AgentSpawned",
        EventMsg::AgentTasked { .. } => "AgentTasked",
        EventMsg::AgentClosed { .. } => "AgentClosed",
        EventMsg::MailQueued { .. } => "MailQueued",
        EventMsg::MailTaken { .. } => "MailTaken",
        EventMsg::TurnStarted { .. } => "TurnStarted",
        EventMsg::TurnCompleted { .. } => "TurnCompleted",
        EventMsg::TurnAborted { .. } => "TurnAborted",
        EventMsg::TurnFailed { .. } => "TurnFailed",
        EventMsg::ItemStarted { .. } => "ItemStarted",
        EventMsg::ItemCompleted { .. } => "ItemCompleted",
        EventMsg::AgentMessageDelta { .. } => "AgentMessageDelta",
        EventMsg::ReasoningDelta { .. } => "ReasoningDelta",
        EventMsg::ToolCallBegin { .. } => "ToolCallBegin",
        EventMsg::AdvisorReviewStarted { .. } => "AdvisorReviewStarted",
        EventMsg::AdvisorReviewCompleted { .. } => "AdvisorReviewCompleted",
        EventMsg::HookStarted { .. } => "HookStarted",
        EventMsg::HookCompleted { .. } => "HookCompleted",
        EventMsg::ToolOutputDelta { .. } => "ToolOutputDelta",
        EventMsg::ToolCallEnd { .. } => "ToolCallEnd",
        EventMsg::SkillActivated { .. } => "SkillActivated",
        EventMsg::ClientRequested { .. } => "ClientRequested",
        EventMsg::ClientRequestResolved { .. } => "ClientRequestResolved",
        EventMsg::TokenCount { .. } => "TokenCount",
        EventMsg::PlanUpdated { .. } => "PlanUpdated",
        EventMsg::PatchApplied { .. } => "PatchApplied",
        EventMsg::TurnDiff { .. } => "TurnDiff",
        EventMsg::StepRequested { .. } => "StepRequested",
        EventMsg::StreamRetry { .. } => "StreamRetry",
        EventMsg::ModelRerouted { .. } => "ModelRerouted",
        EventMsg::CompactionStarted { .. } => "CompactionStarted",
        EventMsg::Compacted { .. } => "Compacted",
        EventMsg::ModelSwitched { .. } => "ModelSwitched",
        EventMsg::RolledBack { .. } => "RolledBack",
        EventMsg::Warning { .. } => "Warning",
        EventMsg::Error { .. } => "Error",
        EventMsg::ShutdownComplete => "ShutdownComplete",
        EventMsg::MemoryProposed { .. } => "MemoryProposed",
        EventMsg::MemoryAccepted { .. } => "MemoryAccepted",
        EventMsg::MemoryRejected { .. } => "MemoryRejected",
        EventMsg::MemoryModeSet { .. } => "MemoryModeSet",
        EventMsg::TaskGraphChanged { .. } => "TaskGraphChanged",
        EventMsg::GoalUpdated { .. } => "GoalUpdated",
        EventMsg::GoalCleared => "GoalCleared",
        EventMsg::GoalTurnStarted { .. } => "GoalTurnStarted",
        EventMsg::GoalCheckpointed { .. } => "GoalCheckpointed",
    }
}

const ALL_VARIANTS: usize = 51;

fn meta_for(thread: ThreadId) -> SessionMeta {
    SessionMeta::new(
        thread,
        thread.into(),
        "/work/project".into(),
        "gpt-test",
        "scripted",
    )
}

fn persist(store: &RolloutStore, events: &[Event]) -> std::path::PathBuf {
    let mut writer = store.create(&meta_for(events[0].thread_id)).unwrap();
    for event in events {
        writer.record(event).unwrap();
    }
    writer.sync().unwrap();
    writer.path().to_path_buf()
}

#[test]
fn every_event_variant_round_trips_identically() {
    let home = tempfile::tempdir().unwrap();
    let store = RolloutStore::with_blob_threshold(home.path(), 4096);
    let mut script = every_variant_thread();
    // Deltas are never handed to a recorder by the loop, but the format carries them.
    let item = ItemId::new();
    let last = script.events.pop().unwrap();
    script.push(EventMsg::AgentMessageDelta {
        item_id: item.clone(),
        delta: "par".into(),
    });
    script.push(EventMsg::ReasoningDelta {
        item_id: item,
        delta: "hm".into(),
    });
    script.push(EventMsg::ToolOutputDelta {
        call_id: "c".into(),
        delta: "out".into(),
    });
    script.push(last.msg);
    let events = script.events;
    let covered: BTreeSet<_> = events.iter().map(|e| variant(&e.msg)).collect();
    assert_eq!(covered.len(), ALL_VARIANTS, "covered: {covered:?}");

    let path = persist(&store, &events);
    let loaded = store.load(events[0].thread_id).unwrap();
    assert_eq!(loaded.path, path);
    assert_eq!(loaded.diagnostics, vec![]);
    assert_eq!(loaded.meta.thread_id, events[0].thread_id);
    assert_eq!(loaded.events, events);
}

#[test]
fn large_payloads_are_stored_once_and_referenced() {
    let home = tempfile::tempdir().unwrap();
    let store = RolloutStore::with_blob_threshold(home.path(), 1024);
    let big = "x".repeat(200_000);
    let mut script = ThreadScript::new(ThreadId::new());
    script.simple_turn(1, big.clone());
    script.simple_turn(2, big);
    let path = persist(&store, &script.events);
    let file_len = std::fs::metadata(&path).unwrap().len();
    assert!(
        file_len < 20_000,
        "the output is not inline: {file_len} bytes"
    );
    let blobs = rein_rollout::layout::rollout_files(store.blobs().dir()).unwrap();
    assert!(blobs.is_empty(), "blob names are hashes, not rollout names");
    let blob_count = walk_files(store.blobs().dir());
    assert_eq!(blob_count, 1, "the same output twice is one blob");
    assert_eq!(store.load_path(&path).unwrap().events, script.events);

    // A fork refers to the same blob instead of copying it.
    let forked = store.fork(script.thread, None).unwrap();
    drop(forked.writer);
    assert_eq!(walk_files(store.blobs().dir()), 1);
}

fn walk_files(dir: &std::path::Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            n += walk_files(&entry.path());
        } else {
            n += 1;
        }
    }
    n
}

#[test]
fn resume_fold_equals_live_fold() {
    let home = tempfile::tempdir().unwrap();
    let store = RolloutStore::with_blob_threshold(home.path(), 4096);
    let script = every_variant_thread();
    let live = ThreadState::from_events(&script.events);
    persist(&store, &script.events);
    let loaded = store.load(script.thread).unwrap();
    let resumed = ThreadState::from_events(&loaded.events);
    assert_eq!(resumed, live);
    // The by-value fold resume uses for large rollouts builds the same state.
    assert_eq!(fold_owned(repair_for_resume(loaded.events)), live);
    assert_eq!(resumed.status, AgentStatus::Shutdown);
    // The rollback dropped turn 4 from history; the model sees what it saw live.
    assert_eq!(resumed.turns.len(), 4);
}

#[test]
fn appending_after_resume_continues_the_same_file() {
    let home = tempfile::tempdir().unwrap();
    let store = RolloutStore::new(home.path());
    let mut script = ThreadScript::new(ThreadId::new());
    script.simple_turn(1, "one".into());
    let split = script.events.len();
    script.simple_turn(2, "two".into());
    let mut writer = store.create(&meta_for(script.thread)).unwrap();
    for event in &script.events[..split] {
        writer.record(event).unwrap();
    }
    drop(writer);
    let mut writer = store.open_append(script.thread).unwrap();
    for event in &script.events[split..] {
        writer.record(event).unwrap();
    }
    drop(writer);
    assert_eq!(store.load(script.thread).unwrap().events, script.events);
}

#[test]
fn a_crashed_turn_keeps_its_output_schema_for_recover() {
    let mut script = ThreadScript::new(ThreadId::new());
    let turn = rein_protocol::TurnId::new();
    script.turn = Some(turn);
    let schema = serde_json::json!({"type": "object"});
    script.push(EventMsg::TurnStarted {
        kind: rein_protocol::TaskKind::Regular,
        settings: support::settings(),
        recovered: false,
        output_schema: Some(schema.clone()),
    });
    script.agent_message("{");
    let state = ThreadState::from_events(&repair_for_resume(script.events.clone()));
    let recoverable = state
        .recoverable_turn
        .expect("the crashed turn can be recovered");
    assert_eq!(recoverable.id, turn);
    assert_eq!(recoverable.output_schema.as_deref(), Some(&schema));
}

#[test]
fn crashed_turn_is_closed_as_interrupted_saying_what_each_call_may_have_done() {
    let mut script = ThreadScript::new(ThreadId::new());
    script.simple_turn(1, "ok".into());
    let turn = script.start_turn("run two tools");
    script.tool_call("done", Some("fine".into()));
    script.tool_call("lost-1", None);
    script.tool_call("lost-2", None);
    // Announced by the model but never started (its `ToolCallBegin` never came).
    script.push(EventMsg::ItemCompleted {
        item: Item::ToolCall {
            id: ItemId::new(),
            call_id: "never".into(),
            name: "shell".into(),
            arguments: "{}".into(),
        },
    });
    // Finished, but its output was not recorded before the crash.
    script.push(EventMsg::ItemCompleted {
        item: Item::ToolCall {
            id: ItemId::new(),
            call_id: "ended".into(),
            name: "shell".into(),
            arguments: "{}".into(),
        },
    });
    script.push(EventMsg::ToolCallBegin {
        call_id: "ended".into(),
        name: "shell".into(),
        arguments: "{}".into(),
        action: ToolAction::other("shell", "{}"),
    });
    script.push(EventMsg::ToolCallEnd {
        call_id: "ended".into(),
        success: true,
        duration_ms: 3,
        outcome: ToolOutcome::unreported(true),
    });
    script.push(EventMsg::ClientRequested {
        request_id: "ap".into(),
        call_id: "lost-2".into(),
        request: rein_protocol::ClientRequest::Patch {
            files: vec![],
            reason: "r".into(),
        },
    });
    let before = script.events.len();
    let repaired = repair_for_resume(script.events.clone());
    let added = &repaired[before..];
    let seqs: Vec<u64> = repaired.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..repaired.len() as u64).collect::<Vec<_>>());
    assert!(added.iter().all(|e| e.turn_id == Some(turn)));
    let unknown = interrupted_call_output(CallProgress::Running);
    assert!(unknown.0.starts_with("outcome unknown"), "{}", unknown.0);
    let summary: Vec<String> = added
        .iter()
        .map(|e| match &e.msg {
            EventMsg::ClientRequestResolved {
                request_id,
                outcome,
                ..
            } => format!("resolved {request_id} {outcome:?}"),
            EventMsg::ItemCompleted {
                item:
                    Item::ToolOutput {
                        call_id,
                        output,
                        success,
                        ..
                    },
            } => format!("output {call_id} {output} {success}"),
            EventMsg::ItemCompleted {
                item: Item::Interruption { text, .. },
            } => format!("marker {}", text == INTERRUPTION_MARKER),
            EventMsg::TurnAborted { reason } => format!("aborted {reason:?}"),
            other => format!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            "resolved ap Cancelled".to_owned(),
            format!("output lost-1 {} false", unknown.0),
            format!("output lost-2 {} false", unknown.0),
            format!("output never {ABORTED_TOOL_OUTPUT} false"),
            format!(
                "output ended {} false",
                interrupted_call_output(CallProgress::Ended { success: true }).0
            ),
            "marker true".to_owned(),
            "aborted Interrupted".to_owned(),
        ]
    );
    let state = ThreadState::from_events(&repaired);
    assert!(state.is_idle());
    assert_eq!(state.status, AgentStatus::Interrupted);
    assert_eq!(state.recoverable_turn.map(|t| t.id), Some(turn));
    // Idle threads come back unchanged.
    assert_eq!(repair_for_resume(repaired.clone()), repaired);
}

#[test]
fn fork_at_each_turn_matches_the_parent_at_that_point() {
    let script = every_variant_thread();
    let turns = turn_order(&script.events);
    assert_eq!(turns.len(), 5);
    for (i, turn) in turns.iter().enumerate() {
        let child = ThreadId::new();
        let forked = fork_events(&script.events, Some(i), child).unwrap();
        let end = script
            .events
            .iter()
            .rposition(|e| e.turn_id == Some(*turn) && ends_turn(&e.msg))
            .unwrap();
        let parent_then = ThreadState::from_events(&script.events[..=end]);
        let state = ThreadState::from_events(&forked);
        assert_eq!(state.history, parent_then.history, "turn {i}");
        assert_eq!(state.turns, parent_then.turns, "turn {i}");
        assert_eq!(state.thread_id, Some(child));
        assert_eq!(state.forked_from, Some(script.thread));
        assert_eq!(state.session_id, Some(child.into()));
        assert!(forked.iter().all(|e| e.thread_id == child));
        let seqs: Vec<u64> = forked.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (0..forked.len() as u64).collect::<Vec<_>>());
    }
    let err = fork_events(&script.events, Some(5), ThreadId::new()).unwrap_err();
    assert_eq!(
        err,
        ForkError::NoSuchTurn {
            requested: 5,
            available: 5
        }
    );
}

fn ends_turn(msg: &EventMsg) -> bool {
    matches!(
        msg,
        EventMsg::TurnCompleted { .. } | EventMsg::TurnAborted { .. } | EventMsg::TurnFailed { .. }
    )
}

#[test]
fn forking_a_running_thread_forks_it_as_interrupted_and_fork_of_fork_works() {
    let home = tempfile::tempdir().unwrap();
    let store = RolloutStore::new(home.path());
    let mut script = ThreadScript::new(ThreadId::new());
    script.simple_turn(1, "one".into());
    script.start_turn("still running");
    script.tool_call("pending", None);
    let parent_path = persist(&store, &script.events);
    let parent_bytes = std::fs::read(&parent_path).unwrap();

    let fork = store.fork(script.thread, None).unwrap();
    let state = ThreadState::from_events(&fork.events);
    assert!(state.is_idle());
    assert_eq!(
        state.turns.last().unwrap().status,
        TurnStatus::Aborted(TurnAbortReason::Interrupted)
    );
    assert!(matches!(
        state.history.last().unwrap().as_ref(),
        Item::Interruption { .. }
    ));
    assert_eq!(
        std::fs::read(&parent_path).unwrap(),
        parent_bytes,
        "parent untouched"
    );
    let fork_id = fork.writer.thread_id();
    drop(fork);
    let reloaded = store.load(fork_id).unwrap();
    assert_eq!(reloaded.meta.forked_from, Some(script.thread));
    assert_eq!(ThreadState::from_events(&reloaded.events), state);

    let grandchild = store.fork(fork_id, Some(0)).unwrap();
    let state2 = ThreadState::from_events(&grandchild.events);
    assert_eq!(state2.forked_from, Some(fork_id));
    assert_eq!(state2.turns.len(), 1);
    assert_eq!(state2.turns[0].status, TurnStatus::Completed);
}

#[test]
fn store_resume_records_the_repair_and_continues_the_file() {
    let home = tempfile::tempdir().unwrap();
    let store = RolloutStore::new(home.path());
    let mut script = ThreadScript::new(ThreadId::new());
    script.simple_turn(1, "one".into());
    script.start_turn("crashed here");
    script.tool_call("lost", None);
    let path = persist(&store, &script.events);

    let resumed = store.resume(script.thread).unwrap();
    assert_eq!(
        resumed.loaded.events[..script.events.len()],
        script.events[..]
    );
    let state = ThreadState::from_events(&resumed.loaded.events);
    assert!(state.is_idle());
    assert_eq!(state.status, AgentStatus::Interrupted);
    // While resumed, nobody else can write the thread.
    assert!(store.resume_path(&path, None).is_err());
    let events = resumed.loaded.events.clone();
    drop(resumed);
    // The repair is in the file: a second resume has nothing left to repair.
    let again = store.resume(script.thread).unwrap();
    assert_eq!(again.loaded.events, events);
    assert_eq!(again.loaded.diagnostics, vec![]);
}

/// The next model request is built from settings and history; until the thread loop can
/// be driven end to end here, this checks the request body built from a resumed state is
/// byte-identical to the one built from the never-restarted state (ids and order).
#[test]
fn resumed_request_body_equals_live_request_body() {
    use rein_core::model::ModelRequest;
    use std::sync::Arc;

    let home = tempfile::tempdir().unwrap();
    let store = RolloutStore::with_blob_threshold(home.path(), 4096);
    let mut script = every_variant_thread();
    script.events.pop(); // still running: no ShutdownComplete
    let next_input = rein_protocol::Item::user_text("and now?");
    let request_from = |state: &ThreadState| {
        let settings = state.settings.clone().unwrap();
        let mut input = state.history.clone();
        input.push(Arc::new(next_input.clone()));
        let request = ModelRequest {
            model: settings.model,
            instructions: settings.instructions,
            input,
            tools: Arc::from(Vec::new()),
            parallel_tool_calls: true,
            reasoning_effort: settings.reasoning_effort,
            prompt_cache_key: state.thread_id.unwrap().to_string(),
            output_schema: None,
        };
        serde_json::to_string(&request).unwrap()
    };
    let live = request_from(&ThreadState::from_events(&script.events));
    persist(&store, &script.events);
    let resumed = store.resume(script.thread).unwrap();
    assert_eq!(request_from(&fold_owned(resumed.loaded.events)), live);
}
