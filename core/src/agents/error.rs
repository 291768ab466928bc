//! Why a sub-agent operation was refused or failed. The model reads these as the tool's
//! answer, so each says what to do next where there is something to do.

use rein_protocol::ThreadId;

use crate::error::{KernelError, ThreadError};
use crate::store::RolloutError;

/// A sub-agent operation that did not happen.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("sub-agents are unavailable: the thread manager is gone")]
    ManagerGone,
    #[error("sub-agents are unavailable: the kernel is shutting down")]
    ShuttingDown,
    #[error("thread {0} is not loaded")]
    NotLoaded(ThreadId),
    #[error("the calling thread is not registered")]
    NotRegistered,
    #[error("the calling thread is gone")]
    CallerGone,
    #[error("no agent `{0}` in this tree (list_agents shows them)")]
    UnknownAgent(String),
    #[error("unknown model `{0}` for spawn_agent")]
    UnknownModel(String),
    #[error("unknown role `{name}`; known roles: {known}")]
    UnknownRole { name: String, known: String },
    #[error("agent depth limit reached (agents.max_depth = {0}): solve the task yourself")]
    DepthLimit(u32),
    #[error(
        "agent thread limit reached: {open} agents are open (agents.max_threads = {max}); \
         close one you no longer need with close_agent"
    )]
    ThreadLimit { open: usize, max: usize },
    #[error(
        "the tree's token budget is spent ({0} tokens, agents.max_tree_tokens); no new agents"
    )]
    BudgetSpent(u64),
    #[error("the agent's goal was refused: {0}")]
    Goal(rein_protocol::GoalError),
    #[error("the turn ended before the agent could be spawned")]
    TurnEnded,
    #[error("the agent's rollout could not be created: {0}")]
    CreateRollout(#[source] RolloutError),
    #[error("the agent could not be started: {0}")]
    Start(#[source] KernelError),
    #[error("{0}")]
    Thread(#[from] ThreadError),
    #[error("an agent cannot send input to itself")]
    SendToSelf,
    #[error("agent `{0}` is closed; reopen it with resume_agent first")]
    Closed(String),
    #[error("targets must name at least one agent")]
    NoTargets,
    #[error("timeout_ms must be greater than zero")]
    ZeroTimeout,
    #[error("the wait was interrupted")]
    WaitInterrupted,
    #[error("only the agent that spawned `{target}` can {action} it")]
    NotTheParent {
        target: String,
        action: &'static str,
    },
    #[error("agents cannot be reopened: threads are not persisted here")]
    NotPersisted,
    #[error("agent `{target}` could not be reopened: {source}")]
    ReopenRead {
        target: String,
        #[source]
        source: RolloutError,
    },
    #[error("agent `{target}` could not be reopened: {source}")]
    ReopenStart {
        target: String,
        #[source]
        source: KernelError,
    },
    #[error("invalid arguments for {tool}: {source}")]
    BadArguments {
        tool: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("the plan was refused: {0}")]
    Plan(#[from] super::graph::validate::PlanError),
    #[error("submit_review is for reviewer tasks of a task graph")]
    NotAReviewer,
    #[error("a rejection needs at least one finding saying what to fix")]
    RejectionWithoutFindings,
    #[error("the task graph change could not be recorded")]
    GraphNotRecorded,
    #[error("the wait for the task graph was interrupted; the graph is kept, plan_tasks again to resume")]
    PlanInterrupted,
}

/// A task given as input parts that are not one.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("give either `message` or `items`, not both")]
    Both,
    #[error("give the task as `message` (or `items`)")]
    Neither,
    #[error("an image item needs `image_url`")]
    ImageWithoutUrl,
    #[error("a local_image item needs `path`")]
    LocalImageWithoutPath,
    #[error("items of type `{0}` are not supported")]
    Unsupported(String),
    #[error("the input is empty")]
    Empty,
}
