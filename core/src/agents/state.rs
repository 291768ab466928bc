//! An agent's status as the model reads it (Codex's `AgentStatus` shape: a string, or
//! `{"completed": message}` / `{"errored": message}`), and the mail a finished child sends.

use rein_protocol::{AgentReport, AgentReportStatus, ThreadId};
use serde::Serialize;
use serde_json::json;

/// Serialized as Codex's `AgentStatus`: unit variants as their snake_case name, the
/// others as a one-key object (`{"completed": "..."}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    /// Created, or given a task that waits for capacity; no turn runs yet.
    PendingInit,
    Running,
    /// Its last turn was aborted (interrupt, budget). Not terminal: mail resumes it.
    Interrupted,
    /// Its last turn completed with this final answer.
    Completed(Option<String>),
    Errored(String),
    Shutdown,
    NotFound,
}

impl AgentState {
    /// Whether `wait_agent` returns for it. An interrupted agent counts: waiting on it
    /// would otherwise last until the timeout.
    pub fn is_final(&self) -> bool {
        !matches!(self, AgentState::PendingInit | AgentState::Running)
    }

    /// Its status as front ends show it.
    pub fn report(&self, thread_id: ThreadId, nickname: Option<String>) -> AgentReport {
        let status = match self {
            AgentState::PendingInit => AgentReportStatus::PendingInit,
            AgentState::Running => AgentReportStatus::Running,
            AgentState::Interrupted => AgentReportStatus::Interrupted,
            AgentState::Completed(_) => AgentReportStatus::Completed,
            AgentState::Errored(_) => AgentReportStatus::Errored,
            AgentState::Shutdown => AgentReportStatus::Shutdown,
            AgentState::NotFound => AgentReportStatus::NotFound,
        };
        AgentReport {
            thread_id,
            nickname,
            status,
            message: self.message().map(str::to_owned),
        }
    }

    /// The same status without its final answer or error: what a wait tells of a result
    /// the parent already has.
    pub fn without_message(&self) -> AgentState {
        match self {
            AgentState::Completed(_) => AgentState::Completed(None),
            AgentState::Errored(_) => AgentState::Errored(String::new()),
            other => other.clone(),
        }
    }

    /// The final answer or error, for clients.
    pub fn message(&self) -> Option<&str> {
        match self {
            AgentState::Completed(m) => m.as_deref(),
            AgentState::Errored(m) => Some(m),
            _ => None,
        }
    }
}

/// The user message a parent reads when its child finished and nobody waited for it.
pub(crate) fn result_mail(child: ThreadId, nickname: Option<&str>, state: &AgentState) -> String {
    let body = json!({
        "agent_id": child.to_string(),
        "nickname": nickname,
        "status": state,
    });
    format!("<subagent_notification>\n{body}\n</subagent_notification>")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_json(state: &AgentState) -> serde_json::Value {
        serde_json::to_value(state).unwrap()
    }

    #[test]
    fn statuses_have_codex_shapes() {
        assert_eq!(to_json(&AgentState::Running), json!("running"));
        assert_eq!(to_json(&AgentState::PendingInit), json!("pending_init"));
        assert_eq!(to_json(&AgentState::NotFound), json!("not_found"));
        assert_eq!(
            to_json(&AgentState::Completed(Some("done".into()))),
            json!({"completed": "done"})
        );
        assert_eq!(
            to_json(&AgentState::Completed(None)),
            json!({"completed": null})
        );
        assert_eq!(
            to_json(&AgentState::Errored("boom".into())),
            json!({"errored": "boom"})
        );
        assert!(AgentState::Interrupted.is_final());
        assert!(!AgentState::PendingInit.is_final());
    }
}
