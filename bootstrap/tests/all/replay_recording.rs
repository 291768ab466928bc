//! What a replay reads from recordings that carry no request fingerprints: rein rollouts
//! of before fingerprints (and tool facts) and imported Codex rollouts are cut into steps
//! by their replies; a Codex turn that was aborted is refused with the reason.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use rein_bootstrap::replay::recording::{Answer, NotReplayable, Recording};
use rein_rollout::RolloutStore;

fn fixture(dir: &str, id: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rollout-fixtures")
        .join(dir);
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(id))
        .unwrap()
}

/// Per turn, per step: the names of the calls, or the answer's text when it has no call.
fn shape(recording: &Recording) -> Vec<Vec<String>> {
    recording
        .turns
        .iter()
        .map(|turn| {
            turn.steps
                .iter()
                .map(|step| match (&step.answer, step.calls.is_empty()) {
                    (Answer::Failed { message }, _) => format!("failed: {message}"),
                    (Answer::Reply { items, .. }, true) => items
                        .iter()
                        .find_map(rein_protocol::Item::message_text)
                        .unwrap_or_default(),
                    (_, false) => step
                        .calls
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(" + "),
                })
                .collect()
        })
        .collect()
}

#[test]
fn a_rein_rollout_from_before_fingerprints_is_cut_into_steps_by_its_replies() {
    let home = tempfile::tempdir().unwrap();
    let store = RolloutStore::new(home.path());
    let loaded = store
        .load_path(&fixture("rein-before-tool-facts", "829f"))
        .unwrap();
    let recording = Recording::from_events(&loaded.events).unwrap();
    assert!(!recording.fingerprinted());
    assert_eq!(recording.turns.len(), 1);
    let steps = shape(&recording).remove(0);
    assert_eq!(steps.len(), 4, "{steps:#?}");
    assert_eq!(steps[1], "apply_patch");
    assert_eq!(steps[2].matches(" + ").count(), 3, "{steps:#?}");
    // Every call has the result the replay will hand back.
    assert!(recording
        .turns
        .iter()
        .flat_map(|t| &t.steps)
        .flat_map(|s| &s.calls)
        .all(|c| c.result.is_some()));
}

#[test]
fn an_imported_codex_rollout_replays_its_tool_calls() {
    let loaded = rein_rollout::codex::import_codex_rollout(&fixture("codex", "8553")).unwrap();
    let recording = Recording::from_events(&loaded.events).unwrap();
    assert!(!recording.fingerprinted());
    let steps = shape(&recording);
    assert_eq!(steps.len(), 1, "{steps:#?}");
    assert_eq!(steps[0].len(), 2, "{steps:#?}");
    // rein has no `exec_command`: replaying it fails the call, which the comparison reports.
    assert_eq!(steps[0][0], "exec_command");
}

#[test]
fn an_aborted_codex_turn_is_not_replayable() {
    let loaded = rein_rollout::codex::import_codex_rollout(&fixture("codex", "9c0f")).unwrap();
    assert_eq!(
        Recording::from_events(&loaded.events).unwrap_err(),
        NotReplayable("turn 1 was interrupted".into())
    );
}
