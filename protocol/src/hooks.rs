//! User hooks as the kernel reports them: which event a hook ran for, where it came
//! from, and how its run ended. `HookStarted` / `HookCompleted` carry these, so every run is
//! a fact of the rollout and every front end can say why a call was blocked.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The moments a hook can run at, spelled as Claude Code and Codex spell them (their
/// hook files name these keys, their scripts read `hook_event_name`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum HookEventName {
    /// Before a tool call runs: it may block the call or rewrite its input.
    PreToolUse,
    /// After a tool call succeeded.
    PostToolUse,
    /// After a tool call failed (rein's and Claude Code's; Codex's schema lacks it).
    PostToolUseFailure,
    /// A user prompt starts a turn: a hook may block it or add context.
    UserPromptSubmit,
    /// The model gave its final answer: a hook may continue the turn with its reason.
    Stop,
    /// A session's first turn in this process starts (matcher: `startup` or `resume`): a
    /// hook may add context.
    SessionStart,
    /// A call asks the user's approval (matcher: the tool): a hook may answer for the user.
    PermissionRequest,
    /// Before the history is compacted (matcher: `manual` or `auto`): a hook may block it.
    PreCompact,
    /// After the history was compacted (matcher: `manual` or `auto`).
    PostCompact,
    /// A sub-agent's first turn starts (matcher: its role): a hook may add context.
    SubagentStart,
    /// A sub-agent gave its final answer (matcher: its role): a hook may continue it.
    SubagentStop,
    /// A thread is shut down (matcher: why, e.g. `shutdown`).
    SessionEnd,
}

impl HookEventName {
    pub const ALL: [HookEventName; 12] = [
        HookEventName::PreToolUse,
        HookEventName::PostToolUse,
        HookEventName::PostToolUseFailure,
        HookEventName::UserPromptSubmit,
        HookEventName::Stop,
        HookEventName::SessionStart,
        HookEventName::PermissionRequest,
        HookEventName::PreCompact,
        HookEventName::PostCompact,
        HookEventName::SubagentStart,
        HookEventName::SubagentStop,
        HookEventName::SessionEnd,
    ];

    /// Whether its matchers are read (against tool names, a session's source, a
    /// compaction's trigger, an agent's role); `Stop` and `UserPromptSubmit` hooks run
    /// whatever their matcher says, as Claude Code's do.
    pub fn reads_matchers(self) -> bool {
        !matches!(self, HookEventName::Stop | HookEventName::UserPromptSubmit)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            HookEventName::PreToolUse => "PreToolUse",
            HookEventName::PostToolUse => "PostToolUse",
            HookEventName::PostToolUseFailure => "PostToolUseFailure",
            HookEventName::UserPromptSubmit => "UserPromptSubmit",
            HookEventName::Stop => "Stop",
            HookEventName::SessionStart => "SessionStart",
            HookEventName::PermissionRequest => "PermissionRequest",
            HookEventName::PreCompact => "PreCompact",
            HookEventName::PostCompact => "PostCompact",
            HookEventName::SubagentStart => "SubagentStart",
            HookEventName::SubagentStop => "SubagentStop",
            HookEventName::SessionEnd => "SessionEnd",
        }
    }
}

/// Where a hook was configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookSource {
    /// The user's own files (`$REIN_HOME`, `~/.codex`, `~/.claude`): trusted.
    User,
    /// The project's files (`.rein/`, `.codex/`, `.claude/`): run once trusted.
    Project,
}

/// How one run of a hook ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookRunStatus {
    /// It ran and did not object.
    Completed,
    /// It said no (exit 2, or a `deny` / `block` decision).
    Blocked,
    /// It could not say (another exit code, a timeout, a missing program, output that is
    /// not the JSON it should be).
    Failed,
}
