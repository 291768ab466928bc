//! Task graphs: a plan of nodes (each run by a sub-agent of a role) with dependencies by
//! stable id, kept as kernel state in the root thread's rollout. The graph changes only
//! through recorded [`TaskGraphChange`]s, folded by [`TaskGraph::apply`] (live and on
//! resume); the node states that follow from dependencies (`pending`, `ready`, `blocked`,
//! `skipped`) are derived by the fold, never set by hand. See `docs/task-graphs.md`.

use std::collections::HashMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::ThreadId;

/// Where a node is in its life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Some dependency has not finished yet.
    #[default]
    Pending,
    /// Its dependencies allow it to run; the kernel starts it when the tree has room.
    Ready,
    Running,
    /// A dependency failed (policy `block_dependents`): it will not run.
    Blocked,
    Completed,
    Failed,
    /// Not run because the graph failed fast.
    Skipped,
    Cancelled,
}

impl TaskState {
    /// Whether nothing more happens to the node (short of a replan or a re-queue).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Skipped | TaskState::Cancelled
        )
    }
}

/// What a failed node means for the nodes that depend on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailurePolicy {
    /// Its dependents are blocked (they never run).
    #[default]
    BlockDependents,
    /// Its dependents run once all their dependencies ended, told of the failure.
    AllowOrphans,
    /// The graph stops: running nodes are cancelled, the rest skipped.
    FailFast,
}

/// One node as a plan gives it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskNodeSpec {
    /// Stable id, unique in the graph (dependencies name it).
    pub id: String,
    pub title: String,
    /// The role of the sub-agent that runs it (`[agents.roles.NAME]`).
    #[serde(default = "default_role")]
    pub role: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instructions: String,
    /// What the result must satisfy (a reviewer checks it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance: Vec<String>,
    /// Ids of the nodes that must complete first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deps: Vec<String>,
    /// For a reviewer node: the node whose result it reviews (also a dependency). A
    /// rejection re-queues that node with the findings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviews: Option<String>,
}

fn default_role() -> String {
    "worker".to_owned()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FindingSeverity {
    Info,
    Minor,
    Major,
    Critical,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewFinding {
    pub severity: FindingSeverity,
    pub message: String,
}

/// A reviewer's structured answer (given through its `submit_review` tool).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewVerdict {
    pub approved: bool,
    #[serde(default)]
    pub findings: Vec<ReviewFinding>,
}

/// Why an attempt failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskFailureKind {
    /// The sub-agent's turn failed (model error, tool exhaustion).
    TurnFailed,
    /// Its turn was stopped because the tree's token budget is spent.
    Budget,
    /// A reviewer ended without a valid verdict.
    NoVerdict,
    /// The reviewer rejected it more than `max_review_rounds` times.
    Rejected,
    /// Its thread ended (shut down, or never started) without an answer.
    ThreadDied,
    /// The kernel could not start it (limits, a role's model).
    NotStarted,
}

impl TaskFailureKind {
    /// Whether another attempt may end differently: a model or tool failure, a thread
    /// that died, a start that failed. A spent budget, a missing verdict and a rejection
    /// out of rounds would fail the same way again.
    pub fn is_transient(self) -> bool {
        match self {
            TaskFailureKind::TurnFailed
            | TaskFailureKind::ThreadDied
            | TaskFailureKind::NotStarted => true,
            TaskFailureKind::Budget | TaskFailureKind::NoVerdict | TaskFailureKind::Rejected => {
                false
            }
        }
    }
}

/// How an attempt ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TaskOutcome {
    Completed {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        files_changed: Vec<PathBuf>,
    },
    /// A reviewer's verdict.
    Reviewed {
        verdict: ReviewVerdict,
    },
    Failed {
        kind: TaskFailureKind,
        message: String,
    },
    Cancelled,
}

/// One run of a node by one sub-agent thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskAttempt {
    pub thread_id: ThreadId,
    pub started_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<TaskOutcome>,
}

/// A node of the graph with what happened to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskNode {
    #[serde(flatten)]
    pub spec: TaskNodeSpec,
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<TaskAttempt>,
    /// How many times a reviewer sent it back.
    #[serde(default)]
    pub review_rounds: u32,
    /// The findings of the last rejection: what its next attempt is told to fix.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<ReviewFinding>,
}

impl TaskNode {
    pub fn new(spec: TaskNodeSpec) -> Self {
        Self {
            spec,
            state: TaskState::Pending,
            attempts: Vec::new(),
            review_rounds: 0,
            findings: Vec::new(),
        }
    }

    /// The outcome of its last attempt.
    pub fn outcome(&self) -> Option<&TaskOutcome> {
        self.attempts.last().and_then(|a| a.outcome.as_ref())
    }

    /// How many of its attempts failed transiently ([`TaskFailureKind::is_transient`]).
    pub fn transient_failures(&self) -> u32 {
        let n = self
            .attempts
            .iter()
            .filter(|a| {
                matches!(&a.outcome, Some(TaskOutcome::Failed { kind, .. }) if kind.is_transient())
            })
            .count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// When a node re-queued after a transient failure may start again: `base_ms` after
    /// its last attempt ended, doubled for each earlier such failure (capped at 64 times
    /// `base_ms`). `None` when its last attempt did not fail (it may start at once).
    pub fn retry_at(&self, base_ms: u64) -> Option<u64> {
        let last = self.attempts.last()?;
        let Some(TaskOutcome::Failed { kind, .. }) = &last.outcome else {
            return None;
        };
        if !kind.is_transient() {
            return None;
        }
        let doublings = self.transient_failures().saturating_sub(1).min(6);
        Some(last.ended_ms.unwrap_or(last.started_ms) + base_ms.saturating_mul(1 << doublings))
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The whole graph as the root thread's state holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskGraph {
    /// In plan order.
    pub nodes: Vec<TaskNode>,
    pub policy: FailurePolicy,
    pub max_review_rounds: u32,
    /// How many more attempts a node gets after a transient failure
    /// ([`TaskFailureKind::is_transient`]); 0 in graphs recorded before retries.
    #[serde(default)]
    pub max_retries: u32,
}

/// The graph as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GraphStatus {
    /// Some node is ready or running.
    Running,
    /// Every node completed.
    Completed,
    /// Nothing more can run and some node did not complete.
    Failed,
}

/// One recorded change of a thread's task graph (`EventMsg::TaskGraphChanged`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TaskGraphChange {
    /// A plan or a replan, as a diff: nodes added or replaced (by id), nodes removed.
    Planned {
        policy: FailurePolicy,
        max_review_rounds: u32,
        /// Retries after a transient failure (absent in graphs recorded before them: 0).
        #[serde(default, skip_serializing_if = "is_zero")]
        max_retries: u32,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        upsert: Vec<TaskNodeSpec>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        remove: Vec<String>,
    },
    /// The kernel started an attempt of the node on this sub-agent thread.
    NodeStarted {
        node_id: String,
        thread_id: ThreadId,
    },
    /// The node's running attempt ended.
    NodeFinished {
        node_id: String,
        outcome: TaskOutcome,
    },
}

impl TaskGraph {
    pub fn node(&self, id: &str) -> Option<&TaskNode> {
        self.nodes.iter().find(|n| n.spec.id == id)
    }

    fn node_mut(&mut self, id: &str) -> Option<&mut TaskNode> {
        self.nodes.iter_mut().find(|n| n.spec.id == id)
    }

    /// The node a sub-agent thread runs (its latest attempt's thread).
    pub fn node_of_thread(&self, thread: ThreadId) -> Option<&TaskNode> {
        self.nodes
            .iter()
            .find(|n| n.attempts.last().is_some_and(|a| a.thread_id == thread))
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn status(&self) -> GraphStatus {
        if self
            .nodes
            .iter()
            .any(|n| matches!(n.state, TaskState::Ready | TaskState::Running))
        {
            GraphStatus::Running
        } else if self.nodes.iter().all(|n| n.state == TaskState::Completed) {
            GraphStatus::Completed
        } else {
            GraphStatus::Failed
        }
    }

    /// Ids of the nodes ready to start, in plan order.
    pub fn ready(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| n.state == TaskState::Ready)
            .map(|n| n.spec.id.clone())
            .collect()
    }

    /// Ids of the running nodes, in plan order.
    pub fn running(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| n.state == TaskState::Running)
            .map(|n| n.spec.id.clone())
            .collect()
    }

    /// Replace and add `upsert` (by id), drop `remove`: the nodes of a plan diff. Edited
    /// nodes keep their attempts; an edited node that had ended starts over.
    pub fn merge(&mut self, upsert: &[TaskNodeSpec], remove: &[String]) {
        self.nodes.retain(|n| !remove.contains(&n.spec.id));
        for spec in upsert {
            match self.node_mut(&spec.id) {
                Some(node) => {
                    node.spec = spec.clone();
                    if node.state != TaskState::Running {
                        node.state = TaskState::Pending;
                    }
                }
                None => self.nodes.push(TaskNode::new(spec.clone())),
            }
        }
    }

    /// Derive the dependency states again (after a caller re-queued nodes by hand on a
    /// copy, as a resume does for the nodes a crash cut off).
    pub fn refresh(&mut self) {
        self.derive();
    }

    /// The fold: apply one recorded change at `at_ms`, then derive the dependency states.
    pub fn apply(&mut self, change: &TaskGraphChange, at_ms: u64) {
        match change {
            TaskGraphChange::Planned {
                policy,
                max_review_rounds,
                max_retries,
                upsert,
                remove,
            } => {
                self.policy = *policy;
                self.max_review_rounds = *max_review_rounds;
                self.max_retries = *max_retries;
                self.merge(upsert, remove);
            }
            TaskGraphChange::NodeStarted { node_id, thread_id } => {
                if let Some(node) = self.node_mut(node_id) {
                    node.state = TaskState::Running;
                    node.attempts.push(TaskAttempt {
                        thread_id: *thread_id,
                        started_ms: at_ms,
                        ended_ms: None,
                        outcome: None,
                    });
                }
            }
            TaskGraphChange::NodeFinished { node_id, outcome } => {
                self.finish(node_id, outcome, at_ms);
            }
        }
        self.derive();
    }

    /// The thread's turn was aborted (an interrupt of the root cascades to its running
    /// nodes): every running node ends `cancelled`, and waits for a new plan_tasks call.
    pub fn cancel_running(&mut self, at_ms: u64) {
        for id in self.running() {
            self.finish(&id, &TaskOutcome::Cancelled, at_ms);
        }
        self.derive();
    }

    fn finish(&mut self, node_id: &str, outcome: &TaskOutcome, at_ms: u64) {
        let max_rounds = self.max_review_rounds;
        let max_retries = self.max_retries;
        let Some(node) = self.node_mut(node_id) else {
            return;
        };
        if let Some(attempt) = node.attempts.last_mut() {
            attempt.ended_ms = Some(at_ms);
            attempt.outcome = Some(outcome.clone());
        }
        node.state = match outcome {
            TaskOutcome::Completed { .. } => TaskState::Completed,
            TaskOutcome::Reviewed { verdict } if verdict.approved => TaskState::Completed,
            TaskOutcome::Reviewed { .. } => TaskState::Pending,
            // A transient failure re-queues the node while it has retries left; the
            // scheduler waits out its backoff ([`TaskGraph::retry_at`]) before starting it.
            TaskOutcome::Failed { kind, .. }
                if kind.is_transient() && node.transient_failures() <= max_retries =>
            {
                TaskState::Pending
            }
            TaskOutcome::Failed { .. } => TaskState::Failed,
            TaskOutcome::Cancelled => TaskState::Cancelled,
        };
        if node.state == TaskState::Completed {
            node.findings.clear();
        }
        let reviewed = node.spec.reviews.clone();
        let TaskOutcome::Reviewed { verdict } = outcome else {
            return;
        };
        if verdict.approved {
            return;
        }
        // A rejection is an edge back: the reviewed node runs again with the findings,
        // or, out of rounds, fails with them (and so does the review).
        let Some(target) = reviewed.and_then(|id| self.node_mut(&id)) else {
            return;
        };
        let out_of_rounds = target.review_rounds >= max_rounds;
        if out_of_rounds {
            target.state = TaskState::Failed;
        } else {
            target.review_rounds += 1;
            target.state = TaskState::Pending;
        }
        target.findings.clone_from(&verdict.findings);
        if out_of_rounds {
            if let Some(node) = self.node_mut(node_id) {
                node.state = TaskState::Failed;
            }
        }
    }

    /// Derive `pending`/`ready`/`blocked`/`skipped` from the dependencies' states and the
    /// policy, until nothing changes (a blocked node blocks its own dependents).
    fn derive(&mut self) {
        let failed_fast = self.policy == FailurePolicy::FailFast
            && self.nodes.iter().any(|n| n.state == TaskState::Failed);
        loop {
            let states: HashMap<String, TaskState> = self
                .nodes
                .iter()
                .map(|n| (n.spec.id.clone(), n.state))
                .collect();
            let mut changed = false;
            for node in &mut self.nodes {
                if !matches!(
                    node.state,
                    TaskState::Pending | TaskState::Ready | TaskState::Blocked | TaskState::Skipped
                ) {
                    continue;
                }
                let deps: Vec<TaskState> = node
                    .spec
                    .deps
                    .iter()
                    .map(|d| states.get(d).copied().unwrap_or(TaskState::Failed))
                    .collect();
                let next = if failed_fast {
                    TaskState::Skipped
                } else {
                    derived_state(self.policy, &deps)
                };
                if next != node.state {
                    node.state = next;
                    changed = true;
                }
            }
            if !changed {
                return;
            }
        }
    }
}

/// A waiting node's state from its dependencies' states.
fn derived_state(policy: FailurePolicy, deps: &[TaskState]) -> TaskState {
    if deps.iter().all(|s| *s == TaskState::Completed) {
        return TaskState::Ready;
    }
    let broken = |s: &TaskState| {
        matches!(
            s,
            TaskState::Failed | TaskState::Blocked | TaskState::Cancelled | TaskState::Skipped
        )
    };
    match policy {
        FailurePolicy::AllowOrphans => {
            if deps.iter().all(|s| s.is_final()) {
                TaskState::Ready
            } else {
                TaskState::Pending
            }
        }
        FailurePolicy::BlockDependents | FailurePolicy::FailFast => {
            if deps.iter().any(broken) {
                TaskState::Blocked
            } else {
                TaskState::Pending
            }
        }
    }
}
