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

/// The one spelling of each policy name: the kebab-case that config, the wire and Codex use,
/// and that serde derives above. `FromStr` is its inverse; `UnknownPolicy` names the choices.
macro_rules! policy_names {
    ($ty:ident, $what:literal, $($variant:ident => $name:literal),+ $(,)?) => {
        impl $ty {
            /// Every policy, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The policy's name as config and the wire spell it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = UnknownPolicy;

            fn from_str(text: &str) -> Result<Self, UnknownPolicy> {
                $ty::ALL
                    .iter()
                    .copied()
                    .find(|policy| policy.as_str() == text)
                    .ok_or_else(|| UnknownPolicy {
                        what: $what,
                        given: text.to_owned(),
                        expected: $ty::ALL.iter().map(|p| p.as_str()).collect(),
                    })
            }
        }
    };
}

policy_names!(ApprovalPolicy, "approval policy",
    Untrusted => "untrusted", OnRequest => "on-request", OnFailure => "on-failure", Never => "never");
policy_names!(SandboxPolicy, "sandbox policy",
    ReadOnly => "read-only", WorkspaceWrite => "workspace-write",
    DangerFullAccess => "danger-full-access");

/// A policy name that is none of the policies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPolicy {
    /// "approval policy" or "sandbox policy".
    pub what: &'static str,
    /// The name given.
    pub given: String,
    /// The names that exist.
    pub expected: Vec<&'static str>,
}

impl std::fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let expected: Vec<String> = self.expected.iter().map(|n| format!("`{n}`")).collect();
        write!(
            f,
            "unknown {} `{}`, expected one of {}",
            self.what,
            self.given,
            expected.join(", ")
        )
    }
}

impl std::error::Error for UnknownPolicy {}

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

/// A reasoning effort as Codex takes it: any non-empty name the model advertises
/// (`none`, `minimal`, `low`, `medium`, `high`, `xhigh`, …). Which names a model accepts is
/// the model catalog's knowledge, checked where a setting is made, not here; `none` means
/// thinking off (see [`ReasoningEffort::is_off`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct ReasoningEffort(#[schemars(length(min = 1))] std::borrow::Cow<'static, str>);

/// An empty effort name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmptyEffort;

impl std::fmt::Display for EmptyEffort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a reasoning effort must be a non-empty name (e.g. `none`, `low`, `high`)")
    }
}

impl std::error::Error for EmptyEffort {}

impl ReasoningEffort {
    /// Thinking off: the request asks the server not to reason, and any reasoning it
    /// streams anyway is dropped.
    pub const NONE: ReasoningEffort = ReasoningEffort(std::borrow::Cow::Borrowed("none"));
    pub const MINIMAL: ReasoningEffort = ReasoningEffort(std::borrow::Cow::Borrowed("minimal"));
    pub const LOW: ReasoningEffort = ReasoningEffort(std::borrow::Cow::Borrowed("low"));
    pub const MEDIUM: ReasoningEffort = ReasoningEffort(std::borrow::Cow::Borrowed("medium"));
    pub const HIGH: ReasoningEffort = ReasoningEffort(std::borrow::Cow::Borrowed("high"));
    pub const XHIGH: ReasoningEffort = ReasoningEffort(std::borrow::Cow::Borrowed("xhigh"));

    /// The efforts a picker offers for a model whose own list is not known.
    pub const COMMON: [ReasoningEffort; 6] = [
        Self::NONE,
        Self::MINIMAL,
        Self::LOW,
        Self::MEDIUM,
        Self::HIGH,
        Self::XHIGH,
    ];

    /// The effort named `name` (trimmed); empty names are refused.
    pub fn new(name: &str) -> Result<Self, EmptyEffort> {
        let name = name.trim();
        if name.is_empty() {
            return Err(EmptyEffort);
        }
        Ok(Self(std::borrow::Cow::Owned(name.to_owned())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this effort turns thinking off.
    pub fn is_off(&self) -> bool {
        self.0.eq_ignore_ascii_case("none")
    }
}

impl std::fmt::Display for ReasoningEffort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for ReasoningEffort {
    type Err = EmptyEffort;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl<'de> Deserialize<'de> for ReasoningEffort {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Self::new(&name).map_err(serde::de::Error::custom)
    }
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
        if let Some(e) = &self.reasoning_effort {
            next.reasoning_effort = Some(e.clone());
        }
        if let Some(b) = self.budget {
            next.budget = b;
        }
        next
    }
}

#[cfg(test)]
mod policy_name_tests {
    use super::*;

    #[test]
    fn names_are_what_serde_writes_and_parse_back() {
        for policy in ApprovalPolicy::ALL {
            let json = serde_json::to_value(policy).unwrap();
            assert_eq!(json, serde_json::Value::from(policy.as_str()));
            assert_eq!(policy.as_str().parse::<ApprovalPolicy>(), Ok(*policy));
        }
        for policy in SandboxPolicy::ALL {
            let json = serde_json::to_value(policy).unwrap();
            assert_eq!(json, serde_json::Value::from(policy.to_string()));
            assert_eq!(policy.as_str().parse::<SandboxPolicy>(), Ok(*policy));
        }
    }

    #[test]
    fn an_unknown_name_lists_the_choices() {
        let err = "sometimes".parse::<ApprovalPolicy>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown approval policy `sometimes`, expected one of `untrusted`, `on-request`, `on-failure`, `never`"
        );
    }
}
