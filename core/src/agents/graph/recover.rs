//! A root's task graph after a resume. The graph comes back as its rollout folds (a crash
//! mid-run ends the root's turn `interrupted` on resume, which cancels the running nodes).
//! A node cancelled that way is told apart from one a user interrupted by its own thread's
//! rollout: a crash leaves that thread's turn open, an interrupt ends it `turn_aborted`.
//! Such a node runs again, its new attempt told which tool calls the cut-off attempt had
//! recorded, so side effects are not repeated blindly.

use std::fmt::Write as _;
use std::sync::Arc;

use rein_protocol::{EventMsg, TaskOutcome, TaskState, ThreadId};

use super::GraphRun;
use crate::agents::AgentControl;
use crate::thread::state::ThreadState;

impl AgentControl {
    /// Bring back `root`'s graph (if it has one) and re-queue what a crash cut off.
    pub(in crate::agents) async fn restore_graph(
        self: &Arc<Self>,
        root: ThreadId,
        state: &ThreadState,
    ) {
        if state.task_graph.is_empty() || self.graphs().contains_key(&root) {
            return;
        }
        let Ok(manager) = self.manager() else {
            return;
        };
        let Some(store) = manager.store() else {
            return;
        };
        let mut graph = state.task_graph.clone();
        let mut previous = Vec::new();
        for node in &mut graph.nodes {
            let Some(attempt) = node.attempts.last() else {
                continue;
            };
            if node.state != TaskState::Cancelled || attempt.outcome != Some(TaskOutcome::Cancelled)
            {
                continue;
            }
            let Ok(loaded) = store.read(attempt.thread_id).await else {
                continue;
            };
            let events: Vec<&EventMsg> = loaded.events.iter().map(|e| &e.msg).collect();
            if !cut_off(&events) {
                continue;
            }
            previous.push((node.spec.id.clone(), done_before(&events)));
            // Waiting again, as a node whose dependencies completed: the next pass starts it.
            node.state = TaskState::Pending;
        }
        let mut run = GraphRun::new(state.task_graph.clone());
        // Nothing to re-run: a settled or interrupted graph waits for plan_tasks.
        run.reported = previous.is_empty();
        run.paused = previous.is_empty();
        // The recorded graph keeps the cancellation; the re-run is new attempts on top of it,
        // so the driver's copy derives readiness from the re-queued states.
        run.graph = graph;
        run.graph.refresh();
        run.previous = previous.into_iter().collect();
        self.graphs().insert(root, run);
        self.start_driver(root);
    }
}

/// Whether a node thread's events end inside a turn (its process died mid-turn).
fn cut_off(events: &[&EventMsg]) -> bool {
    let last_turn = events.iter().rev().find(|m| {
        matches!(
            m,
            EventMsg::TurnStarted { .. }
                | EventMsg::TurnCompleted { .. }
                | EventMsg::TurnAborted { .. }
                | EventMsg::TurnFailed { .. }
        )
    });
    matches!(last_turn, Some(EventMsg::TurnStarted { .. }) | None)
}

/// The tool calls a cut-off attempt recorded, one line each, with how they ended.
fn done_before(events: &[&EventMsg]) -> String {
    let mut out = String::new();
    for msg in events {
        if let EventMsg::ToolCallBegin {
            call_id,
            name,
            arguments,
            ..
        } = msg
        {
            let ended = events.iter().find_map(|m| match m {
                EventMsg::ToolCallEnd {
                    call_id: id,
                    success,
                    ..
                } if id == call_id => Some(if *success { "succeeded" } else { "failed" }),
                _ => None,
            });
            let _ = writeln!(
                out,
                "- {name} {arguments} ({})",
                ended.unwrap_or("no recorded end: it may or may not have taken effect")
            );
        }
    }
    if out.is_empty() {
        out.push_str("- no tool calls were recorded\n");
    }
    out
}
