//! What a node's sub-agent is told (built from the facts of its dependencies: their final
//! answers, the files they changed, their failures; never their transcripts), and the
//! graph's summary as the root reads it.

use std::fmt::Write as _;

use rein_protocol::{GraphStatus, TaskGraph, TaskNode, TaskOutcome, TaskState};
use serde::Serialize;

/// The marker a node's input starts with (scripted models and tests match on it).
pub(super) fn header(node: &TaskNode) -> String {
    format!("Task `{}`: {}", node.spec.id, node.spec.title)
}

/// The first message of an attempt of `node`.
pub(super) fn node_input(graph: &TaskGraph, node: &TaskNode, previous: Option<&str>) -> String {
    let mut out = header(node);
    out.push('\n');
    if !node.spec.instructions.is_empty() {
        let _ = write!(out, "\n{}\n", node.spec.instructions);
    }
    let reviewed = node.spec.reviews.as_deref().and_then(|id| graph.node(id));
    let acceptance = match reviewed {
        Some(target) if node.spec.acceptance.is_empty() => &target.spec.acceptance,
        _ => &node.spec.acceptance,
    };
    if !acceptance.is_empty() {
        out.push_str("\nAcceptance criteria:\n");
        for item in acceptance {
            let _ = writeln!(out, "- {item}");
        }
    }
    let deps: Vec<&TaskNode> = node
        .spec
        .deps
        .iter()
        .filter_map(|d| graph.node(d))
        .collect();
    if !deps.is_empty() {
        out.push_str("\nResults of the tasks this one depends on:\n");
        for dep in deps {
            let _ = writeln!(out, "- {}", fact(dep));
        }
    }
    if let Some(target) = reviewed {
        let _ = write!(
            out,
            "\nReview the result of task `{}` against the acceptance criteria and give your \
             verdict with submit_review.\n",
            target.spec.id
        );
    }
    if !node.findings.is_empty() {
        out.push_str("\nA reviewer rejected the previous result. Address these findings:\n");
        for f in &node.findings {
            let _ = writeln!(out, "- [{:?}] {}", f.severity, f.message);
        }
        if let Some(TaskOutcome::Completed {
            answer: Some(answer),
            ..
        }) = node.outcome()
        {
            let _ = writeln!(out, "Your previous answer was: {answer}");
        }
    }
    if let Some(previous) = previous {
        let _ = write!(
            out,
            "\nAn earlier attempt of this task was cut off by a restart. It had already \
             done this (do not repeat side effects blindly; check first):\n{previous}\n"
        );
    }
    out
}

/// One node's result as a line of facts.
fn fact(node: &TaskNode) -> String {
    let head = format!("`{}` ({})", node.spec.id, node.spec.title);
    match node.outcome() {
        Some(TaskOutcome::Completed {
            answer,
            files_changed,
        }) => {
            let mut line = format!("{head} completed: {}", answer.as_deref().unwrap_or(""));
            if !files_changed.is_empty() {
                let files: Vec<String> = files_changed
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                let _ = write!(line, " (files changed: {})", files.join(", "));
            }
            line
        }
        Some(TaskOutcome::Reviewed { verdict }) => format!(
            "{head} review: {}",
            if verdict.approved {
                "approved"
            } else {
                "rejected"
            }
        ),
        Some(TaskOutcome::Failed { kind, message }) => {
            format!("{head} FAILED ({kind:?}): {message}")
        }
        Some(TaskOutcome::Cancelled) => format!("{head} was cancelled"),
        None => format!("{head} did not run ({:?})", node.state),
    }
}

/// The graph's state as `plan_tasks` answers and the root's wake-up mail says it.
#[derive(Debug, Serialize)]
pub(in crate::agents) struct Summary {
    pub status: GraphStatus,
    pub nodes: Vec<NodeSummary>,
}

#[derive(Debug, Serialize)]
pub(in crate::agents) struct NodeSummary {
    pub id: String,
    pub title: String,
    pub role: String,
    pub state: TaskState,
    pub attempts: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<TaskOutcome>,
}

pub(super) fn summary(graph: &TaskGraph) -> Summary {
    Summary {
        status: graph.status(),
        nodes: graph
            .nodes
            .iter()
            .map(|n| NodeSummary {
                id: n.spec.id.clone(),
                title: n.spec.title.clone(),
                role: n.spec.role.clone(),
                state: n.state,
                attempts: n.attempts.len(),
                outcome: n.outcome().cloned(),
            })
            .collect(),
    }
}
