//! Events: everything a thread tells its clients. Every event carries the thread id, the
//! turn it belongs to (if any) and a per-thread sequence number that increases by one.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::advisor::{AdvisorRisk, AdvisorVerdict, ReviewedCall};
use crate::agents::{AgentOrigin, Strategy};
use crate::client_request::{ClientRequest, SessionGrant};
use crate::context::ThreadContext;
use crate::fingerprint::RequestFingerprint;
use crate::goal::{GoalBudget, GoalCheckpoint, ThreadGoal};
use crate::hooks::{HookEventName, HookRunStatus, HookSource};
use crate::ids::{ItemId, MemoryId, SessionId, SubmissionId, ThreadId, TurnId};
use crate::items::{InputPart, Item};
use crate::memory::{MemoryDecider, MemoryRecord, ThreadMemoryMode};
use crate::settings::ThreadSettings;
use crate::status::TokenUsage;
use crate::task_graph::TaskGraphChange;
use crate::tool_facts::{ToolAction, ToolOutcome};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    pub thread_id: ThreadId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// Per-thread, strictly increasing by one from 0.
    pub seq: u64,
    /// Milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    pub msg: EventMsg,
}

/// What kind of work a turn runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    Regular,
    Review,
    Compact,
}

/// Why a turn ended without completing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnAbortReason {
    /// The user interrupted.
    Interrupted,
    /// The turn's wall-time or token budget was spent; resumable once budget is added.
    BudgetLimited,
    /// A new turn displaced it.
    Replaced,
    ReviewEnded,
}

/// Why a compaction ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    /// Asked for by the client.
    Manual,
    /// The context crossed the auto-compaction limit.
    Auto,
    /// The model answered "context window exceeded".
    ContextExceeded,
    /// A switch to a model whose window the conversation does not fit.
    ModelSwitch,
}

/// Machine-readable error codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    ModelUnavailable,
    ModelBadRequest,
    Unauthorized,
    ContextWindowExceeded,
    RateLimited,
    StreamInterrupted,
    ToolFailed,
    RolloutWrite,
    /// A queued operation nobody waited on could not be carried out (e.g. a review asked
    /// for behind a turn, when the thread's model is gone by the time it runs).
    OpRefused,
    Internal,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventMsg {
    /// First event of every thread: who it is and what it runs with.
    ThreadConfigured {
        session_id: SessionId,
        settings: ThreadSettings,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        forked_from: Option<ThreadId>,
        /// A root's strategy, chosen at its creation; `None` for sub-agents and in rollouts
        /// written before it was recorded (those follow the configuration).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strategy: Option<Strategy>,
    },
    /// What the model is told before the thread's history in every request (the
    /// project's `AGENTS.md`, the skills list), assembled when the thread was created.
    /// Recorded right after `ThreadConfigured` (and a sub-agent's `AgentOrigin`).
    ContextLoaded {
        context: ThreadContext,
    },
    /// This thread is a sub-agent (the second event of a child's rollout).
    AgentOrigin {
        origin: AgentOrigin,
    },
    /// This thread spawned a sub-agent; recorded before the child is created, so a crash
    /// never leaves a child its parent does not know.
    AgentSpawned {
        thread_id: ThreadId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nickname: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
        task: String,
    },
    /// A sub-agent was given a new task (its last task, as listings show it).
    AgentTasked {
        thread_id: ThreadId,
        task: String,
    },
    /// A sub-agent of this thread was closed (with its subtree): not resumed with it.
    AgentClosed {
        thread_id: ThreadId,
    },
    /// Mail from another thread of the tree waits in this thread's mailbox (a turn runs and
    /// drains it at its next step): recorded so that mail a crash interrupts is delivered
    /// when the thread is restored.
    MailQueued {
        submission_id: SubmissionId,
        from: ThreadId,
        items: Vec<InputPart>,
    },
    /// Mail left the mailbox: it is in the history now.
    MailTaken {
        submission_ids: Vec<SubmissionId>,
    },
    /// Settings changed (carried by an accepted input).
    SettingsChanged {
        settings: ThreadSettings,
    },
    /// The thread was given a user-facing name (the last one wins).
    ThreadNamed {
        name: String,
    },
    TurnStarted {
        kind: TaskKind,
        /// The settings captured for this turn.
        settings: ThreadSettings,
        /// Set when this turn restarts an interrupted one with the same id.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        recovered: bool,
        /// The JSON Schema the final answer must follow, when the input asked for one;
        /// kept here so a recovered or resumed turn asks for it again.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_schema: Option<serde_json::Value>,
    },
    TurnCompleted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_agent_message: Option<String>,
    },
    TurnAborted {
        reason: TurnAbortReason,
    },
    /// The turn ended because of an error (the `Error` event before it says which).
    TurnFailed {
        code: ErrorCode,
        message: String,
    },
    /// An item began (e.g. the model started a message). Not part of history yet.
    ItemStarted {
        item_id: ItemId,
        kind: ItemKind,
    },
    /// An item is complete and part of the model-visible history from now on.
    ItemCompleted {
        item: Item,
    },
    AgentMessageDelta {
        item_id: ItemId,
        delta: String,
    },
    ReasoningDelta {
        item_id: ItemId,
        delta: String,
    },
    /// A tool call is about to run; `action` is what its tool says it will do. (Rollouts
    /// written before tools described their calls lack it: the store's decoder upgrades
    /// them, so in memory it is always there.)
    ToolCallBegin {
        call_id: String,
        name: String,
        arguments: String,
        action: ToolAction,
    },
    /// The advisor reviews a batch of tool calls before any of them is announced.
    AdvisorReviewStarted {
        review_id: String,
        /// The directory the calls would run in (the turn's cwd).
        cwd: PathBuf,
        risk: AdvisorRisk,
        calls: Vec<ReviewedCall>,
    },
    /// The advisor's verdict on the batch of `review_id`.
    AdvisorReviewCompleted {
        review_id: String,
        verdict: AdvisorVerdict,
        duration_ms: u64,
    },
    /// A user hook starts running for `event_name` (for the tool call `call_id`, when it
    /// is about one).
    HookStarted {
        run_id: String,
        event_name: HookEventName,
        /// The hook's key (`source:file:event:group:handler`), as trust names it.
        key: String,
        command: String,
        source: HookSource,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
    },
    /// The run `run_id` ended; `message` is the reason of a block or what failed.
    HookCompleted {
        run_id: String,
        status: HookRunStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        duration_ms: u64,
    },
    /// Output a running tool produced so far (e.g. a command's stdout).
    ToolOutputDelta {
        call_id: String,
        delta: String,
    },
    /// The model opened a skill's `SKILL.md` (the call `call_id` read it): an implicit
    /// activation of that skill. `sha256` is the file's as the thread's context read it.
    /// (An explicit one is the `skill` part of the user message.)
    SkillActivated {
        call_id: String,
        skill: crate::context::SkillActivation,
    },
    /// A tool call ended; `outcome` is what its tool reports it did. (Rollouts written
    /// before tools reported outcomes lack it: the store's decoder upgrades them.)
    ToolCallEnd {
        call_id: String,
        success: bool,
        duration_ms: u64,
        outcome: ToolOutcome,
    },
    /// A running call asks the client something (an approval, a question) and waits.
    #[serde(alias = "approval_requested")]
    ClientRequested {
        #[serde(alias = "approval_id")]
        request_id: String,
        call_id: String,
        request: ClientRequest,
    },
    /// A client request was answered or cancelled. `grant` is what an approval "for the
    /// session" let through from now on.
    #[serde(alias = "approval_resolved")]
    ClientRequestResolved {
        #[serde(alias = "approval_id")]
        request_id: String,
        outcome: ApprovalOutcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grant: Option<SessionGrant>,
    },
    /// Usage of one response and the thread's running total.
    TokenCount {
        last: TokenUsage,
        total: TokenUsage,
        /// The model's context window, when known: `last` input + output over it is how full
        /// the context is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_window: Option<u64>,
    },
    PlanUpdated {
        plan: Vec<PlanStep>,
    },
    /// A patch changed files: one entry per file, each with its unified diff. Written by
    /// rein before tool calls reported outcomes (the `patched` outcome of `ToolCallEnd`
    /// says it now); kept so that those rollouts still load.
    PatchApplied {
        call_id: String,
        changes: Vec<FileDiff>,
    },
    /// Every file change of the turn so far, as one unified diff (the turn's patches in
    /// order).
    TurnDiff {
        unified_diff: String,
    },
    /// A step is about to send its model request: what it sends, as hashes (once per
    /// step, before the first attempt; a compaction's summarising request has none).
    StepRequested {
        fingerprint: RequestFingerprint,
    },
    /// A sampling request is retried after a recoverable failure.
    StreamRetry {
        attempt: u32,
        max_attempts: u32,
        message: String,
    },
    /// The model failed recoverably past its retries; the request goes to `to` instead.
    ModelRerouted {
        from: String,
        to: String,
        reason: String,
    },
    CompactionStarted {
        trigger: CompactionTrigger,
        tokens_before: u64,
    },
    /// The model-visible history is now the items of the previous history at the indices in
    /// `kept`, with `summary` inserted before the `summary_at`-th of them. Earlier items are
    /// referenced, never copied, so a compaction costs the rollout O(summary) bytes.
    Compacted {
        summary: Item,
        kept: Vec<u32>,
        summary_at: u32,
        tokens_before: u64,
        tokens_after: u64,
    },
    ModelSwitched {
        from: String,
        to: String,
    },
    /// The last `turns` turns were dropped from model-visible history.
    RolledBack {
        turns: u32,
    },
    Warning {
        message: String,
    },
    Error {
        code: ErrorCode,
        message: String,
    },
    /// Last event of a thread.
    ShutdownComplete,
    /// A `remember` call proposed a memory (content already redacted); its answer follows
    /// as `MemoryAccepted` or `MemoryRejected`.
    MemoryProposed {
        call_id: String,
        memory: Box<MemoryRecord>,
    },
    /// The proposed memory is kept and will be given to later turns in its scope.
    MemoryAccepted {
        call_id: String,
        id: MemoryId,
        by: MemoryDecider,
    },
    /// The proposed memory is not kept; the model was told `reason`.
    MemoryRejected {
        call_id: String,
        id: MemoryId,
        by: MemoryDecider,
        reason: String,
    },
    /// The thread's memory mode was set (`thread/memoryMode/set`); the last one wins and
    /// applies from the next turn on.
    MemoryModeSet {
        mode: ThreadMemoryMode,
    },
    /// The thread's task graph changed (a plan, a node started or finished); the graph is
    /// the fold of these (`docs/task-graphs.md`).
    TaskGraphChanged {
        change: TaskGraphChange,
    },
    /// The thread's goal was created or changed (the whole goal as it is now).
    GoalUpdated {
        goal: ThreadGoal,
    },
    /// The thread's goal was removed.
    GoalCleared,
    /// The kernel started this turn to continue the thread's goal; `remaining` is the
    /// budget left when it started. Counts one goal turn.
    GoalTurnStarted {
        remaining: GoalBudget,
    },
    /// Where the goal stands after a goal turn.
    GoalCheckpointed {
        checkpoint: GoalCheckpoint,
    },
}

impl EventMsg {
    /// Streaming deltas are not persisted: their content is in the completed item.
    pub fn is_delta(&self) -> bool {
        matches!(
            self,
            EventMsg::AgentMessageDelta { .. }
                | EventMsg::ReasoningDelta { .. }
                | EventMsg::ToolOutputDelta { .. }
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    AgentMessage,
    Reasoning,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalOutcome {
    Approved,
    ApprovedForSession,
    Denied,
    /// Denied, and so is the same request for the rest of the thread.
    DeniedForSession,
    Aborted,
    /// The turn ended (interrupt, shutdown) before an answer came.
    Cancelled,
    /// A question was answered.
    Answered,
}

/// One file a patch changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileDiff {
    pub path: PathBuf,
    pub kind: FileChangeKind,
    /// Where an updated file was moved to, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub move_to: Option<PathBuf>,
    pub unified_diff: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileChangeKind {
    Add,
    Delete,
    Update,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanStep {
    pub step: String,
    pub status: PlanStepStatus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanStepStatus {
    Pending,
    InProgress,
    Completed,
}
