//! User hooks around a tool call: `PreToolUse` before the call is announced (so a block
//! is enforced before anything runs, and a rewritten input is what is announced, judged
//! and run), `PostToolUse` / `PostToolUseFailure` once it ended. The hooks of one event run
//! in parallel; each run is a `HookStarted` / `HookCompleted` pair in the thread's events.
//! The turn's own moments are here too, on the same machinery: `UserPromptSubmit` before
//! the first request and `Stop` after the final answer (`task.rs` calls them).
//!
//! What a hook's answer means is decided here, not by the hook runner: any block wins; a
//! failed hook blocks unless it says `on_error = "allow"`; of several `updatedInput`s the
//! last hook in configuration order wins; an "allow" skips nothing, because the rewritten
//! (or original) call still goes through its tool, and so through the approval policy and
//! the sandbox.

use std::sync::Arc;
use std::time::Instant;

use rein_protocol::{
    AgentOrigin, EventMsg, HookEventName, HookRunStatus, ThreadId, ToolAction, ToolOutcome, TurnId,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::sink::TurnSink;
use crate::hooks::{Hook, HookDescription, HookResponse, HookVerdict, Hooks, OnError};
use crate::tools::{ToolCall, ToolResult};

/// What every hook of a turn is told, and where it is found.
#[derive(Clone)]
pub(crate) struct HookScope {
    pub hooks: Arc<dyn Hooks>,
    pub thread_id: ThreadId,
    pub turn_id: TurnId,
    pub cwd: std::path::PathBuf,
    pub model: String,
    pub permission_mode: String,
    /// Where the thread comes from when it is a sub-agent (`agent_id`, `agent_type`; its
    /// `Stop` is `SubagentStop`).
    pub agent: Option<AgentOrigin>,
    /// Set on the first regular turn a thread runs in this process: its `SessionStart`
    /// (or, for a sub-agent, `SubagentStart`) hooks run before the first request.
    pub session_start: Option<SessionSource>,
}

/// Why a session's first turn in this process starts (`SessionStart`'s `source`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SessionSource {
    /// The thread has no earlier turn.
    Startup,
    /// The thread was resumed (or forked) with turns of its own.
    Resume,
}

impl SessionSource {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SessionSource::Startup => "startup",
            SessionSource::Resume => "resume",
        }
    }
}

/// Where the `HookStarted` / `HookCompleted` events of a run go: a turn's sink, or a
/// buffer the loop emits from once the runs are over (at shutdown, outside any turn).
pub(crate) trait HookEvents: Sync {
    fn emit(&self, msg: EventMsg);
}

impl HookEvents for TurnSink {
    fn emit(&self, msg: EventMsg) {
        TurnSink::emit(self, msg);
    }
}

/// A call as hooks see it: the name their matchers are written against and its input.
pub(super) struct HookTool {
    pub name: String,
    pub subjects: Vec<String>,
    pub input: Value,
}

/// Codex presents its shell as Claude's `Bash` with `{"command": "..."}`, and matchers
/// written for Claude's `Edit|Write` should catch every edit whatever tool makes it.
pub(super) fn hook_tool(call: &ToolCall, action: &ToolAction) -> HookTool {
    let mut input: Value = serde_json::from_str(&call.arguments)
        .unwrap_or_else(|_| Value::String(call.arguments.clone()));
    let mut name = call.name.clone();
    let mut subjects = vec![call.name.clone()];
    if call.name == "shell" {
        name = "Bash".to_owned();
        subjects.insert(0, name.clone());
        if let (ToolAction::Exec { command, .. }, Value::Object(map)) = (action, &mut input) {
            map.insert("command".to_owned(), Value::String(command.clone()));
        }
    }
    if matches!(action, ToolAction::Edit { .. }) {
        subjects.extend(["Edit".to_owned(), "Write".to_owned()]);
    }
    HookTool {
        name,
        subjects,
        input,
    }
}

/// What `PreToolUse` decided for a call.
pub(crate) enum PreDecision {
    /// Run it; with new arguments (JSON text) when a hook rewrote them, and only once the
    /// user approved it when a hook said `ask` (`ask` is the hooks' reason).
    Proceed {
        arguments: Option<String>,
        ask: Option<String>,
    },
    /// Do not run it: this is what the model reads.
    Block(ToolResult),
}

impl HookScope {
    fn base_input(&self, event: HookEventName, tool: &HookTool, call: &ToolCall) -> Value {
        self.input(
            event,
            json!({
                "tool_name": tool.name,
                "tool_input": tool.input,
                "tool_use_id": call.call_id,
            }),
        )
    }

    /// What every hook is told (Claude Code's common input fields, and a sub-agent's
    /// `agent_id` and `agent_type`), and `event`'s own fields (`fields`, an object).
    pub(super) fn input(&self, event: HookEventName, fields: Value) -> Value {
        let mut input = json!({
            "session_id": self.thread_id.to_string(),
            "turn_id": self.turn_id.to_string(),
            "transcript_path": self.hooks.transcript_path(self.thread_id),
            "cwd": self.cwd,
            "hook_event_name": event.as_str(),
            "model": self.model,
            "permission_mode": self.permission_mode,
        });
        if let (Some(map), Some(agent)) = (input.as_object_mut(), &self.agent) {
            map.insert("agent_id".into(), json!(self.thread_id.to_string()));
            map.insert("agent_type".into(), json!(agent_type(agent)));
            map.insert(
                "parent_session_id".into(),
                json!(agent.parent_thread_id.to_string()),
            );
        }
        if let (Some(input), Value::Object(fields)) = (input.as_object_mut(), fields) {
            input.extend(fields);
        }
        input
    }

    async fn find(&self, event: HookEventName, tool: &HookTool) -> Vec<Arc<dyn Hook>> {
        let subjects: Vec<&str> = tool.subjects.iter().map(String::as_str).collect();
        self.hooks.matching(&self.cwd, event, &subjects).await
    }

    /// Run the `PreToolUse` hooks of `call`.
    pub(crate) async fn pre_tool_use(
        &self,
        call: &ToolCall,
        action: &ToolAction,
        sink: &TurnSink,
        cancel: &CancellationToken,
    ) -> PreDecision {
        let event = HookEventName::PreToolUse;
        let tool = hook_tool(call, action);
        let found = self.find(event, &tool).await;
        if found.is_empty() {
            return PreDecision::Proceed {
                arguments: None,
                ask: None,
            };
        }
        let input = self.base_input(event, &tool, call);
        let runs = run_all(found, input, event, Some(&call.call_id), sink, cancel).await;
        let mut blocks = Vec::new();
        let mut updated = None;
        let mut asks = Vec::new();
        for (hook, response) in runs {
            match response.verdict {
                HookVerdict::Block { reason } => blocks.push(reason),
                HookVerdict::Failed { message } if hook.on_error == OnError::Block => {
                    blocks.push(format!("the hook `{}` failed: {message}", hook.command));
                }
                HookVerdict::Failed { .. } => {}
                HookVerdict::Proceed(output) => {
                    if let Some(message) = output.system_message {
                        sink.emit(EventMsg::Warning { message });
                    }
                    if output.updated_input.is_some() {
                        updated = output.updated_input;
                    }
                    if output.decision.as_deref() == Some("ask") {
                        asks.push(
                            output
                                .reason
                                .unwrap_or_else(|| format!("the hook `{}` asks", hook.command)),
                        );
                    }
                }
            }
        }
        if !blocks.is_empty() {
            return PreDecision::Block(ToolResult::declined(
                rein_protocol::Decliner::Hook,
                format!("blocked by a PreToolUse hook: {}", blocks.join("; ")),
            ));
        }
        PreDecision::Proceed {
            arguments: updated.map(|input| from_hook_input(call, input)),
            ask: (!asks.is_empty()).then(|| asks.join("; ")),
        }
    }

    /// Run the `PostToolUse` (or, for a failed call, `PostToolUseFailure`) hooks of
    /// `call`; what they tell the model is added to its output.
    pub(crate) async fn post_tool_use(
        &self,
        call: &ToolCall,
        action: &ToolAction,
        result: &mut ToolResult,
        sink: &TurnSink,
        cancel: &CancellationToken,
    ) {
        let event = if result.success {
            HookEventName::PostToolUse
        } else {
            HookEventName::PostToolUseFailure
        };
        let tool = hook_tool(call, action);
        let found = self.find(event, &tool).await;
        if found.is_empty() {
            return;
        }
        let mut input = self.base_input(event, &tool, call);
        // What the command printed or the tool returned, not the model's rendering of it.
        let output = match &result.outcome {
            ToolOutcome::Exited { output, .. } => output,
            ToolOutcome::Returned { text, .. } => text,
            _ => &result.output,
        };
        input["tool_response"] = json!({
            "output": output,
            "success": result.success,
            "outcome": result.outcome,
        });
        if !result.success {
            input["error"] = Value::String(result.output.clone());
        }
        let runs = run_all(found, input, event, Some(&call.call_id), sink, cancel).await;
        for (_, response) in runs {
            let told = match response.verdict {
                // The call has run: a block can only tell the model something.
                HookVerdict::Block { reason } => Some(reason),
                HookVerdict::Proceed(output) => {
                    if let Some(message) = output.system_message {
                        sink.emit(EventMsg::Warning { message });
                    }
                    output.additional_context
                }
                HookVerdict::Failed { .. } => None,
            };
            if let Some(text) = told {
                result
                    .output
                    .push_str(&format!("\n\n[{} hook] {text}", event.as_str()));
            }
        }
    }
}

/// What `UserPromptSubmit` decided.
pub(crate) enum PromptDecision {
    /// Go on, telling the model this first (empty: nothing).
    Proceed { context: Vec<String> },
    /// The prompt is not processed: this is why.
    Block(String),
}

impl HookScope {
    /// Run the `UserPromptSubmit` hooks on `prompt` before the turn's first request. A
    /// block (exit 2, `decision: "block"`) ends the turn unanswered; `additionalContext`
    /// or plain stdout is context for the model. A hook that fails does not block.
    pub(crate) async fn user_prompt_submit(
        &self,
        prompt: &str,
        sink: &TurnSink,
        cancel: &CancellationToken,
    ) -> PromptDecision {
        let event = HookEventName::UserPromptSubmit;
        let found = self.hooks.matching(&self.cwd, event, &[]).await;
        if found.is_empty() {
            return PromptDecision::Proceed {
                context: Vec::new(),
            };
        }
        let input = self.input(event, json!({ "prompt": prompt }));
        let mut context = Vec::new();
        let mut blocks = Vec::new();
        for (_, response) in run_all(found, input, event, None, sink, cancel).await {
            match response.verdict {
                HookVerdict::Block { reason } => blocks.push(reason),
                HookVerdict::Proceed(output) => {
                    if let Some(message) = output.system_message {
                        sink.emit(EventMsg::Warning { message });
                    }
                    context.extend(output.additional_context);
                    context.extend(output.text);
                }
                HookVerdict::Failed { .. } => {}
            }
        }
        if blocks.is_empty() {
            PromptDecision::Proceed { context }
        } else {
            PromptDecision::Block(blocks.join("; "))
        }
    }

    /// Run the `Stop` hooks once the model gave its final answer: the reasons of those
    /// that block (exit 2, `decision: "block"`) are the instruction the turn continues
    /// with. `continuations` is how many times this turn was continued already (the input's
    /// `stop_hook_active` and `continuation_count`); the caller caps them. A hook that fails
    /// never keeps a turn alive.
    pub(crate) async fn stop(
        &self,
        last_agent_message: Option<&str>,
        continuations: u32,
        sink: &TurnSink,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let (event, found) = match &self.agent {
            Some(agent) => {
                let event = HookEventName::SubagentStop;
                (
                    event,
                    self.hooks
                        .matching(&self.cwd, event, &[agent_type(agent)])
                        .await,
                )
            }
            None => {
                let event = HookEventName::Stop;
                (event, self.hooks.matching(&self.cwd, event, &[]).await)
            }
        };
        if found.is_empty() {
            return None;
        }
        let input = self.input(
            event,
            json!({
                "stop_hook_active": continuations > 0,
                "continuation_count": continuations,
                "last_assistant_message": last_agent_message,
            }),
        );
        let runs = run_all(found, input, event, None, sink, cancel).await;
        block_reasons(runs, "\n")
    }
}

/// The reasons of the runs that blocked, joined by `separator` (`None`: none blocked; a
/// failed run never counts as a block here).
pub(super) fn block_reasons(
    runs: Vec<(HookDescription, HookResponse)>,
    separator: &str,
) -> Option<String> {
    let reasons: Vec<String> = runs
        .into_iter()
        .filter_map(|(_, response)| match response.verdict {
            HookVerdict::Block { reason } => Some(reason),
            HookVerdict::Proceed(_) | HookVerdict::Failed { .. } => None,
        })
        .collect();
    (!reasons.is_empty()).then(|| reasons.join(separator))
}

/// The tool's arguments from a hook's `updatedInput`: the shell's `Bash` input has the
/// shell's own keys (a string `command` is a script), so it is taken as it is.
fn from_hook_input(_call: &ToolCall, input: Value) -> String {
    match input {
        Value::String(text) => text,
        other => other.to_string(),
    }
}

/// What a sub-agent's hooks see as its `agent_type` (and match against): its role, or
/// `default` when it was spawned without one.
pub(super) fn agent_type(agent: &AgentOrigin) -> &str {
    agent.role.as_deref().unwrap_or("default")
}

/// Run `hooks` in parallel with `input`, each announced and reported as an event.
pub(super) async fn run_all(
    hooks: Vec<Arc<dyn Hook>>,
    input: Value,
    event: HookEventName,
    call_id: Option<&str>,
    sink: &dyn HookEvents,
    cancel: &CancellationToken,
) -> Vec<(HookDescription, HookResponse)> {
    let runs = hooks.into_iter().map(|hook| {
        let description = hook.describe();
        let run_id = uuid::Uuid::new_v4().to_string();
        sink.emit(EventMsg::HookStarted {
            run_id: run_id.clone(),
            event_name: event,
            key: description.key.clone(),
            command: description.command.clone(),
            source: description.source,
            call_id: call_id.map(str::to_owned),
        });
        let started = Instant::now();
        let running = hook.run(input.clone(), cancel.child_token());
        async move {
            let response = running.await;
            let (status, message) = match &response.verdict {
                HookVerdict::Proceed(_) => (HookRunStatus::Completed, None),
                HookVerdict::Block { reason } => (HookRunStatus::Blocked, Some(reason.clone())),
                HookVerdict::Failed { message } => (HookRunStatus::Failed, Some(message.clone())),
            };
            sink.emit(EventMsg::HookCompleted {
                run_id,
                status,
                exit_code: response.exit_code,
                message,
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            });
            (description, response)
        }
    });
    futures::future::join_all(runs).await
}
