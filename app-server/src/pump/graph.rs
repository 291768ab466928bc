//! `rein/taskGraph/updated`: the thread's task graph as the kernel has folded it, sent after
//! each recorded change and once to a client that subscribes (or resumes) a thread that has
//! one, so a task panel never starts empty or stale.

use rein_app_server_protocol::task_graph::{
    TaskGraphStatus, TaskGraphUpdatedNotification, TaskGraphView, TaskNodeState, TaskNodeView,
    TaskOutcomeView,
};
use rein_app_server_protocol::ServerNotification;
use rein_protocol::{GraphStatus, TaskFailureKind, TaskGraph, TaskNode, TaskOutcome, TaskState};

use super::Pump;
use crate::subscribers::Subscriber;

impl Pump {
    /// Send the thread's task graph, as folded now, to `to`; nothing without one.
    pub(super) async fn send_graph(&self, to: &[Subscriber]) {
        if to.is_empty() {
            return;
        }
        let Ok(state) = self.thread.handle.state().await else {
            return;
        };
        if state.task_graph.is_empty() {
            return;
        }
        let n = ServerNotification::TaskGraphUpdated(Box::new(TaskGraphUpdatedNotification {
            thread_id: self.thread.handle.id().to_string(),
            graph: view(&state.task_graph),
        }));
        for subscriber in to {
            subscriber.out.notify(n.clone()).await;
        }
    }
}

/// The graph as a task panel shows it.
pub fn view(graph: &TaskGraph) -> TaskGraphView {
    TaskGraphView {
        status: match graph.status() {
            GraphStatus::Running => TaskGraphStatus::Running,
            GraphStatus::Completed => TaskGraphStatus::Completed,
            GraphStatus::Failed => TaskGraphStatus::Failed,
        },
        nodes: graph.nodes.iter().map(node_view).collect(),
    }
}

fn node_view(node: &TaskNode) -> TaskNodeView {
    TaskNodeView {
        id: node.spec.id.clone(),
        title: node.spec.title.clone(),
        role: node.spec.role.clone(),
        depends_on: node.spec.deps.clone(),
        reviews: node.spec.reviews.clone(),
        state: state_view(node.state),
        attempts: u32::try_from(node.attempts.len()).unwrap_or(u32::MAX),
        thread_id: node.attempts.last().map(|a| a.thread_id.to_string()),
        review_rounds: node.review_rounds,
        outcome: node.outcome().map(outcome_view),
    }
}

fn state_view(state: TaskState) -> TaskNodeState {
    match state {
        TaskState::Pending => TaskNodeState::Pending,
        TaskState::Ready => TaskNodeState::Ready,
        TaskState::Running => TaskNodeState::Running,
        TaskState::Blocked => TaskNodeState::Blocked,
        TaskState::Completed => TaskNodeState::Completed,
        TaskState::Failed => TaskNodeState::Failed,
        TaskState::Skipped => TaskNodeState::Skipped,
        TaskState::Cancelled => TaskNodeState::Cancelled,
    }
}

fn outcome_view(outcome: &TaskOutcome) -> TaskOutcomeView {
    match outcome {
        TaskOutcome::Completed { answer, .. } => TaskOutcomeView::Completed {
            answer: answer.clone(),
        },
        TaskOutcome::Reviewed { verdict } => TaskOutcomeView::Reviewed {
            approved: verdict.approved,
            findings: verdict.findings.iter().map(|f| f.message.clone()).collect(),
        },
        TaskOutcome::Failed { kind, message } => TaskOutcomeView::Failed {
            kind: match kind {
                TaskFailureKind::TurnFailed => "turnFailed",
                TaskFailureKind::Budget => "budget",
                TaskFailureKind::NoVerdict => "noVerdict",
                TaskFailureKind::Rejected => "rejected",
                TaskFailureKind::ThreadDied => "threadDied",
                TaskFailureKind::NotStarted => "notStarted",
            }
            .to_owned(),
            message: message.clone(),
        },
        TaskOutcome::Cancelled => TaskOutcomeView::Cancelled,
    }
}
