//! Maps Codex lines to rein events, one line at a time, keeping the little state the
//! mapping needs (the open turn, current settings, user messages for compaction).

use std::path::{Path, PathBuf};

use rein_protocol::{
    ApprovalPolicy, ErrorCode, Event, EventMsg, InputPart, Item, ItemId, ReasoningEffort,
    SandboxPolicy, TaskKind, ThreadId, ThreadSettings, TokenUsage, TurnAbortReason, TurnId,
};
use serde_json::Value;

use super::CodexImportError;
use super::{meta_from, CodexLine};
use crate::time::{parse_rfc3339_ms, rfc3339_ms};
use rein_core::store::{Diagnostic, DiagnosticKind, SessionMeta};

pub(super) struct Importer {
    path: PathBuf,
    meta: Option<SessionMeta>,
    settings: ThreadSettings,
    turn: Option<TurnId>,
    turns_started: u32,
    /// User messages so far, for a `compacted` line without replacement history.
    user_messages: Vec<Item>,
    events: Vec<Event>,
    timestamp_ms: u64,
}

impl Importer {
    pub fn new(path: &Path) -> Self {
        Importer {
            path: path.to_path_buf(),
            meta: None,
            settings: ThreadSettings {
                model: String::new(),
                cwd: PathBuf::new(),
                approval_policy: ApprovalPolicy::default(),
                sandbox_policy: SandboxPolicy::default(),
                sandbox_options: None,
                reasoning_effort: None,
                budget: Default::default(),
                instructions: String::new(),
            },
            turn: None,
            turns_started: 0,
            user_messages: Vec::new(),
            events: Vec::new(),
            timestamp_ms: 0,
        }
    }

    /// Takes the initial settings from a turn context without emitting anything.
    pub fn prime(&mut self, turn_context: &Value) {
        self.settings = settings_from(&self.settings, turn_context);
    }

    pub fn finish(self) -> Result<(SessionMeta, Vec<Event>), CodexImportError> {
        let meta = self.meta.ok_or_else(|| CodexImportError::NotCodex {
            path: self.path.clone(),
        })?;
        Ok((meta, self.events))
    }

    fn emit(&mut self, msg: EventMsg) {
        let Some(meta) = &self.meta else { return };
        self.events.push(Event {
            thread_id: meta.thread_id,
            turn_id: self.turn,
            seq: self.events.len() as u64,
            timestamp_ms: self.timestamp_ms,
            msg,
        });
    }

    pub fn line(&mut self, line: &CodexLine, diagnostics: &mut Vec<Diagnostic>) {
        let value = &line.value;
        if let Some(ms) = value["timestamp"].as_str().and_then(parse_rfc3339_ms) {
            self.timestamp_ms = ms;
        }
        let payload = &value["payload"];
        let kind = value["type"].as_str().unwrap_or_default();
        let mut skipped = |what: String| {
            diagnostics.push(Diagnostic {
                line: line.line_no,
                kind: DiagnosticKind::UnknownLineType(what),
            });
        };
        if self.meta.is_none() && kind != "session_meta" && !line.inherited {
            // Only a fork's inherited lines may precede its own session_meta.
            skipped(format!("{kind} before session_meta"));
            return;
        }
        match kind {
            "session_meta" => self.session_meta(payload),
            "turn_context" => self.turn_context(payload),
            "response_item" => match response_item(payload, line.line_no) {
                Some(item) => self.item(item),
                None => skipped(format!(
                    "response_item:{}",
                    payload["type"].as_str().unwrap_or("?")
                )),
            },
            "event_msg" => self.event_msg(payload),
            "compacted" => self.compacted(payload, line.line_no),
            other => skipped(other.to_owned()),
        }
    }

    fn session_meta(&mut self, payload: &Value) {
        // A resumed Codex session may repeat its meta; the first one names the thread.
        if self.meta.is_some() {
            return;
        }
        let thread_id = payload["id"]
            .as_str()
            .and_then(|s| s.parse::<ThreadId>().ok())
            .unwrap_or_default();
        let created = payload["timestamp"]
            .as_str()
            .and_then(parse_rfc3339_ms)
            .unwrap_or(self.timestamp_ms);
        self.settings.cwd = PathBuf::from(payload["cwd"].as_str().unwrap_or_default());
        if let Some(text) = payload["base_instructions"]["text"].as_str() {
            self.settings.instructions = text.to_owned();
        }
        let meta = meta_from(
            payload,
            thread_id,
            &self.settings.model,
            &rfc3339_ms(created),
        );
        let session_id = meta.session_id;
        let forked_from = meta.forked_from;
        self.meta = Some(meta);
        self.emit(EventMsg::ThreadConfigured {
            session_id,
            settings: self.settings.clone(),
            forked_from,
            strategy: None,
        });
    }

    fn turn_context(&mut self, payload: &Value) {
        let next = settings_from(&self.settings, payload);
        if next != self.settings {
            self.settings = next;
            self.emit(EventMsg::SettingsChanged {
                settings: self.settings.clone(),
            });
        }
    }

    fn item(&mut self, item: Item) {
        if matches!(item, Item::UserMessage { .. }) {
            self.user_messages.push(item.clone());
        }
        self.emit(EventMsg::ItemCompleted { item });
    }

    fn event_msg(&mut self, payload: &Value) {
        match payload["type"].as_str().unwrap_or_default() {
            "task_started" | "turn_started" => {
                if self.turn.is_some() {
                    self.emit(EventMsg::TurnAborted {
                        reason: TurnAbortReason::Interrupted,
                    });
                }
                self.turn = Some(
                    payload["turn_id"]
                        .as_str()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or_else(TurnId::new_random),
                );
                self.turns_started += 1;
                self.emit(EventMsg::TurnStarted {
                    kind: TaskKind::Regular,
                    settings: self.settings.clone(),
                    recovered: false,
                    output_schema: None,
                });
            }
            "task_complete" | "turn_complete" if self.turn.is_some() => {
                self.emit(EventMsg::TurnCompleted {
                    last_agent_message: payload["last_agent_message"].as_str().map(str::to_owned),
                });
                self.turn = None;
            }
            "turn_aborted" if self.turn.is_some() => {
                let reason = match payload["reason"].as_str() {
                    Some("replaced") => TurnAbortReason::Replaced,
                    Some("review_ended") => TurnAbortReason::ReviewEnded,
                    _ => TurnAbortReason::Interrupted,
                };
                self.emit(EventMsg::TurnAborted { reason });
                self.turn = None;
            }
            "token_count" => {
                let info = &payload["info"];
                if let (Some(total), Some(last)) = (
                    token_usage(&info["total_token_usage"]),
                    token_usage(&info["last_token_usage"]),
                ) {
                    self.emit(EventMsg::TokenCount {
                        last,
                        total,
                        context_window: info["model_context_window"].as_u64(),
                    });
                }
            }
            "thread_rolled_back" => {
                let turns = payload["num_turns"].as_u64().unwrap_or(0);
                self.emit(EventMsg::RolledBack {
                    turns: u32::try_from(turns).unwrap_or(u32::MAX),
                });
            }
            "error" => self.emit(EventMsg::Error {
                code: ErrorCode::Internal,
                message: payload["message"].as_str().unwrap_or_default().to_owned(),
            }),
            // UI notifications that repeat response items, settings echoes, etc.
            _ => {}
        }
    }

    /// Codex replaced the history by a summary. rein has no "replace history" event, so
    /// the import drops every turn so far (a rollback) and appends the replacement items.
    fn compacted(&mut self, payload: &Value, line_no: usize) {
        let replacement: Vec<Item> = match payload["replacement_history"].as_array() {
            Some(items) => items
                .iter()
                .filter_map(|item| response_item(item, line_no))
                .collect(),
            None => {
                let mut items = self.user_messages.clone();
                items.push(Item::UserMessage {
                    id: ItemId(format!("codex-compacted-{line_no}")),
                    content: vec![InputPart::text(
                        payload["message"].as_str().unwrap_or_default(),
                    )],
                });
                items
            }
        };
        self.emit(EventMsg::RolledBack {
            turns: self.turns_started,
        });
        self.turns_started = u32::from(self.turn.is_some());
        self.user_messages.clear();
        for item in replacement {
            self.item(item);
        }
    }
}

fn settings_from(base: &ThreadSettings, turn_context: &Value) -> ThreadSettings {
    let mut next = base.clone();
    if let Some(model) = turn_context["model"].as_str() {
        next.model = model.to_owned();
    }
    if let Some(cwd) = turn_context["cwd"].as_str() {
        next.cwd = PathBuf::from(cwd);
    }
    if let Some(policy) = turn_context["approval_policy"]
        .as_str()
        .and_then(approval_policy)
    {
        next.approval_policy = policy;
    }
    if let Some(policy) = turn_context["sandbox_policy"]["type"]
        .as_str()
        .and_then(sandbox_policy)
    {
        next.sandbox_policy = policy;
    }
    next.reasoning_effort = turn_context["effort"].as_str().and_then(reasoning_effort);
    next
}

/// A Codex response item as a rein history item, if rein has a kind for it.
///
/// One arm per kind of Codex response item rein maps, each a few lines: long because Codex
/// has that many kinds.
fn response_item(payload: &Value, line_no: usize) -> Option<Item> {
    let str_of = |key: &str| payload[key].as_str().map(str::to_owned);
    let id = str_of("id").map(ItemId);
    let call_id = str_of("call_id");
    let fallback_id = || ItemId(format!("codex-line-{line_no}"));
    match payload["type"].as_str()? {
        "message" => {
            let id = id.unwrap_or_else(fallback_id);
            let parts = payload["content"].as_array()?;
            let text = || {
                parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            match payload["role"].as_str()? {
                "user" => Some(Item::UserMessage {
                    id,
                    content: parts
                        .iter()
                        .filter_map(|p| match p["type"].as_str()? {
                            "input_text" => Some(InputPart::text(p["text"].as_str()?)),
                            "input_image" => Some(InputPart::Image {
                                url: p["image_url"].as_str()?.to_owned(),
                            }),
                            _ => None,
                        })
                        .collect(),
                }),
                "assistant" => Some(Item::AgentMessage {
                    id,
                    text: text(),
                    partial: false,
                }),
                "developer" | "system" => Some(Item::DeveloperMessage { id, text: text() }),
                _ => None,
            }
        }
        "reasoning" => {
            let texts = |key: &str| -> Vec<String> {
                payload[key]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|p| p["text"].as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let mut text = texts("summary");
            if text.is_empty() {
                text = texts("content");
            }
            Some(Item::Reasoning {
                id: id.unwrap_or_else(fallback_id),
                text: text.join("\n"),
                encrypted_content: str_of("encrypted_content"),
            })
        }
        "function_call" | "custom_tool_call" => {
            let call_id = call_id?;
            Some(Item::ToolCall {
                id: id.unwrap_or_else(|| ItemId(call_id.clone())),
                name: str_of("name")?,
                arguments: str_of("arguments")
                    .or_else(|| str_of("input"))
                    .unwrap_or_default(),
                call_id,
            })
        }
        "local_shell_call" => {
            let call_id = call_id.or_else(|| str_of("id"))?;
            Some(Item::ToolCall {
                id: id.unwrap_or_else(|| ItemId(call_id.clone())),
                name: "local_shell".to_owned(),
                arguments: payload["action"].to_string(),
                call_id,
            })
        }
        "function_call_output" | "custom_tool_call_output" => {
            let call_id = call_id?;
            let (output, success) = tool_output(&payload["output"]);
            Some(Item::ToolOutput {
                id: id.unwrap_or_else(|| ItemId(format!("{call_id}-output"))),
                call_id,
                output,
                success,
                facts: None,
            })
        }
        _ => None,
    }
}

/// Codex writes a tool output as a string, as `{content, success}`, or as content items.
fn tool_output(output: &Value) -> (String, bool) {
    match output {
        Value::String(text) => (text.clone(), true),
        Value::Object(map) => {
            let success = map.get("success").and_then(Value::as_bool).unwrap_or(true);
            let content = map
                .get("content")
                .map(|c| tool_output(c).0)
                .unwrap_or_default();
            (content, success)
        }
        Value::Array(items) => (
            items
                .iter()
                .filter_map(|i| i["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            true,
        ),
        other => (other.to_string(), true),
    }
}

fn token_usage(value: &Value) -> Option<TokenUsage> {
    let field = |key: &str| value[key].as_u64().unwrap_or(0);
    value.is_object().then(|| TokenUsage {
        input_tokens: field("input_tokens"),
        cached_input_tokens: field("cached_input_tokens"),
        output_tokens: field("output_tokens"),
        reasoning_output_tokens: field("reasoning_output_tokens"),
        total_tokens: field("total_tokens"),
    })
}

fn approval_policy(text: &str) -> Option<ApprovalPolicy> {
    text.parse().ok()
}

fn sandbox_policy(text: &str) -> Option<SandboxPolicy> {
    text.parse().ok()
}

fn reasoning_effort(text: &str) -> Option<ReasoningEffort> {
    ReasoningEffort::new(text).ok()
}
