//! rein's wire types: what clients send to the kernel ([`Op`]) and what the kernel sends
//! back ([`Event`]), with the ids, history items and settings they carry.
//!
//! Architecture invariant: this crate is pure data. It depends on serde, schemars and
//! uuid only — no tokio, no I/O — so any client can use it.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod advisor;
pub mod agents;
pub mod client_request;
pub mod context;
pub mod event;
pub mod fingerprint;
pub mod goal;
pub mod hooks;
pub mod ids;
pub mod items;
pub mod memory;
pub mod op;
pub mod schema;
pub mod script;
pub mod settings;
pub mod shell_words;
pub mod status;
pub mod task_graph;
pub mod tool_facts;
pub mod trajectory;

pub use advisor::{AdvisorFailure, AdvisorRisk, AdvisorVerdict, ReviewedCall};
pub use agents::{AgentOp, AgentOrigin, AgentReport, AgentReportStatus, ChildAgent, Strategy};
pub use client_request::{
    ClientRequest, ClientResponse, ElicitationAction, Question, QuestionOption, SessionGrant,
};
pub use context::{
    skill_reads, ContextKind, ContextMessage, ContextRole, ContextSource, ContextSourceKind,
    SkillActivation, SkillFile, SkillSelector, SkillToggle, ThreadContext,
};
pub use event::{
    ApprovalOutcome, CompactionTrigger, ErrorCode, Event, EventMsg, FileChangeKind, FileDiff,
    ItemKind, PlanStep, PlanStepStatus, TaskKind, TurnAbortReason,
};
pub use fingerprint::{RequestFingerprint, ToolFingerprint};
pub use goal::{
    check_criteria, check_objective, BudgetKind, Criterion, GoalBudget, GoalChange, GoalCheckpoint,
    GoalError, GoalOrigin, GoalStatus, GoalUsage, ThreadGoal, Verifier, VerifierOutcome,
    MAX_OBJECTIVE_CHARS,
};
pub use hooks::{HookEventName, HookRunStatus, HookSource};
pub use ids::{ItemId, MemoryId, SessionId, SubmissionId, ThreadId, TurnId};
pub use items::{InputPart, Item, MessageRole, INTERRUPTION_MARKER};
pub use memory::{
    MemoryConsent, MemoryDecider, MemoryRecord, MemoryScope, MemoryState, Redaction, RepoKey,
    ThreadMemoryMode, MAX_MEMORY_BYTES,
};
pub use op::{
    ApprovalDecision, InputMode, InputOutcome, InterruptOutcome, Op, OpResult, RejectReason,
    ReviewTarget, Submission, USER_SHELL_CALL_PREFIX,
};
pub use settings::{
    ApprovalPolicy, EmptyEffort, ReasoningEffort, SandboxOptions, SandboxPolicy, SettingsChange,
    ThreadSettings, TurnBudget, UnknownPolicy,
};
pub use status::{AgentStatus, TokenUsage};
pub use task_graph::{
    FailurePolicy, FindingSeverity, GraphStatus, ReviewFinding, ReviewVerdict, TaskAttempt,
    TaskFailureKind, TaskGraph, TaskGraphChange, TaskNode, TaskNodeSpec, TaskOutcome, TaskState,
};
pub use tool_facts::{
    shell_join, CommandAction, Decliner, ExitStatus, InterruptCause, ToolAction, ToolFacts,
    ToolOutcome,
};

// What used to be this crate's integration tests, run with its unit tests so the crate
// builds one test binary (CONTRIBUTING.md): they use only the public API.
#[cfg(test)]
mod tests {
    mod round_trip;
    mod schema_drift;
    mod task_graph;
}
