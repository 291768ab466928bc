//! The model's goal tools, as Codex has them: `get_goal`, `create_goal` (only when the
//! user asked for a goal) and `update_goal` (`complete`, `blocked`, or `paused` when the
//! user asked; resuming and budgets belong to the user). Each asks the thread's loop,
//! which owns the goal. `update_goal {status: "complete"}` is not believed: the loop
//! answers with the criteria to verify, this tool runs their verifiers (`super::verify`:
//! shell commands through the thread's own `shell` tool, MCP calls through the thread's
//! MCP tools, evaluator prompts through the goal's evaluator model), and the loop marks
//! the goal complete only if every one passed.

use std::sync::Arc;

use futures::future::BoxFuture;
use rein_protocol::{GoalStatus, ThreadGoal, VerifierOutcome};
use serde::Deserialize;
use serde_json::json;

use super::{verify, GoalReply, GoalRequest};
use crate::goal::policy::remaining;
use crate::tools::{StaticTools, Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

/// The goal tools, one set shared by every thread.
pub fn goal_tools() -> Arc<StaticTools> {
    Arc::new(StaticTools::new(vec![
        Arc::new(GetGoal),
        Arc::new(CreateGoal),
        Arc::new(UpdateGoal),
        Arc::new(Wait),
    ]))
}

struct GetGoal;
struct CreateGoal;
struct UpdateGoal;
struct Wait;

fn goal_json(goal: Option<&ThreadGoal>) -> serde_json::Value {
    match goal {
        None => json!({"goal": null}),
        Some(g) => json!({
            "goal": g,
            "remaining": remaining(&g.budget, &g.spent()),
        }),
    }
}

async fn ask(ctx: &ToolContext, request: GoalRequest) -> Result<GoalReply, String> {
    match ctx.goal(request).await {
        None => Err("goals are not available in this thread".to_owned()),
        Some(Err(error)) => Err(error.to_string()),
        Some(Ok(reply)) => Ok(reply),
    }
}

impl Tool for GetGoal {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "get_goal".into(),
            description:
                "Read this thread's goal: objective, status, budgets, usage and what is left."
                    .into(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        }
    }

    fn run<'a>(&'a self, _call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match ask(&ctx, GoalRequest::Get).await {
                Ok(GoalReply::Goal(goal)) => ToolResult::ok(goal_json(goal.as_ref()).to_string()),
                Ok(_) => ToolResult::err("unexpected answer"),
                Err(message) => ToolResult::err(message),
            }
        })
    }
}

#[derive(Deserialize)]
struct CreateArgs {
    objective: String,
    #[serde(default)]
    token_budget: Option<u64>,
}

impl Tool for CreateGoal {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "create_goal".into(),
            description:
                "Create a goal for this thread. Only when the user explicitly asked for a \
                          goal; do not infer goals. Fails if the thread already has one."
                    .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "objective": {"type": "string", "description": "what must be true when the goal is complete (at most 4000 characters)"},
                    "token_budget": {"type": "integer", "minimum": 1}
                },
                "required": ["objective"],
                "additionalProperties": false
            }),
        }
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: CreateArgs = match serde_json::from_str(&call.arguments) {
                Ok(args) => args,
                Err(e) => return ToolResult::err(format!("bad arguments: {e}")),
            };
            let request = GoalRequest::Create {
                objective: args.objective,
                token_budget: args.token_budget,
            };
            match ask(&ctx, request).await {
                Ok(GoalReply::Goal(goal)) => ToolResult::ok(goal_json(goal.as_ref()).to_string()),
                Ok(_) => ToolResult::err("unexpected answer"),
                Err(message) => ToolResult::err(message),
            }
        })
    }
}

#[derive(Deserialize)]
struct UpdateArgs {
    status: GoalStatus,
    #[serde(default)]
    note: Option<String>,
}

impl Tool for UpdateGoal {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "update_goal".into(),
            description: "Report this thread's goal as complete (the kernel runs the goal's \
                          acceptance checks first and keeps the goal active if one fails), \
                          blocked (you cannot go on: say why in note), or paused (only when the \
                          user asked). Resuming and budgets belong to the user."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "status": {"type": "string", "enum": ["complete", "blocked", "paused"]},
                    "note": {"type": "string", "description": "what was done, or why it is blocked"}
                },
                "required": ["status"],
                "additionalProperties": false
            }),
        }
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: UpdateArgs = match serde_json::from_str(&call.arguments) {
                Ok(args) => args,
                Err(e) => return ToolResult::err(format!("bad arguments: {e}")),
            };
            let request = GoalRequest::Update {
                status: args.status,
                note: args.note,
            };
            let plan = match ask(&ctx, request).await {
                Ok(GoalReply::Goal(goal)) => return updated(goal.as_ref(), &[]),
                Ok(GoalReply::Verify(plan)) => plan,
                Ok(GoalReply::Wait(_) | GoalReply::Carved(_)) => {
                    return ToolResult::err("unexpected answer")
                }
                Err(message) => return ToolResult::err(message),
            };
            let mut outcomes = Vec::with_capacity(plan.criteria.len());
            for (n, criterion) in plan.criteria.iter().enumerate() {
                outcomes.push(verify::run(&ctx, &call.call_id, n, criterion, &plan).await);
            }
            match ask(
                &ctx,
                GoalRequest::Verified {
                    outcomes: outcomes.clone(),
                },
            )
            .await
            {
                Ok(GoalReply::Goal(goal)) => updated(goal.as_ref(), &outcomes),
                Ok(_) => ToolResult::err("unexpected answer"),
                Err(message) => ToolResult::err(message),
            }
        })
    }
}

#[derive(Deserialize)]
struct WaitArgs {
    seconds: f64,
}

impl Tool for Wait {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "wait".into(),
            description: "Wait before going on with the goal, when what you need is not \
                          ready yet (CI, a long build, a deploy): cheaper than another turn. \
                          The wait is bounded by the goal's wall time left and 600 seconds; \
                          a turn that waits is not counted as a turn without progress."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 600}
                },
                "required": ["seconds"],
                "additionalProperties": false
            }),
        }
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let requested = match serde_json::from_str::<WaitArgs>(&call.arguments) {
                Ok(args) if args.seconds.is_finite() && args.seconds > 0.0 => {
                    std::time::Duration::from_secs_f64(args.seconds.min(1e6))
                }
                Ok(_) => return ToolResult::err("seconds: must be a positive number"),
                Err(e) => return ToolResult::err(format!("bad arguments: {e}")),
            };
            let granted = match ask(&ctx, GoalRequest::Wait { requested }).await {
                Ok(GoalReply::Wait(granted)) => granted,
                Ok(_) => return ToolResult::err("unexpected answer"),
                Err(message) => return ToolResult::err(message),
            };
            // The loop's own timer would need a round trip per tick; the turn's task is
            // cancelled (and this timer dropped) by an interrupt or the goal's deadline.
            tokio::time::sleep(granted).await;
            ToolResult::ok(format!("waited {} ms", granted.as_millis()))
        })
    }
}

/// The model's answer after an update: what the goal is now, and the verifier runs.
fn updated(goal: Option<&ThreadGoal>, outcomes: &[VerifierOutcome]) -> ToolResult {
    let status = goal.map(|g| g.status);
    let checks: Vec<serde_json::Value> = outcomes
        .iter()
        .map(|o| json!({"criterion": o.criterion, "passed": o.passed, "exit_code": o.exit_code, "output": o.output}))
        .collect();
    let text = json!({"status": status, "checks": checks}).to_string();
    let failed = outcomes.iter().any(|o| !o.passed);
    if failed {
        ToolResult::err(format!(
            "The goal is not complete: an acceptance check failed; it stays active. {text}"
        ))
    } else {
        ToolResult::ok(text)
    }
}
