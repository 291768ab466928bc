//! Rollouts written by rein before tool calls carried facts (`rollout-fixtures/
//! rein-before-tool-facts/`, written by that build) still load without a diagnostic and
//! fold into the same history the model saw; their tool calls' begins and ends are given
//! what is known of them where the store decodes them (the action of an unknown tool,
//! only whether it succeeded), their tool outputs have no facts, and the approval events
//! of that time decode as client requests.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use rein_core::thread::state::fold_owned;
use rein_protocol::{EventMsg, Item, ToolAction, ToolOutcome};
use rein_rollout::blobs::BlobStore;
use rein_rollout::reader::read_rollout;

fn fixtures() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../rollout-fixtures/rein-before-tool-facts");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[test]
fn old_rollouts_load_and_fold_with_tool_outputs_without_facts() {
    let blobs = tempfile::tempdir().unwrap();
    let files = fixtures();
    assert_eq!(files.len(), 2);
    for path in files {
        let loaded = read_rollout(&path, &BlobStore::new(blobs.path())).unwrap();
        assert!(
            loaded.diagnostics.is_empty(),
            "{path:?}: {:?}",
            loaded.diagnostics
        );
        // Upgraded where the store decodes them: the begin's action is the one nothing
        // more is known of, the end's outcome only whether it succeeded.
        let begins: Vec<_> = loaded
            .events
            .iter()
            .filter_map(|e| match &e.msg {
                EventMsg::ToolCallBegin {
                    name,
                    arguments,
                    action,
                    ..
                } => Some((action.clone(), ToolAction::other(name, arguments))),
                _ => None,
            })
            .collect();
        assert!(!begins.is_empty());
        for (action, legacy) in begins {
            assert_eq!(action, legacy);
        }
        let ends: Vec<_> = loaded
            .events
            .iter()
            .filter_map(|e| match &e.msg {
                EventMsg::ToolCallEnd {
                    success, outcome, ..
                } => Some((outcome.clone(), ToolOutcome::unreported(*success))),
                _ => None,
            })
            .collect();
        assert!(!ends.is_empty());
        for (outcome, legacy) in ends {
            assert_eq!(outcome, legacy);
        }
        let state = fold_owned(loaded.events);
        let outputs: Vec<&Item> = state
            .history
            .iter()
            .map(AsRef::as_ref)
            .filter(|i| matches!(i, Item::ToolOutput { .. }))
            .collect();
        assert!(!outputs.is_empty());
        for output in outputs {
            assert!(
                matches!(output, Item::ToolOutput { facts: None, .. }),
                "{output:?}"
            );
        }
    }
}
