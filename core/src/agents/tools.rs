//! The model-facing sub-agent tools, with Codex's names and argument shapes: parse the
//! call, hand it to [`AgentControl`], answer with JSON the model reads.

use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use futures::FutureExt;
use rein_protocol::{
    AgentOp, GoalBudget, InputPart, ReasoningEffort, ThreadId, ToolAction, ToolOutcome,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::error::{AgentError, InputError};
use super::spawn::{ChildGoal, SpawnRequest};
use super::AgentControl;
use crate::tools::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Spawn,
    Send,
    Wait,
    Close,
    Resume,
    List,
}

struct AgentTool {
    kind: Kind,
    control: Weak<AgentControl>,
}

type Tools = Vec<Arc<dyn Tool>>;

/// Every tool, and every tool but `spawn_agent` (for agents at the depth limit).
pub(super) fn agent_tools(control: &Weak<AgentControl>) -> (Tools, Tools) {
    let make = |kind| {
        Arc::new(AgentTool {
            kind,
            control: control.clone(),
        }) as Arc<dyn Tool>
    };
    let all = [
        Kind::Spawn,
        Kind::Send,
        Kind::Wait,
        Kind::Close,
        Kind::Resume,
        Kind::List,
    ];
    let full = all.iter().map(|k| make(*k)).collect();
    let leaf = all
        .iter()
        .filter(|k| **k != Kind::Spawn)
        .map(|k| make(*k))
        .collect();
    (full, leaf)
}

/// One input item as the tools take it (`items`), Codex's shape.
#[derive(Deserialize)]
struct ItemArg {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    image_url: Option<String>,
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpawnArgs {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    items: Option<Vec<ItemArg>>,
    #[serde(default, alias = "role")]
    agent_type: Option<String>,
    #[serde(default)]
    fork_context: Option<bool>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    reasoning_effort: Option<ReasoningEffort>,
    /// A goal of the agent's own (rein's addition), its budget carved out of the caller's.
    #[serde(default)]
    goal: Option<GoalArg>,
    /// Accepted for compatibility; rein has no service tiers.
    #[serde(default)]
    #[allow(dead_code)]
    service_tier: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GoalArg {
    objective: String,
    #[serde(default)]
    token_budget: Option<u64>,
    #[serde(default)]
    turn_budget: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SendArgs {
    #[serde(alias = "id")]
    target: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    items: Option<Vec<ItemArg>>,
    #[serde(default)]
    interrupt: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitArgs {
    targets: Vec<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetArgs {
    #[serde(alias = "id")]
    target: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResumeArgs {
    #[serde(alias = "target")]
    id: String,
}

/// `message` or `items`, exactly one, as input parts.
fn input(
    message: Option<String>,
    items: Option<Vec<ItemArg>>,
) -> Result<Vec<InputPart>, InputError> {
    let parts = match (message, items) {
        (Some(_), Some(_)) => return Err(InputError::Both),
        (None, None) => return Err(InputError::Neither),
        (Some(message), None) => vec![InputPart::text(message)],
        (None, Some(items)) => items
            .into_iter()
            .map(|item| match item.kind.as_str() {
                "text" => Ok(InputPart::text(item.text.unwrap_or_default())),
                "image" => item
                    .image_url
                    .map(|url| InputPart::Image { url })
                    .ok_or(InputError::ImageWithoutUrl),
                "local_image" => item
                    .path
                    .map(|p| InputPart::text(format!("(image at {p})")))
                    .ok_or(InputError::LocalImageWithoutPath),
                other => Err(InputError::Unsupported(other.to_owned())),
            })
            .collect::<Result<_, _>>()?,
    };
    if parts.iter().all(InputPart::is_blank) {
        return Err(InputError::Empty);
    }
    Ok(parts)
}

/// An answer as the model reads it. Serializing the answers cannot fail (plain structs,
/// string keys); `null` would stand for the impossible.
fn answer<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A call's arguments, parsed once, by the tool's own shape.
enum Args {
    Spawn(SpawnArgs),
    Send(SendArgs),
    Wait(WaitArgs),
    Close(TargetArgs),
    Resume(ResumeArgs),
    List,
}

impl Args {
    fn parse(kind: Kind, tool: &'static str, arguments: &str) -> Result<Args, AgentError> {
        let text = if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        };
        let bad = |source| AgentError::BadArguments { tool, source };
        Ok(match kind {
            Kind::Spawn => Args::Spawn(serde_json::from_str(text).map_err(bad)?),
            Kind::Send => Args::Send(serde_json::from_str(text).map_err(bad)?),
            Kind::Wait => Args::Wait(serde_json::from_str(text).map_err(bad)?),
            Kind::Close => Args::Close(serde_json::from_str(text).map_err(bad)?),
            Kind::Resume => Args::Resume(serde_json::from_str(text).map_err(bad)?),
            Kind::List => Args::List,
        })
    }

    /// The agents the call names, as the model wrote them.
    fn named(&self) -> Vec<&str> {
        match self {
            Args::Send(a) => vec![a.target.as_str()],
            Args::Close(a) => vec![a.target.as_str()],
            Args::Resume(a) => vec![a.id.as_str()],
            Args::Wait(a) => a.targets.iter().map(String::as_str).collect(),
            Args::Spawn(_) | Args::List => Vec::new(),
        }
    }

    /// The task the call gives, as text.
    fn prompt(&self) -> Option<String> {
        let (message, items) = match self {
            Args::Spawn(a) => (&a.message, &a.items),
            Args::Send(a) => (&a.message, &a.items),
            _ => return None,
        };
        message.clone().or_else(|| {
            let texts: Vec<&str> = items
                .as_deref()?
                .iter()
                .filter_map(|i| i.text.as_deref())
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        })
    }
}

fn items_schema() -> Value {
    json!({
        "type": "array",
        "description": "Structured input instead of `message`.",
        "items": {
            "type": "object",
            "properties": {
                "type": {"type": "string", "enum": ["text", "image", "local_image"]},
                "text": {"type": "string"},
                "image_url": {"type": "string"},
                "path": {"type": "string"}
            },
            "required": ["type"],
            "additionalProperties": false
        }
    })
}

impl AgentTool {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Spawn => "spawn_agent",
            Kind::Send => "send_input",
            Kind::Wait => "wait_agent",
            Kind::Close => "close_agent",
            Kind::Resume => "resume_agent",
            Kind::List => "list_agents",
        }
    }

    fn op(&self) -> AgentOp {
        match self.kind {
            Kind::Spawn => AgentOp::Spawn,
            Kind::Send => AgentOp::Send,
            Kind::Wait => AgentOp::Wait,
            Kind::Close => AgentOp::Close,
            Kind::Resume => AgentOp::Resume,
            Kind::List => AgentOp::List,
        }
    }

    /// The facts of a call, from its arguments (unreadable arguments: nothing addressed).
    fn action(&self, call: &ToolCall, ctx: &ToolContext) -> ToolAction {
        let args = Args::parse(self.kind, self.name(), &call.arguments).ok();
        self.action_of(args.as_ref(), ctx)
    }

    fn action_of(&self, args: Option<&Args>, ctx: &ToolContext) -> ToolAction {
        let named = args.map_or_else(Vec::new, Args::named);
        let targets = self.control.upgrade().map_or_else(Vec::new, |control| {
            named
                .iter()
                .filter_map(|t| {
                    control
                        .resolve(ctx.thread_id, t)
                        .ok()
                        .or_else(|| t.parse().ok())
                })
                .collect()
        });
        let (model, reasoning_effort) = match args {
            Some(Args::Spawn(a)) => (a.model.clone(), a.reasoning_effort.clone()),
            _ => (None, None),
        };
        ToolAction::Agent {
            op: self.op(),
            targets,
            prompt: args.and_then(Args::prompt),
            model,
            reasoning_effort,
        }
    }

    /// Run the call; returns the answer and the agents it concerned.
    async fn call(
        &self,
        call: &ToolCall,
        ctx: &ToolContext,
    ) -> Result<(Value, Vec<ThreadId>), AgentError> {
        let control = self.control.upgrade().ok_or(AgentError::ShuttingDown)?;
        let args = Args::parse(self.kind, self.name(), &call.arguments)?;
        let targets = match self.action_of(Some(&args), ctx) {
            ToolAction::Agent { targets, .. } => targets,
            _ => Vec::new(),
        };
        let (value, concerned) = match args {
            Args::Spawn(a) => {
                let items = input(a.message, a.items)?;
                let spawned = control
                    .spawn(
                        ctx,
                        SpawnRequest {
                            items,
                            role: a.agent_type,
                            model: a.model,
                            reasoning_effort: a.reasoning_effort,
                            fork_context: a.fork_context.unwrap_or(false),
                            goal: a.goal.map(|g| ChildGoal {
                                objective: g.objective,
                                budget: GoalBudget {
                                    tokens: g.token_budget,
                                    wall_time_ms: None,
                                    turns: g.turn_budget,
                                },
                            }),
                        },
                    )
                    .await?;
                (answer(&spawned), vec![spawned.agent_id])
            }
            Args::Send(a) => {
                let items = input(a.message, a.items)?;
                let sent = control
                    .send_input(ctx, &a.target, items, a.interrupt)
                    .await?;
                (answer(&sent), targets)
            }
            Args::Wait(a) => {
                let waited = control.wait(ctx, &a.targets, a.timeout_ms).await?;
                (answer(&waited), targets)
            }
            Args::Close(a) => (answer(&control.close(ctx, &a.target).await?), targets),
            Args::Resume(a) => (answer(&control.resume_agent(ctx, &a.id).await?), targets),
            Args::List => (answer(&control.list(ctx)?), Vec::new()),
        };
        Ok((value, concerned))
    }
}

impl Tool for AgentTool {
    /// Each tool's description and parameters, as the model reads them: long because it is
    /// mostly that prose, one arm per tool.
    fn spec(&self) -> ToolSpec {
        let (description, parameters) = match self.kind {
            Kind::Spawn => (
                "Start a sub-agent: a new thread with its own context that works on the task \
                 you give it (as its first user message) while you go on. Use it when the user \
                 asks for sub-agents or parallel work. It inherits your model, working \
                 directory and permissions; returns its agent_id and nickname at once. Its \
                 final answer reaches you as a message when it finishes, or through \
                 wait_agent."
                    .to_owned(),
                json!({
                    "type": "object",
                    "properties": {
                        "message": {"type": "string", "description": "The task, as plain text."},
                        "items": items_schema(),
                        "agent_type": {"type": "string", "description": "A role ([agents.roles]; built-in: default, explorer (read-only), worker, planner, reviewer)."},
                        "role": {"type": "string", "description": "The same as agent_type."},
                        "fork_context": {"type": "boolean", "description": "Give the agent this conversation's user messages and final answers first."},
                        "model": {"type": "string", "description": "Another model for the agent."},
                        "reasoning_effort": {"type": "string", "enum": ["minimal", "low", "medium", "high"]},
                        "goal": {
                            "type": "object",
                            "description": "Give the agent a goal of its own, which the kernel continues until it is complete, blocked or out of budget. Its budget comes out of your goal's (at most what is left; counted as spent by your goal).",
                            "properties": {
                                "objective": {"type": "string"},
                                "token_budget": {"type": "integer", "minimum": 1},
                                "turn_budget": {"type": "integer", "minimum": 1}
                            },
                            "required": ["objective"],
                            "additionalProperties": false
                        }
                    },
                    "additionalProperties": false
                }),
            ),
            Kind::Send => (
                "Send a message to an agent: it reads it at its next step if it is working, or \
                 starts working on it if it is idle. `interrupt: true` stops what it is doing \
                 first."
                    .to_owned(),
                json!({
                    "type": "object",
                    "properties": {
                        "target": {"type": "string", "description": "The agent's id or nickname."},
                        "message": {"type": "string"},
                        "items": items_schema(),
                        "interrupt": {"type": "boolean"}
                    },
                    "required": ["target"],
                    "additionalProperties": false
                }),
            ),
            Kind::Wait => (
                "Wait until any of the given agents finishes (completed, errored, interrupted \
                 or shut down), or until the timeout. Returns the finished agents' statuses; a \
                 completed status carries the agent's final answer, once: an answer you \
                 already received as a subagent_notification message is not repeated (its \
                 status has no message and its id is in already_delivered)."
                    .to_owned(),
                json!({
                    "type": "object",
                    "properties": {
                        "targets": {"type": "array", "items": {"type": "string"}, "description": "Agent ids or nicknames."},
                        "timeout_ms": {"type": "number", "description": "How long to wait at most (default 30000)."}
                    },
                    "required": ["targets"],
                    "additionalProperties": false
                }),
            ),
            Kind::Close => (
                "Close an agent you spawned, and every agent it spawned. Closed agents no \
                 longer count toward the limit of open agents."
                    .to_owned(),
                json!({
                    "type": "object",
                    "properties": {"target": {"type": "string"}},
                    "required": ["target"],
                    "additionalProperties": false
                }),
            ),
            Kind::Resume => (
                "Reopen an agent you closed, with its history.".to_owned(),
                json!({
                    "type": "object",
                    "properties": {"id": {"type": "string"}},
                    "required": ["id"],
                    "additionalProperties": false
                }),
            ),
            Kind::List => (
                "List the agents of this tree with their status and last task.".to_owned(),
                json!({"type": "object", "properties": {}, "additionalProperties": false}),
            ),
        };
        ToolSpec {
            name: self.name().to_owned(),
            description,
            parameters,
        }
    }

    fn describe(&self, call: &ToolCall, ctx: &ToolContext) -> ToolAction {
        self.action(call, ctx)
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        async move {
            match self.call(&call, &ctx).await {
                Ok((value, concerned)) => {
                    let text = value.to_string();
                    let agents = self.control.upgrade().map_or_else(Vec::new, |control| {
                        concerned.iter().map(|id| control.report_of(*id)).collect()
                    });
                    ToolResult::new(text.clone(), true, ToolOutcome::Agents { text, agents })
                }
                Err(error) => ToolResult::err(error.to_string()),
            }
        }
        .boxed()
    }
}
