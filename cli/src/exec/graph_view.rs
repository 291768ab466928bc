//! The task graph as `rein exec`'s human output shows it: folded from the root's
//! `task_graph_changed` events with the kernel's own fold, printed as an indented list of
//! nodes with their states each time a node's state changes.

use std::fmt::Write as _;

use rein_protocol::{Event, EventMsg, TaskGraph, TaskGraphChange, TaskOutcome, TaskState};

#[derive(Default)]
pub struct GraphView {
    graph: TaskGraph,
    /// The states last printed, to print only changes.
    shown: Vec<(String, TaskState)>,
}

impl GraphView {
    /// Fold `change`; the list to print if any node's state changed.
    pub fn apply(&mut self, change: &TaskGraphChange, at_ms: u64) -> Option<String> {
        self.graph.apply(change, at_ms);
        self.changed()
    }

    /// The graph a thread's events end with, as the list (`rein sessions show`); `None`
    /// without a graph.
    pub fn last_of(events: &[Event]) -> Option<String> {
        let mut view = GraphView::default();
        for event in events {
            match &event.msg {
                EventMsg::TaskGraphChanged { change } => {
                    view.graph.apply(change, event.timestamp_ms);
                }
                EventMsg::TurnAborted { .. } => view.graph.cancel_running(event.timestamp_ms),
                _ => {}
            }
        }
        (!view.graph.is_empty()).then(|| view.render())
    }

    /// The root's turn was aborted: its running nodes are cancelled (the same fold).
    pub fn turn_aborted(&mut self, at_ms: u64) -> Option<String> {
        self.graph.cancel_running(at_ms);
        self.changed()
    }

    fn changed(&mut self) -> Option<String> {
        let states: Vec<(String, TaskState)> = self
            .graph
            .nodes
            .iter()
            .map(|n| (n.spec.id.clone(), n.state))
            .collect();
        if states == self.shown {
            return None;
        }
        self.shown = states;
        Some(self.render())
    }

    fn render(&self) -> String {
        let mut out = format!("task graph ({:?}):", self.graph.status()).to_lowercase();
        for node in &self.graph.nodes {
            let state = format!("{:?}", node.state).to_lowercase();
            let _ = write!(out, "\n  {} [{state}] {}", node.spec.id, node.spec.title);
            if !node.spec.deps.is_empty() {
                let _ = write!(out, " (after {})", node.spec.deps.join(", "));
            }
            if let Some(TaskOutcome::Failed { message, .. }) = node.outcome() {
                let _ = write!(out, ": {message}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use rein_protocol::{FailurePolicy, TaskNodeSpec};

    use super::*;

    #[test]
    fn the_graph_prints_as_an_indented_list_when_states_change() {
        let spec = |id: &str, deps: &[&str]| TaskNodeSpec {
            id: id.into(),
            title: id.to_uppercase(),
            role: "worker".into(),
            instructions: String::new(),
            acceptance: Vec::new(),
            deps: deps.iter().map(|d| (*d).to_owned()).collect(),
            reviews: None,
        };
        let mut view = GraphView::default();
        let shown = view.apply(
            &TaskGraphChange::Planned {
                policy: FailurePolicy::BlockDependents,
                max_review_rounds: 1,
                max_retries: 0,
                upsert: vec![spec("a", &[]), spec("b", &["a"])],
                remove: Vec::new(),
            },
            0,
        );
        assert_eq!(
            shown.as_deref(),
            Some("task graph (running):\n  a [ready] A\n  b [pending] B (after a)")
        );
    }
}
