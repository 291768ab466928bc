//! `update_plan`: the model keeps a short checklist; each call replaces it and tells
//! clients (a `PlanUpdated` event) once the plan is valid.

use futures::future::BoxFuture;
use rein_protocol::{PlanStep, PlanStepStatus, ToolAction};
use serde::Deserialize;
use serde_json::json;

use super::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

#[derive(Deserialize)]
struct Args {
    // `explanation` is accepted (models send it) but `PlanUpdated` has no field for it;
    // serde ignores unknown fields, so it needs no member here.
    plan: Vec<PlanStep>,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct UpdatePlanTool;

impl Tool for UpdatePlanTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "update_plan".to_owned(),
            description: "Replace the task plan: a list of steps, each pending, in_progress \
                          or completed; at most one in_progress."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "explanation": {"type": "string"},
                    "plan": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "step": {"type": "string"},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                            },
                            "required": ["step", "status"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["plan"],
                "additionalProperties": false
            }),
        }
    }

    fn describe(&self, call: &ToolCall, _ctx: &ToolContext) -> ToolAction {
        match serde_json::from_str::<Args>(&call.arguments) {
            Ok(args) => ToolAction::Plan { plan: args.plan },
            Err(_) => ToolAction::other(&call.name, &call.arguments),
        }
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match serde_json::from_str(&call.arguments) {
                Ok(a) => a,
                Err(e) => return ToolResult::err(format!("invalid update_plan arguments: {e}")),
            };
            let in_progress = args
                .plan
                .iter()
                .filter(|s| s.status == PlanStepStatus::InProgress)
                .count();
            if in_progress > 1 {
                return ToolResult::err(format!(
                    "at most one step may be in_progress; {in_progress} are"
                ));
            }
            ctx.plan_updated(args.plan);
            ToolResult::ok("Plan updated")
        })
    }
}
