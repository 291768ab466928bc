//! A sub-agent tool call as Codex's `collabAgentToolCall` item, from the call's facts: the
//! operation and the agents it addressed (`ToolAction::Agent`), and the status each
//! agent was left in ([`ToolOutcome::Agents`]).

use std::collections::BTreeMap;

use rein_app_server_protocol::{
    CollabAgentState, CollabAgentStatus, CollabAgentTool, CollabAgentToolCallStatus, ThreadItem,
};
use rein_protocol::{
    AgentOp, AgentReport, AgentReportStatus, ReasoningEffort, ThreadId, ToolOutcome,
};

/// What an agent tool call says about itself.
pub struct AgentCall<'a> {
    pub op: AgentOp,
    pub targets: &'a [ThreadId],
    pub prompt: Option<&'a str>,
    pub model: Option<&'a str>,
    pub reasoning_effort: Option<ReasoningEffort>,
}

/// The item of call `id` made by thread `sender`, in progress while `outcome` is `None`.
pub fn collab_item(
    id: String,
    sender: &str,
    call: AgentCall<'_>,
    outcome: Option<&ToolOutcome>,
) -> ThreadItem {
    let reports: &[AgentReport] = match outcome {
        Some(ToolOutcome::Agents { agents, .. }) => agents,
        _ => &[],
    };
    let mut receivers: Vec<String> = call.targets.iter().map(ToString::to_string).collect();
    for report in reports {
        let id = report.thread_id.to_string();
        if !receivers.contains(&id) {
            receivers.push(id);
        }
    }
    let agents_states: BTreeMap<String, CollabAgentState> = reports
        .iter()
        .map(|r| {
            let state = CollabAgentState {
                status: status_to_wire(r.status),
                message: r.message.clone(),
            };
            (r.thread_id.to_string(), state)
        })
        .collect();
    ThreadItem::CollabAgentToolCall {
        id,
        tool: tool_to_wire(call.op),
        status: match outcome {
            None => CollabAgentToolCallStatus::InProgress,
            Some(ToolOutcome::Interrupted { .. }) => CollabAgentToolCallStatus::Interrupted,
            Some(o) if o.succeeded() => CollabAgentToolCallStatus::Completed,
            Some(_) => CollabAgentToolCallStatus::Failed,
        },
        sender_thread_id: sender.to_owned(),
        receiver_thread_ids: receivers,
        prompt: call.prompt.map(str::to_owned),
        model: call.model.map(str::to_owned),
        reasoning_effort: call.reasoning_effort.as_ref().map(ToString::to_string),
        agents_states,
    }
}

fn tool_to_wire(op: AgentOp) -> CollabAgentTool {
    match op {
        AgentOp::Spawn => CollabAgentTool::SpawnAgent,
        AgentOp::Send => CollabAgentTool::SendInput,
        AgentOp::Wait => CollabAgentTool::Wait,
        AgentOp::Close => CollabAgentTool::CloseAgent,
        AgentOp::Resume => CollabAgentTool::ResumeAgent,
        AgentOp::List => CollabAgentTool::ListAgents,
    }
}

fn status_to_wire(status: AgentReportStatus) -> CollabAgentStatus {
    match status {
        AgentReportStatus::PendingInit => CollabAgentStatus::PendingInit,
        AgentReportStatus::Running => CollabAgentStatus::Running,
        AgentReportStatus::Interrupted => CollabAgentStatus::Interrupted,
        AgentReportStatus::Completed => CollabAgentStatus::Completed,
        AgentReportStatus::Errored => CollabAgentStatus::Errored,
        AgentReportStatus::Shutdown => CollabAgentStatus::Shutdown,
        AgentReportStatus::NotFound => CollabAgentStatus::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use rein_protocol::InterruptCause;

    #[test]
    fn a_spawn_names_the_new_agent_as_receiver_with_its_state() {
        let child = ThreadId::new();
        let call = || AgentCall {
            op: AgentOp::Spawn,
            targets: &[],
            prompt: Some("count the files"),
            model: None,
            reasoning_effort: None,
        };
        let outcome = ToolOutcome::Agents {
            text: "{}".into(),
            agents: vec![AgentReport {
                thread_id: child,
                nickname: Some("Ada".into()),
                status: AgentReportStatus::PendingInit,
                message: None,
            }],
        };
        let item = collab_item("c1".into(), "parent", call(), Some(&outcome));
        assert_eq!(
            serde_json::to_value(&item).unwrap(),
            serde_json::json!({
                "type": "collabAgentToolCall",
                "id": "c1",
                "tool": "spawnAgent",
                "status": "completed",
                "senderThreadId": "parent",
                "receiverThreadIds": [child.to_string()],
                "prompt": "count the files",
                "model": null,
                "reasoningEffort": null,
                "agentsStates": {child.to_string(): {"status": "pendingInit", "message": null}},
            })
        );
        let interrupted = ToolOutcome::Interrupted {
            cause: InterruptCause::TurnAborted,
        };
        let ThreadItem::CollabAgentToolCall { status, .. } =
            collab_item("c1".into(), "parent", call(), Some(&interrupted))
        else {
            panic!("not a collab item");
        };
        assert_eq!(status, CollabAgentToolCallStatus::Interrupted);
    }
}
