//! The model-facing sub-agent tools, with Codex's names and argument shapes: parse the
//! call, hand it to [`AgentControl`], answer with JSON the model reads.

use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use futures::FutureExt;
use rein_protocol::{AgentOp, InputPart, ReasoningEffort, ThreadId, ToolAction, ToolOutcome};
use serde::Deserialize;
use serde_json::{json, Value};

use super::ops::{SpawnRequest, ROLES};
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
    #[serde(default)]
    agent_type: Option<String>,
    #[serde(default)]
    fork_context: Option<bool>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    reasoning_effort: Option<ReasoningEffort>,
    /// Accepted for compatibility; rein has no service tiers.
    #[serde(default)]
    #[allow(dead_code)]
    service_tier: Option<String>,
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
fn input(message: Option<String>, items: Option<Vec<ItemArg>>) -> Result<Vec<InputPart>, String> {
    let parts = match (message, items) {
        (Some(_), Some(_)) => return Err("give either `message` or `items`, not both".into()),
        (None, None) => return Err("give the task as `message` (or `items`)".into()),
        (Some(message), None) => vec![InputPart::text(message)],
        (None, Some(items)) => items
            .into_iter()
            .map(|item| match item.kind.as_str() {
                "text" => Ok(InputPart::text(item.text.unwrap_or_default())),
                "image" => item
                    .image_url
                    .map(|url| InputPart::Image { url })
                    .ok_or_else(|| "an image item needs `image_url`".to_owned()),
                "local_image" => item
                    .path
                    .map(|p| InputPart::text(format!("(image at {p})")))
                    .ok_or_else(|| "a local_image item needs `path`".to_owned()),
                other => Err(format!("items of type `{other}` are not supported")),
            })
            .collect::<Result<_, _>>()?,
    };
    if parts.iter().all(InputPart::is_blank) {
        return Err("the input is empty".into());
    }
    Ok(parts)
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
        let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
        let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
        let named: Vec<String> = match self.kind {
            Kind::Send | Kind::Close => text("target").or_else(|| text("id")).into_iter().collect(),
            Kind::Resume => text("id").or_else(|| text("target")).into_iter().collect(),
            Kind::Wait => args
                .get("targets")
                .and_then(Value::as_array)
                .map(|t| {
                    t.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            Kind::Spawn | Kind::List => Vec::new(),
        };
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
        let prompt = match self.kind {
            Kind::Spawn | Kind::Send => text("message").or_else(|| {
                let items = args.get("items")?.as_array()?;
                let texts: Vec<&str> = items
                    .iter()
                    .filter_map(|i| i.get("text").and_then(Value::as_str))
                    .collect();
                (!texts.is_empty()).then(|| texts.join("\n"))
            }),
            _ => None,
        };
        let (model, reasoning_effort) = match self.kind {
            Kind::Spawn => (
                text("model"),
                args.get("reasoning_effort")
                    .and_then(|e| serde_json::from_value(e.clone()).ok()),
            ),
            _ => (None, None),
        };
        ToolAction::Agent {
            op: self.op(),
            targets,
            prompt,
            model,
            reasoning_effort,
        }
    }

    /// Run the call; returns the answer and the agents it concerned.
    async fn call(
        &self,
        call: &ToolCall,
        ctx: &ToolContext,
    ) -> Result<(Value, Vec<ThreadId>), String> {
        let control = self
            .control
            .upgrade()
            .ok_or("sub-agents are unavailable: the kernel is shutting down")?;
        let targets = match self.action(call, ctx) {
            ToolAction::Agent { targets, .. } => targets,
            _ => Vec::new(),
        };
        let value = self.dispatch(&control, call, ctx).await?;
        let concerned = match self.kind {
            Kind::Spawn => value["agent_id"]
                .as_str()
                .and_then(|id| id.parse().ok())
                .into_iter()
                .collect(),
            Kind::List => Vec::new(),
            _ => targets,
        };
        Ok((value, concerned))
    }

    async fn dispatch(
        &self,
        control: &Arc<AgentControl>,
        call: &ToolCall,
        ctx: &ToolContext,
    ) -> Result<Value, String> {
        let args = if call.arguments.trim().is_empty() {
            "{}"
        } else {
            call.arguments.as_str()
        };
        let bad = |e: serde_json::Error| format!("invalid arguments for {}: {e}", self.name());
        match self.kind {
            Kind::Spawn => {
                let a: SpawnArgs = serde_json::from_str(args).map_err(bad)?;
                let items = input(a.message, a.items)?;
                control
                    .spawn(
                        ctx,
                        SpawnRequest {
                            items,
                            role: a.agent_type,
                            model: a.model,
                            reasoning_effort: a.reasoning_effort,
                            fork_context: a.fork_context.unwrap_or(false),
                        },
                    )
                    .await
            }
            Kind::Send => {
                let a: SendArgs = serde_json::from_str(args).map_err(bad)?;
                let items = input(a.message, a.items)?;
                control.send_input(ctx, &a.target, items, a.interrupt).await
            }
            Kind::Wait => {
                let a: WaitArgs = serde_json::from_str(args).map_err(bad)?;
                control.wait(ctx, &a.targets, a.timeout_ms).await
            }
            Kind::Close => {
                let a: TargetArgs = serde_json::from_str(args).map_err(bad)?;
                control.close(ctx, &a.target).await
            }
            Kind::Resume => {
                let a: ResumeArgs = serde_json::from_str(args).map_err(bad)?;
                control.resume_agent(ctx, &a.id).await
            }
            Kind::List => control.list(ctx),
        }
    }
}

impl Tool for AgentTool {
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
                        "agent_type": {"type": "string", "enum": ROLES, "description": "A role; `explorer` is read-only."},
                        "fork_context": {"type": "boolean", "description": "Give the agent this conversation's user messages and final answers first."},
                        "model": {"type": "string", "description": "Another model for the agent."},
                        "reasoning_effort": {"type": "string", "enum": ["minimal", "low", "medium", "high"]}
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
                Err(message) => ToolResult::err(message),
            }
        }
        .boxed()
    }
}
