//! Agent roles (`[agents.roles.NAME]`, Codex's agent-role idea): what a sub-agent of a
//! role runs with. A role only narrows what the child inherits from its parent (a model,
//! an effort, a sandbox no wider than the parent's, fewer tools), and adds instructions.

use std::collections::BTreeMap;

use rein_protocol::{ReasoningEffort, SandboxPolicy, ThreadSettings};

/// One role.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentRole {
    pub description: String,
    /// The model its agents use (default: the parent's).
    pub model: Option<String>,
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Added to the parent's instructions.
    pub instructions: String,
    /// The tools it is offered, by name; `None`: every tool.
    pub tools: Option<Vec<String>>,
    /// Its sandbox, when narrower than the parent's.
    pub sandbox: Option<SandboxPolicy>,
    /// Whether its agents are offered `spawn_agent` (within `max_depth`).
    pub may_spawn: bool,
}

/// The tool a reviewer gives its verdict with.
pub const SUBMIT_REVIEW: &str = "submit_review";

/// The built-in roles: Codex's `default`, `worker`, `explorer`, and the task-graph roles
/// `planner`, `worker` and `reviewer`.
pub fn builtin_roles() -> BTreeMap<String, AgentRole> {
    let role = |description: &str, instructions: &str| AgentRole {
        description: description.to_owned(),
        instructions: instructions.to_owned(),
        may_spawn: true,
        ..AgentRole::default()
    };
    let mut roles = BTreeMap::new();
    roles.insert(
        "default".to_owned(),
        role("Inherits everything from its parent.", ""),
    );
    roles.insert(
        "explorer".to_owned(),
        AgentRole {
            sandbox: Some(SandboxPolicy::ReadOnly),
            ..role("Reads and reports; changes nothing.", "")
        },
    );
    roles.insert(
        "worker".to_owned(),
        AgentRole {
            may_spawn: false,
            ..role(
                "Carries out one task of a plan.",
                "You carry out one task of a larger plan. Do exactly the task you are given, \
                 meet its acceptance criteria, and end with a short final answer that says what \
                 you did and which files you changed.",
            )
        },
    );
    roles.insert(
        "planner".to_owned(),
        role(
            "Decomposes a goal into a task graph.",
            "You are the planner. Break the user's goal into a small graph of tasks (typically \
             2-6) with the plan_tasks tool: give each task a stable id, a title, a role \
             (worker or reviewer), instructions, acceptance criteria and the ids it depends on. \
             Add a reviewer task (reviews = the id of the task it checks) where a result must \
             be checked. The kernel runs the tasks on sub-agents in dependency order and \
             plan_tasks returns their results; then report the outcome to the user.",
        ),
    );
    roles.insert(
        "reviewer".to_owned(),
        AgentRole {
            sandbox: Some(SandboxPolicy::ReadOnly),
            may_spawn: false,
            ..role(
                "Checks a worker's result against its acceptance criteria.",
                "You are a reviewer. Check the result you are given against the task's \
                 acceptance criteria. Give your verdict with the submit_review tool (approved, \
                 and findings with a severity each), then end with a one-line summary. A review \
                 without a submit_review call counts as a failure.",
            )
        },
    );
    roles
}

impl AgentRole {
    /// `parent`'s settings as an agent of this role gets them (the model is checked by
    /// the caller).
    pub fn narrow(&self, parent: &ThreadSettings) -> ThreadSettings {
        let mut settings = parent.clone();
        if let Some(model) = &self.model {
            settings.model.clone_from(model);
        }
        if let Some(effort) = &self.reasoning_effort {
            settings.reasoning_effort = Some(effort.clone());
        }
        if let Some(sandbox) = self.sandbox {
            settings.sandbox_policy = narrower(parent.sandbox_policy, sandbox);
        }
        if !self.instructions.is_empty() {
            if !settings.instructions.is_empty() {
                settings.instructions.push_str("\n\n");
            }
            settings.instructions.push_str(&self.instructions);
        }
        settings
    }
}

/// The narrower of two sandboxes: a role never widens what its parent may do.
fn narrower(a: SandboxPolicy, b: SandboxPolicy) -> SandboxPolicy {
    let rank = |p: SandboxPolicy| match p {
        SandboxPolicy::ReadOnly => 0,
        SandboxPolicy::WorkspaceWrite => 1,
        SandboxPolicy::DangerFullAccess => 2,
    };
    if rank(a) <= rank(b) {
        a
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_narrows_and_never_widens_the_sandbox() {
        assert_eq!(
            narrower(SandboxPolicy::WorkspaceWrite, SandboxPolicy::ReadOnly),
            SandboxPolicy::ReadOnly
        );
        assert_eq!(
            narrower(SandboxPolicy::ReadOnly, SandboxPolicy::DangerFullAccess),
            SandboxPolicy::ReadOnly
        );
        let roles = builtin_roles();
        assert_eq!(
            roles.keys().collect::<Vec<_>>(),
            ["default", "explorer", "planner", "reviewer", "worker"]
        );
    }
}
