//! One turn's events as a Responses API response: the object `GET /v1/responses/{id}`
//! answers and the stream of `response.*` events. A pure fold of the kernel's events, so
//! the live stream, a replay from the rollout and the polled object agree.
//!
//! Each kernel event yields at most [`SLOTS`] stream events, numbered
//! `(event.seq - turn start seq) * SLOTS + i`: the numbers depend on the event alone, so
//! `starting_after=N` means the same thing live and replayed, any time later. Deltas are
//! not in the rollout (their text is in the completed item), so a replay skips their
//! numbers and the `*.done` events carry the whole text.

use std::collections::HashMap;

use rein_protocol::{ErrorCode, Event, EventMsg, InputPart, Item, ItemKind, TokenUsage};
use serde_json::{json, Value};

use crate::ids::ResponseId;
use crate::records::ResponseRecord;

/// Stream events one kernel event may become.
pub const SLOTS: u64 = 8;

/// A `response.*` event, ready for `event:`/`data:` lines.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamEvent {
    pub sequence_number: u64,
    pub data: Value,
}

impl StreamEvent {
    pub fn kind(&self) -> &str {
        self.data["type"].as_str().unwrap_or_default()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Not started yet (no `TurnStarted` seen).
    Queued,
    InProgress,
    Completed,
    Failed,
    Cancelled,
    /// The turn never ended and nothing runs it (the server died mid-turn).
    Incomplete,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
            Status::Incomplete => "incomplete",
        }
    }

    pub fn is_final(self) -> bool {
        !matches!(self, Status::Queued | Status::InProgress)
    }
}

/// The fold of one turn's events.
pub struct Projector {
    id: ResponseId,
    previous: Option<ResponseId>,
    base_seq: Option<u64>,
    last_seq: Option<u64>,
    created_at: u64,
    model: String,
    instructions: Option<String>,
    status: Status,
    output: Vec<Value>,
    /// Output index by kernel item id, and by tool call id.
    index: HashMap<String, usize>,
    usage: Option<TokenUsage>,
    error: Option<Value>,
    incomplete: Option<Value>,
    input: Vec<Value>,
    /// What the response was created with beside its input (by default: no metadata,
    /// not in the background).
    record: ResponseRecord,
}

impl Projector {
    pub fn new(id: ResponseId, previous: Option<ResponseId>) -> Self {
        Self {
            id,
            previous,
            base_seq: None,
            last_seq: None,
            created_at: 0,
            model: String::new(),
            instructions: None,
            status: Status::Queued,
            output: Vec::new(),
            index: HashMap::new(),
            usage: None,
            error: None,
            incomplete: None,
            input: Vec::new(),
            record: ResponseRecord::default(),
        }
    }

    /// The response's recorded `metadata` and `background`, echoed in its object.
    pub fn with_record(mut self, record: ResponseRecord) -> Self {
        self.record = record;
        self
    }

    pub fn record(&self) -> &ResponseRecord {
        &self.record
    }

    /// The response this one continues.
    pub fn id(&self) -> ResponseId {
        self.id
    }

    pub fn previous(&self) -> Option<ResponseId> {
        self.previous
    }

    pub fn status(&self) -> Status {
        self.status
    }

    /// Whether the turn has been seen starting.
    pub fn started(&self) -> bool {
        self.base_seq.is_some()
    }

    /// Whether `event` may yield stream events numbered past `n`.
    fn may_pass(&self, event: &Event, n: u64) -> bool {
        let base = match (&event.msg, self.base_seq) {
            (EventMsg::TurnStarted { .. }, _) => event.seq,
            (_, Some(base)) => base,
            _ => return false,
        };
        event.turn_id == Some(self.id.turn)
            && event.seq >= base
            && (event.seq - base) * SLOTS + SLOTS - 1 > n
    }

    /// The kernel seq of the last event folded.
    pub fn last_seq(&self) -> Option<u64> {
        self.last_seq
    }

    /// Fold `event` (ignored unless it is of this turn); the stream events it makes.
    pub fn push(&mut self, event: &Event) -> Vec<StreamEvent> {
        if event.turn_id != Some(self.id.turn) || self.status.is_final() {
            return Vec::new();
        }
        if self.last_seq.is_some_and(|last| event.seq <= last) {
            return Vec::new();
        }
        if let EventMsg::TurnStarted { settings, .. } = &event.msg {
            self.base_seq = Some(event.seq);
            self.created_at = event.timestamp_ms / 1000;
            self.model.clone_from(&settings.model);
            self.instructions =
                (!settings.instructions.is_empty()).then(|| settings.instructions.clone());
            self.status = Status::InProgress;
        }
        let Some(base) = self.base_seq else {
            return Vec::new();
        };
        self.last_seq = Some(event.seq);
        let first = (event.seq - base) * SLOTS;
        let datas = self.fold(&event.msg);
        datas
            .into_iter()
            .zip(first..)
            .map(|(mut data, n)| {
                data["sequence_number"] = json!(n);
                StreamEvent {
                    sequence_number: n,
                    data,
                }
            })
            .collect()
    }

    /// The turn will never end here (no process runs it): it is reported `incomplete`,
    /// and the stream gets its last event.
    pub fn interrupted(&mut self) -> Option<StreamEvent> {
        if self.status.is_final() || !self.started() {
            return None;
        }
        self.status = Status::Incomplete;
        self.incomplete = Some(json!({ "reason": "interrupted" }));
        let base = self.base_seq.unwrap_or_default();
        let n = (self.last_seq.unwrap_or(base) - base + 1) * SLOTS;
        let mut data = json!({ "type": "response.incomplete", "response": self.response() });
        data["sequence_number"] = json!(n);
        Some(StreamEvent {
            sequence_number: n,
            data,
        })
    }

    fn fold(&mut self, msg: &EventMsg) -> Vec<Value> {
        match msg {
            EventMsg::TurnStarted { .. } => vec![
                json!({ "type": "response.created", "response": self.response() }),
                json!({ "type": "response.in_progress", "response": self.response() }),
            ],
            EventMsg::ItemStarted {
                item_id,
                kind: ItemKind::AgentMessage,
            } => self.message_added(&item_id.to_string()),
            EventMsg::ItemStarted {
                item_id,
                kind: ItemKind::Reasoning,
            } => self.reasoning_added(&item_id.to_string()),
            EventMsg::AgentMessageDelta { item_id, delta } => self.message_delta(item_id, delta),
            EventMsg::ReasoningDelta { item_id, delta } => self.reasoning_delta(item_id, delta),
            EventMsg::ItemCompleted { item } => self.completed(item),
            EventMsg::ClientRequested {
                request_id,
                call_id,
                request,
            } => {
                let item = json!({
                    "type": "approval_request", "id": request_id, "call_id": call_id,
                    "request": request, "status": "pending",
                });
                vec![self.added(format!("request:{request_id}"), item)]
            }
            EventMsg::ClientRequestResolved {
                request_id,
                outcome,
                ..
            } => {
                let Some(&output_index) = self.index.get(&format!("request:{request_id}")) else {
                    return Vec::new();
                };
                self.output[output_index]["status"] = json!(outcome);
                vec![self.done(output_index)]
            }
            EventMsg::TokenCount { last, .. } => {
                self.usage.get_or_insert_with(TokenUsage::default).add(last);
                Vec::new()
            }
            EventMsg::TurnCompleted { .. } => self.end(Status::Completed, "response.completed"),
            EventMsg::TurnFailed { code, message } => {
                self.error = Some(json!({ "code": error_code(*code), "message": message }));
                self.end(Status::Failed, "response.failed")
            }
            EventMsg::TurnAborted { .. } => self.end(Status::Cancelled, "response.incomplete"),
            // A proposal is an `approval_request` item; the `remember` call's output says
            // what became of it.
            EventMsg::MemoryProposed { .. }
            | EventMsg::MemoryAccepted { .. }
            | EventMsg::MemoryRejected { .. } => Vec::new(),
            _ => Vec::new(),
        }
    }

    fn end(&mut self, status: Status, kind: &str) -> Vec<Value> {
        self.status = status;
        vec![json!({ "type": kind, "response": self.response() })]
    }

    fn added(&mut self, key: String, item: Value) -> Value {
        let output_index = self.output.len();
        self.index.insert(key, output_index);
        self.output.push(item.clone());
        json!({ "type": "response.output_item.added", "output_index": output_index, "item": item })
    }

    fn done(&mut self, output_index: usize) -> Value {
        json!({
            "type": "response.output_item.done",
            "output_index": output_index,
            "item": self.output[output_index],
        })
    }

    fn message_added(&mut self, item_id: &str) -> Vec<Value> {
        let item = json!({
            "type": "message", "id": item_id, "status": "in_progress", "role": "assistant",
            "content": [],
        });
        let added = self.added(item_id.to_owned(), item);
        let part = json!({ "type": "output_text", "text": "", "annotations": [] });
        let output_index = self.output.len() - 1;
        self.output[output_index]["content"] = json!([part]);
        vec![
            added,
            json!({
                "type": "response.content_part.added", "item_id": item_id,
                "output_index": output_index, "content_index": 0, "part": part,
            }),
        ]
    }

    fn reasoning_added(&mut self, item_id: &str) -> Vec<Value> {
        let item = json!({ "type": "reasoning", "id": item_id, "summary": [] });
        let added = self.added(item_id.to_owned(), item);
        let part = json!({ "type": "summary_text", "text": "" });
        let output_index = self.output.len() - 1;
        self.output[output_index]["summary"] = json!([part]);
        vec![
            added,
            json!({
                "type": "response.reasoning_summary_part.added", "item_id": item_id,
                "output_index": output_index, "summary_index": 0, "part": part,
            }),
        ]
    }

    fn reasoning_delta(&mut self, item_id: &rein_protocol::ItemId, delta: &str) -> Vec<Value> {
        let item_id = item_id.to_string();
        let Some(&output_index) = self.index.get(&item_id) else {
            return Vec::new();
        };
        if let Some(text) = self.output[output_index]["summary"][0]["text"].as_str() {
            self.output[output_index]["summary"][0]["text"] = json!(format!("{text}{delta}"));
        }
        vec![json!({
            "type": "response.reasoning_summary_text.delta", "item_id": item_id,
            "output_index": output_index, "summary_index": 0, "delta": delta,
        })]
    }

    fn message_delta(&mut self, item_id: &rein_protocol::ItemId, delta: &str) -> Vec<Value> {
        let item_id = item_id.to_string();
        let Some(&output_index) = self.index.get(&item_id) else {
            return Vec::new();
        };
        if let Some(text) = self.output[output_index]["content"][0]["text"].as_str() {
            self.output[output_index]["content"][0]["text"] = json!(format!("{text}{delta}"));
        }
        vec![json!({
            "type": "response.output_text.delta", "item_id": item_id,
            "output_index": output_index, "content_index": 0, "delta": delta, "logprobs": [],
        })]
    }

    fn completed(&mut self, item: &Item) -> Vec<Value> {
        match item {
            Item::UserMessage { id, content } => {
                self.input.push(input_item(&id.to_string(), content));
                Vec::new()
            }
            Item::AgentMessage { id, text, partial } => {
                let item_id = id.to_string();
                let mut events = Vec::new();
                if !self.index.contains_key(&item_id) {
                    events = self.message_added(&item_id);
                }
                let output_index = self.index[&item_id];
                let part = json!({ "type": "output_text", "text": text, "annotations": [] });
                let item = &mut self.output[output_index];
                item["content"] = json!([part]);
                item["status"] = json!(if *partial { "incomplete" } else { "completed" });
                events.push(json!({
                    "type": "response.output_text.done", "item_id": item_id,
                    "output_index": output_index, "content_index": 0, "text": text,
                    "logprobs": [],
                }));
                events.push(json!({
                    "type": "response.content_part.done", "item_id": item_id,
                    "output_index": output_index, "content_index": 0, "part": part,
                }));
                events.push(self.done(output_index));
                events
            }
            Item::Reasoning { id, text, .. } => {
                let item_id = id.to_string();
                let mut events = Vec::new();
                if !self.index.contains_key(&item_id) {
                    events = self.reasoning_added(&item_id);
                }
                let output_index = self.index[&item_id];
                let part = json!({ "type": "summary_text", "text": text });
                self.output[output_index]["summary"] = json!([part]);
                events.push(json!({
                    "type": "response.reasoning_summary_text.done", "item_id": item_id,
                    "output_index": output_index, "summary_index": 0, "text": text,
                }));
                events.push(json!({
                    "type": "response.reasoning_summary_part.done", "item_id": item_id,
                    "output_index": output_index, "summary_index": 0, "part": part,
                }));
                events.push(self.done(output_index));
                events
            }
            // rein's own tool calls: shown, never for the client to run (so not
            // `function_call`, which a client would answer).
            Item::ToolCall {
                id,
                call_id,
                name,
                arguments,
            } => {
                let item = json!({
                    "type": "tool_call", "id": id.to_string(), "call_id": call_id,
                    "name": name, "arguments": arguments, "status": "in_progress",
                });
                vec![self.added(call_id.clone(), item)]
            }
            Item::ToolOutput {
                call_id,
                output,
                success,
                ..
            } => {
                let Some(&output_index) = self.index.get(call_id) else {
                    return Vec::new();
                };
                let item = &mut self.output[output_index];
                item["output"] = json!(output);
                item["status"] = json!(if *success { "completed" } else { "failed" });
                vec![self.done(output_index)]
            }
            Item::DeveloperMessage { .. } | Item::Interruption { .. } => Vec::new(),
        }
    }

    /// The response object as it stands.
    pub fn response(&self) -> Value {
        let usage = self.usage.as_ref().map(|u| {
            json!({
                "input_tokens": u.input_tokens,
                "input_tokens_details": { "cached_tokens": u.cached_input_tokens },
                "output_tokens": u.output_tokens,
                "output_tokens_details": { "reasoning_tokens": u.reasoning_output_tokens },
                "total_tokens": u.total_tokens,
            })
        });
        json!({
            "id": self.id.to_string(),
            "object": "response",
            "created_at": self.created_at,
            "status": self.status.name(),
            "error": self.error,
            "incomplete_details": self.incomplete,
            "instructions": self.instructions,
            "model": self.model,
            "output": self.output,
            "parallel_tool_calls": true,
            "previous_response_id": self.previous.map(|p| p.to_string()),
            "store": true,
            "tool_choice": "auto",
            "tools": [],
            "usage": usage,
            "metadata": self.record.metadata,
            "background": self.record.background,
        })
    }

    /// The turn's user input, as `input_items` lists it (oldest first).
    pub fn input_items(&self) -> &[Value] {
        &self.input
    }
}

/// Where a resumed stream (`starting_after=N`) starts. Before its first event the response
/// is restated as it stood, as a `response.created` event, so a client that accumulates
/// events into a response (the SDKs' stream helpers) starts from the state the events it
/// skips had built. The kernel event holding `N + 1` is sent whole after that restatement
/// (its first stream events may be numbered `N` or less): the restatement is the state
/// before it.
pub struct Cursor {
    after: Option<u64>,
    restated: bool,
}

impl Cursor {
    pub fn new(after: Option<u64>) -> Self {
        Self {
            after,
            restated: after.is_none(),
        }
    }

    /// Fold `event` into `projector`; the stream events to send for it.
    pub fn step(&mut self, projector: &mut Projector, event: &Event) -> Vec<StreamEvent> {
        let Some(n) = self.after else {
            return projector.push(event);
        };
        if self.restated {
            let produced = projector.push(event);
            return produced
                .into_iter()
                .filter(|e| e.sequence_number > n)
                .collect();
        }
        let before = projector.may_pass(event, n).then(|| projector.response());
        let produced = projector.push(event);
        if !produced.iter().any(|e| e.sequence_number > n) {
            return Vec::new();
        }
        self.restated = true;
        let mut out = Vec::new();
        // From the turn's start, the real `response.created` comes anyway.
        if !matches!(event.msg, EventMsg::TurnStarted { .. }) {
            if let Some(response) = before {
                let data = json!({
                    "type": "response.created", "sequence_number": 0, "response": response,
                });
                out.push(StreamEvent {
                    sequence_number: 0,
                    data,
                });
            }
        }
        out.extend(produced);
        out
    }
}

fn input_item(id: &str, content: &[InputPart]) -> Value {
    let content: Vec<Value> = content
        .iter()
        .map(|part| match part {
            InputPart::Text { text } | InputPart::Skill { text, .. } => {
                json!({ "type": "input_text", "text": text })
            }
            InputPart::Image { url } => {
                json!({ "type": "input_image", "image_url": url, "detail": "auto" })
            }
        })
        .collect();
    json!({ "type": "message", "id": id, "role": "user", "status": "completed", "content": content })
}

fn error_code(code: ErrorCode) -> String {
    serde_json::to_value(code)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "server_error".to_owned())
}
