//! Per-thread settings that an input may change (all or nothing) and a turn captures.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// When the kernel asks the user before a tool acts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// Only known-safe read-only commands run without asking.
    Untrusted,
    /// The model may ask to run outside the sandbox.
    OnRequest,
    /// Run sandboxed; on a sandbox failure ask to rerun without it.
    OnFailure,
    /// Never ask; failures go back to the model.
    #[default]
    Never,
}

/// What tools may touch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxPolicy {
    #[default]
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

/// Refinements of a sandbox policy, as a client gives them with the policy (Codex's
/// `sandboxPolicy` object). When a thread has none, the configuration's defaults apply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct SandboxOptions {
    /// Writable under workspace-write besides the cwd (absolute paths).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable_roots: Vec<PathBuf>,
    /// Sandboxed commands may use the network (and Unix-domain sockets).
    #[serde(default, skip_serializing_if = "is_false")]
    pub network_access: bool,
    /// `$TMPDIR` is not a writable root.
    #[serde(default, skip_serializing_if = "is_false")]
    pub exclude_tmpdir_env_var: bool,
    /// `/tmp` is not a writable root.
    #[serde(default, skip_serializing_if = "is_false")]
    pub exclude_slash_tmp: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    Minimal,
    Low,
    Medium,
    High,
}

/// Limits on one turn; a turn that spends either is aborted with `BudgetLimited`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnBudget {
    /// Wall-clock limit for the whole turn, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wall_time_ms: Option<u64>,
    /// Limit on tokens (input + output) summed over the turn's sampling requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
}

/// The settings a thread runs with. A turn captures a copy when it starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadSettings {
    pub model: String,
    pub cwd: PathBuf,
    pub approval_policy: ApprovalPolicy,
    pub sandbox_policy: SandboxPolicy,
    /// The client's refinements of `sandbox_policy`; `None`: the configuration's defaults.
    /// Absent from rollouts written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_options: Option<SandboxOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    #[serde(default)]
    pub budget: TurnBudget,
    /// Instructions sent with every request (the system prompt).
    #[serde(default)]
    pub instructions: String,
}

/// A requested change to some settings; `None` leaves a field as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SettingsChange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<ApprovalPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_policy: Option<SandboxPolicy>,
    /// The client's refinements of `sandbox_policy`.
    // Boxed: rarely set, and inline it would make every change (and message) larger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_options: Option<Box<SandboxOptions>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<TurnBudget>,
}

impl SettingsChange {
    pub fn is_empty(&self) -> bool {
        self == &SettingsChange::default()
    }

    /// The settings that result from applying this change. Validation is the kernel's job.
    pub fn applied_to(&self, base: &ThreadSettings) -> ThreadSettings {
        let mut next = base.clone();
        if let Some(model) = &self.model {
            next.model.clone_from(model);
        }
        if let Some(cwd) = &self.cwd {
            next.cwd.clone_from(cwd);
        }
        if let Some(p) = self.approval_policy {
            next.approval_policy = p;
        }
        if let Some(p) = self.sandbox_policy {
            next.sandbox_policy = p;
        }
        if let Some(o) = &self.sandbox_options {
            next.sandbox_options = Some(SandboxOptions::clone(o));
        }
        if let Some(e) = self.reasoning_effort {
            next.reasoning_effort = Some(e);
        }
        if let Some(b) = self.budget {
            next.budget = b;
        }
        next
    }
}
