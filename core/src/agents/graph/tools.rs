//! The task-graph tools: `plan_tasks` (the planner records or edits the graph, then waits
//! for the kernel to run it) and `submit_review` (a reviewer's structured verdict).

use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use futures::FutureExt;
use rein_protocol::{ReviewVerdict, ToolOutcome};
use serde_json::{json, Value};

use super::validate::PlanArgs;
use crate::agents::roles::SUBMIT_REVIEW;
use crate::agents::AgentControl;
use crate::tools::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

pub(crate) const PLAN_TASKS: &str = "plan_tasks";

/// `plan_tasks` and `submit_review`.
pub(in crate::agents) fn graph_tools(
    control: &Weak<AgentControl>,
) -> (Arc<dyn Tool>, Arc<dyn Tool>) {
    (
        Arc::new(PlanTasks {
            control: control.clone(),
        }),
        Arc::new(SubmitReview {
            control: control.clone(),
        }),
    )
}

struct PlanTasks {
    control: Weak<AgentControl>,
}

struct SubmitReview {
    control: Weak<AgentControl>,
}

fn node_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "Stable unique id (dependencies name it)."},
            "title": {"type": "string"},
            "role": {"type": "string", "description": "worker (default) or reviewer, or a role of [agents.roles]."},
            "instructions": {"type": "string"},
            "acceptance": {"type": "array", "items": {"type": "string"}, "description": "What the result must satisfy."},
            "deps": {"type": "array", "items": {"type": "string"}, "description": "Ids of the tasks that must complete first."},
            "reviews": {"type": "string", "description": "For a reviewer: the id of the task it checks (a rejection sends that task back with the findings)."}
        },
        "required": ["id", "title"],
        "additionalProperties": false
    })
}

fn text(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

impl Tool for PlanTasks {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: PLAN_TASKS.to_owned(),
            description: "Record a task graph (or change the current one: nodes with a known \
                id replace it, `remove` drops nodes) and let the kernel run it: each task runs \
                as a sub-agent of its role once the tasks it depends on completed, independent \
                tasks at the same time. Returns when nothing more can run, with every task's \
                state and result. A plan with a cycle, an unknown dependency or a duplicate id \
                is refused with the reason."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "nodes": {"type": "array", "items": node_schema()},
                    "edges": {"type": "array", "description": "Extra dependencies: `to` depends on `from`.", "items": {
                        "type": "object",
                        "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
                        "required": ["from", "to"],
                        "additionalProperties": false
                    }},
                    "remove": {"type": "array", "items": {"type": "string"}},
                    "failure_policy": {"type": "string", "enum": ["block_dependents", "allow_orphans", "fail_fast"]}
                },
                "additionalProperties": false
            }),
        }
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        async move {
            let Some(control) = self.control.upgrade() else {
                return ToolResult::err("sub-agents are unavailable: the kernel is shutting down");
            };
            let args: PlanArgs = match serde_json::from_str(&call.arguments) {
                Ok(args) => args,
                Err(e) => return ToolResult::err(format!("invalid arguments for plan_tasks: {e}")),
            };
            match control.plan(&ctx, args).await {
                Ok(summary) => {
                    let text = text(&summary);
                    ToolResult::new(
                        text.clone(),
                        true,
                        ToolOutcome::Returned {
                            text,
                            structured: None,
                            content: Vec::new(),
                        },
                    )
                }
                Err(e) => ToolResult::err(e.to_string()),
            }
        }
        .boxed()
    }
}

impl Tool for SubmitReview {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SUBMIT_REVIEW.to_owned(),
            description: "Give your review verdict: approved or not, with findings (each with \
                a severity). A rejection sends the task back to its worker with the findings; \
                it needs at least one finding. Call it once, before your final answer."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "approved": {"type": "boolean"},
                    "findings": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "severity": {"type": "string", "enum": ["info", "minor", "major", "critical"]},
                            "message": {"type": "string"}
                        },
                        "required": ["severity", "message"],
                        "additionalProperties": false
                    }}
                },
                "required": ["approved"],
                "additionalProperties": false
            }),
        }
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        async move {
            let Some(control) = self.control.upgrade() else {
                return ToolResult::err("sub-agents are unavailable: the kernel is shutting down");
            };
            let verdict: ReviewVerdict = match serde_json::from_str(&call.arguments) {
                Ok(v) => v,
                Err(e) => {
                    return ToolResult::err(format!("invalid arguments for submit_review: {e}"))
                }
            };
            match control.submit_verdict(ctx.thread_id, verdict) {
                Ok(()) => {
                    let text = "verdict recorded; now end with a one-line summary".to_owned();
                    ToolResult::new(
                        text.clone(),
                        true,
                        ToolOutcome::Returned {
                            text,
                            structured: None,
                            content: Vec::new(),
                        },
                    )
                }
                Err(e) => ToolResult::err(e.to_string()),
            }
        }
        .boxed()
    }
}
