//! A skill the model opens itself (a tool call reading its `SKILL.md`) may depend on MCP
//! servers (its `agents/openai.yaml`, recorded in the thread's context). After the step's
//! calls, each such server is made to run through the thread's tool sources (the MCP
//! supervisor starts one that never started, failed or stopped, and the turn waits until
//! it has settled), so the next step is offered its tools. One that cannot be had is not
//! dropped silently: the user gets a warning and the model a developer message saying so.

use rein_protocol::{EventMsg, Item, ItemId, ToolAction};

use super::step::StepContext;
use super::task::RegularTask;

/// The (skill, server) pairs the successful call described by `action` needs.
pub(super) fn needed(step: &StepContext, action: &ToolAction) -> Vec<(String, String)> {
    rein_protocol::skill_reads(&step.skills, action)
        .into_iter()
        .flat_map(|skill| {
            skill
                .mcp_servers
                .iter()
                .map(|server| (skill.name.clone(), server.clone()))
        })
        .collect()
}

impl RegularTask {
    /// Make the servers `needed` names run; a warning and a note to the model for each
    /// that cannot.
    pub(super) async fn start_skill_servers(&mut self, needed: Vec<(String, String)>) {
        for (skill, server) in needed {
            let why = match self.turn.tools.sources.ensure_server(&server) {
                None => format!("the MCP server `{server}` is not configured"),
                Some(ready) => {
                    let outcome = tokio::select! {
                        outcome = ready => outcome,
                        () = self.cancel.cancelled() => return,
                    };
                    match outcome {
                        Ok(()) => continue,
                        Err(why) => why,
                    }
                }
            };
            let text = format!(
                "<skill_dependency_error>The skill `{skill}` depends on an MCP server that \
                 is not available: {why}. Its tools are not available in this \
                 session.</skill_dependency_error>"
            );
            self.sink.emit(EventMsg::Warning {
                message: format!("skill {skill}: {why}"),
            });
            self.record(Item::DeveloperMessage {
                id: ItemId::new(),
                text,
            });
        }
    }
}
