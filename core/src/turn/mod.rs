//! A turn and what runs inside it. The loop captures a `TurnContext` when a turn starts
//! and spawns its task; the task runs steps (one sampling request each) until a final
//! answer, an error or cancellation. Spawned work talks back to the loop only through a
//! `sink::TurnSink`: it never touches thread state.

pub(crate) mod advisor;
pub(crate) mod compact;
mod fork_skill;
pub(crate) mod hook_input;
pub(crate) mod pending;
pub(crate) mod permission_hooks;
pub(crate) mod review;
pub(crate) mod session_hooks;
pub(crate) mod sink;
mod skill_servers;
pub(crate) mod step;
pub mod stop_hook;
pub(crate) mod task;
pub(crate) mod tokens;
pub(crate) mod tool_hooks;
pub(crate) mod tool_runner;
pub(crate) mod user_shell;
pub(crate) mod vision;

use std::sync::Arc;

use rein_protocol::{ErrorCode, Item, TaskKind, ThreadId, ThreadSettings, TurnId};

use crate::model::ModelClient;
use crate::tools::ThreadTools;

/// `TurnContext::withheld` for a turn offered no tools.
pub(crate) const ALL_TOOLS: &[&str] = &["*"];

/// Fixed for the whole turn.
#[derive(Clone)]
pub(crate) struct TurnContext {
    pub thread_id: ThreadId,
    pub turn_id: TurnId,
    pub kind: TaskKind,
    pub settings: Arc<ThreadSettings>,
    /// Sent before the history in every request: the thread's `ContextLoaded` prefix.
    pub prefix: Arc<[Arc<Item>]>,
    /// The skills of the thread's context: a call reading one's `SKILL.md` activates it.
    pub skills: Arc<[rein_protocol::SkillFile]>,
    pub model: Arc<dyn ModelClient>,
    /// Where requests go once `model` has failed recoverably past its retries.
    pub fallback: Option<Fallback>,
    /// Where requests carrying images go.
    pub vision: vision::Vision,
    /// The thread's tool state; its sources are consulted at every step.
    pub tools: Arc<ThreadTools>,
    /// Tools this turn is not offered whatever its sources say (a review edits nothing;
    /// [`ALL_TOOLS`]: none at all, the goal's wrap-up).
    pub withheld: &'static [&'static str],
    /// When set, the only tools this turn is offered, of those not withheld: a memory
    /// extraction's `remember`, or what the skills its input attached allow (their
    /// `allowed-tools`, together).
    pub allowed_tools: Option<Arc<[String]>>,
    pub parallel_tool_calls: bool,
    /// The structured-output schema the turn's input asked for.
    pub output_schema: Option<Arc<serde_json::Value>>,
    /// Reviews the model's tool batches before the policy engine, when configured.
    pub advisor: Option<Arc<advisor::Advisor>>,
    /// The user's hooks around each tool call, when any are configured.
    pub hooks: Option<tool_hooks::HookScope>,
    /// Memory, when the kernel has it: the turn starts with the memories in scope.
    pub memory: Option<crate::memory::Memory>,
}

/// A fallback model and its client, resolved when the turn starts.
#[derive(Clone)]
pub(crate) struct Fallback {
    pub model: String,
    pub client: Arc<dyn ModelClient>,
}

/// How a task ended, as the task itself saw it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TaskOutcome {
    Completed {
        last_agent_message: Option<String>,
    },
    Failed {
        code: ErrorCode,
        message: String,
    },
    /// The task noticed its cancellation token and stopped.
    Cancelled,
    /// The turn's token budget is spent.
    BudgetExhausted,
}
