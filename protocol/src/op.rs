//! Ops: everything a client sends to a thread. Four kinds, as the runtime contract names
//! them: input, control, approval answers, maintenance.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::client_request::ClientResponse;
use crate::goal::{GoalChange, GoalError, ThreadGoal};
use crate::ids::{SubmissionId, ThreadId, TurnId};
use crate::items::InputPart;
use crate::memory::ThreadMemoryMode;
use crate::settings::SettingsChange;
use crate::task_graph::TaskGraphChange;

/// An `Op` with the id it was submitted under. A user turn started by this submission
/// takes the submission id as its turn id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Submission {
    pub id: SubmissionId,
    pub op: Op,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Op {
    // --- input ---
    /// User input, routed by `mode` (start a turn, steer the running one, or reject).
    UserInput {
        items: Vec<InputPart>,
        #[serde(default)]
        mode: InputMode,
        /// Applied only if the input is accepted, all or nothing.
        #[serde(default, skip_serializing_if = "SettingsChange::is_empty")]
        settings: SettingsChange,
        /// JSON Schema the final answer of the turn this input starts must follow
        /// (structured output). Ignored when the input steers a running turn.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_schema: Option<serde_json::Value>,
    },
    /// Mail from another thread of the tree (a task, a child's result). It steers a
    /// running regular turn at its next step boundary, starts a turn (with a random UUIDv4
    /// id) on an idle thread, and, arriving after the running turn's final answer, waits
    /// for the next turn instead of reviving the finished one.
    AgentMail {
        from: ThreadId,
        items: Vec<InputPart>,
    },
    /// Mail that waits in its tree's capacity queue, before it is sent as `AgentMail`
    /// under the same submission id: only recorded (`MailQueued`), so a crash before it is
    /// sent does not lose it (a restore sends it again).
    HoldMail {
        from: ThreadId,
        items: Vec<InputPart>,
    },
    /// Held mail that will never be sent (dropped from the capacity queue): recorded as
    /// taken (`MailTaken`), so a restore does not bring it back.
    DropMail { submission_ids: Vec<SubmissionId> },
    /// Restart the interrupted turn with the same turn id and no new input.
    Recover,

    // --- control ---
    /// Abort the active turn (turn the page: partial output is kept, a marker appended).
    Interrupt,
    /// Abort `turn_id` if it is the active turn; otherwise nothing (answers `Idle`). For a
    /// client that names the turn it means, so a turn that started since is never hit.
    InterruptTurn { turn_id: TurnId },
    /// Abort the active turn because a budget beyond the turn's own is spent (its
    /// sub-agent tree's): it ends `BudgetLimited`, not `Interrupted`.
    BudgetStop,
    /// Abort whatever runs, release everything, emit `ShutdownComplete`.
    Shutdown,
    /// Kill background processes the agent started.
    CleanBackgroundTerminals,
    /// Give the thread a user-facing name (it does not reach the model, so it applies at
    /// once, even while a turn runs). Refused when blank.
    SetName { name: String },
    /// Turn memory on or off for this thread (`thread/memoryMode/set`): recorded as
    /// `MemoryModeSet`, it applies from the next turn. Answers `Accepted`.
    SetMemoryMode { mode: ThreadMemoryMode },

    // --- answers to client requests ---
    /// The answer to an approval (a `ClientRequested` event asking for one); the same as
    /// `Respond` with a `decision`.
    ApprovalAnswer {
        approval_id: String,
        decision: ApprovalDecision,
    },
    /// The answer to any `ClientRequested` event.
    Respond {
        request_id: String,
        response: ClientResponse,
    },

    // --- maintenance (run when no turn is active; queued behind a running one) ---
    /// Drop the last `turns` turns from the model-visible history (append-only: a marker).
    Rollback { turns: u32 },
    /// Summarise the history to free context (a compact turn).
    Compact,
    /// Switch the thread's model. If the conversation would not fit the new model's window,
    /// it is compacted first, with the old model.
    SwitchModel { model: String },
    /// Review code (a review turn): the model reads, never writes, and reports findings,
    /// which stay in the history for the turns after it.
    Review { target: ReviewTarget },
    /// Run the user's own command in the thread (`thread/shellCommand`, the TUI's `!cmd`):
    /// a turn of one `shell` call, judged, approved and sandboxed by the thread's tools and
    /// policies like the model's calls; call and output join the history the model reads.
    UserShell {
        command: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// Record a change of the thread's task graph (`TaskGraphChanged`). Sent by the
    /// kernel's scheduler, which validated it; answers `Accepted` once it is recorded.
    RecordTaskGraph { change: TaskGraphChange },

    // --- goals (applied at once, even while a turn runs) ---
    /// Create, edit, pause or resume the thread's goal. Answers `Goal` or `GoalRefused`.
    SetGoal { change: GoalChange },
    /// Remove the thread's goal. Answers `Goal` with the goal removed (`None`: there was none).
    ClearGoal,
}

/// The call id prefix of an `Op::UserShell` command's `shell` call: front ends show such a
/// call as the user's command, not the model's.
pub const USER_SHELL_CALL_PREFIX: &str = "user_shell_";

/// What a review looks at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReviewTarget {
    /// Staged, unstaged and untracked changes in the working tree.
    UncommittedChanges,
    /// The current branch against where it forked from `branch`.
    BaseBranch { branch: String },
    /// The changes one commit introduced.
    Commit {
        sha: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// Whatever the instructions ask for.
    Custom { instructions: String },
}

impl Op {
    pub fn user_text(text: impl Into<String>) -> Self {
        Op::UserInput {
            items: vec![InputPart::text(text)],
            mode: InputMode::StartOrSteer,
            settings: SettingsChange::default(),
            output_schema: None,
        }
    }
}

/// How an input is routed when it arrives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "mode", content = "turn_id", rename_all = "snake_case")]
pub enum InputMode {
    /// Start a turn only when idle; otherwise reject.
    StartIfIdle,
    /// Start when idle, steer the running turn when busy.
    #[default]
    StartOrSteer,
    /// Steer only this turn; reject if it is not the running regular turn.
    Steer(TurnId),
}

/// A user's answer to an approval request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    Approve,
    /// Approve, and remember the approval for the rest of this thread.
    ApproveForSession,
    Deny,
    /// Deny, and deny the same request (see `ClientRequest::same_ask`) for the rest of this
    /// thread without asking again.
    DenyForSession,
    /// Deny and interrupt the turn.
    Abort,
}

/// Where an input went. Returned to the submitter; a rejection records nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum InputOutcome {
    Started {
        turn_id: TurnId,
    },
    Steered {
        turn_id: TurnId,
    },
    /// Not steered (the running turn, e.g. a compaction, takes no steers) but kept: it
    /// starts the next turn once `behind` ends.
    Queued {
        behind: TurnId,
    },
    Rejected {
        reason: RejectReason,
    },
}

/// Why an input was not submitted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum RejectReason {
    EmptyInput,
    /// `StartIfIdle` while a turn is running.
    Busy {
        active_turn: TurnId,
    },
    /// `Steer(id)` but that turn is not the one running.
    TurnMismatch {
        expected: TurnId,
        active: Option<TurnId>,
    },
    /// The running turn is a review or compaction, which do not accept steers.
    NotSteerable {
        active_turn: TurnId,
    },
    /// The settings change carried by the input is invalid.
    InvalidSettings {
        message: String,
    },
    /// Recover without an interrupted turn to recover.
    NothingToRecover,
    ShuttingDown,
    /// The thread's rollout could not be written (a full disk): it takes nothing new
    /// until a retried write succeeds, so nothing it accepts exists only in memory.
    ReadOnly {
        message: String,
    },
}

impl std::fmt::Display for RejectReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RejectReason::EmptyInput => f.write_str("input is empty"),
            RejectReason::Busy { active_turn } => {
                write!(f, "a turn is already running ({active_turn})")
            }
            RejectReason::TurnMismatch { expected, active } => match active {
                Some(a) => write!(f, "turn {expected} is not the active turn ({a})"),
                None => write!(f, "turn {expected} is not running; no turn is active"),
            },
            RejectReason::NotSteerable { active_turn } => {
                write!(f, "the active turn {active_turn} does not accept steering")
            }
            RejectReason::InvalidSettings { message } => write!(f, "invalid settings: {message}"),
            RejectReason::NothingToRecover => f.write_str("no interrupted turn to recover"),
            RejectReason::ShuttingDown => f.write_str("the thread is shutting down"),
            RejectReason::ReadOnly { message } => write!(
                f,
                "the thread is read-only until its rollout can be written again: {message}"
            ),
        }
    }
}

/// The immediate answer to `Op::Interrupt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum InterruptOutcome {
    /// The turn is being aborted; `TurnAborted` follows.
    Interrupting { turn_id: TurnId },
    /// Nothing was running.
    Idle,
}

/// The immediate answer to any submission.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OpResult {
    Input(InputOutcome),
    Interrupt(InterruptOutcome),
    /// The op was accepted and is being (or has been) carried out.
    Accepted,
    /// The op was refused; nothing changed.
    Refused {
        message: String,
    },
    /// The thread's goal after `SetGoal`, or the goal `ClearGoal` removed.
    Goal {
        goal: Option<ThreadGoal>,
    },
    /// A goal op was refused; nothing changed.
    GoalRefused {
        error: GoalError,
    },
}
