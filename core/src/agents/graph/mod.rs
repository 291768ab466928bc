//! Task graphs on sub-agents: a planner records a graph with `plan_tasks`, and the kernel,
//! not the model, runs it. Each root with a graph has one driver task (`scheduler`) that
//! serially turns what its node threads report into recorded `TaskGraphChanged` events
//! and starts the nodes the graph makes ready, as sub-agents of their role within the
//! tree's limits. The graph itself is `fold(events)` of the root's rollout
//! (`rein_protocol::TaskGraph::apply`); the driver keeps a copy folded by the same
//! function. See `docs/task-graphs.md`.

mod input;
mod recover;
mod scheduler;
mod tools;
pub mod validate;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use rein_protocol::{ReviewVerdict, TaskGraph, ThreadId, TurnAbortReason};
use tokio::sync::Notify;

pub(super) use tools::graph_tools;

/// How a node's thread ended its turn, as its events said.
#[derive(Clone, Debug)]
pub(super) enum ChildEnd {
    Completed(Option<String>),
    Failed(String),
    Aborted(TurnAbortReason),
    /// The thread shut down.
    Gone,
}

/// One root's graph while it is loaded.
pub(super) struct GraphRun {
    /// The graph, folded from the changes the driver recorded.
    pub(super) graph: TaskGraph,
    /// No node starts (the root was interrupted); a new plan_tasks call resumes.
    pub(super) paused: bool,
    /// The verdicts reviewer threads gave, by thread.
    pub(super) verdicts: HashMap<ThreadId, ReviewVerdict>,
    /// Files each node thread's patches changed.
    pub(super) files: HashMap<ThreadId, BTreeSet<PathBuf>>,
    /// Turn ends of node threads not processed yet.
    pub(super) ended: VecDeque<(ThreadId, ChildEnd)>,
    /// What earlier attempts of a node did, for the next one (after a restart).
    pub(super) previous: HashMap<String, String>,
    /// `plan_tasks` calls waiting for the graph to settle.
    pub(super) waiting: usize,
    /// The settled graph was reported (to a waiting call, or as mail).
    pub(super) reported: bool,
    /// Wakes the driver.
    pub(super) wake: Arc<Notify>,
}

impl GraphRun {
    pub(super) fn new(graph: TaskGraph) -> Self {
        Self {
            graph,
            paused: false,
            verdicts: HashMap::new(),
            files: HashMap::new(),
            ended: VecDeque::new(),
            previous: HashMap::new(),
            waiting: 0,
            reported: false,
            wake: Arc::new(Notify::new()),
        }
    }
}
