//! A thread's events as the Agent Protocol sees them: runs (its turns) with their status,
//! the thread's `values` (`{"messages": [...]}` in LangChain's message shape), and a run's
//! stream of `metadata` / `values` / `updates` / `messages` / `error` / `end` events.
//!
//! Built on the Responses projection ([`Projector`]), never beside it: a run's messages
//! are its response's input and output items, renamed (a `message` item is an `ai`
//! message, a `tool_call` item an `ai` message with `tool_calls` and then a `tool` message
//! with the call's output as recorded). So the two APIs agree on every turn, and a tool's
//! output is shown as the kernel recorded it, never re-read.
//!
//! Event ids are `seq * SLOTS + i`: the kernel event's number in its thread and the
//! event's place among those it yields. They depend on the event alone, so an id means the
//! same live and replayed from the rollout, and `Last-Event-ID` resumes at any age.

use std::collections::HashMap;

use rein_protocol::{Event, EventMsg, ThreadId, TurnId};
use serde_json::{json, Value};

use crate::ids::ResponseId;
use crate::project::{Projector, Status, StreamEvent};

/// Agent Protocol events one kernel event may become.
pub const SLOTS: u64 = 8;

/// One run: a turn, folded.
pub struct RunFold {
    pub turn: TurnId,
    pub projector: Projector,
    pub created_ms: u64,
    pub updated_ms: u64,
    /// Dropped from the history by a rollback (`multitask_strategy: rollback`): the
    /// protocol deletes such a run.
    pub rolled_back: bool,
}

impl RunFold {
    /// The run's messages: its input, then its completed output.
    pub fn messages(&self) -> Vec<Value> {
        messages_of(&self.projector)
    }
}

/// A thread's runs in order, rolled-back ones flagged.
pub struct ThreadFold {
    pub runs: Vec<RunFold>,
}

impl ThreadFold {
    pub fn new(thread: ThreadId, events: &[Event]) -> Self {
        let mut runs: Vec<RunFold> = Vec::new();
        let mut index: HashMap<TurnId, usize> = HashMap::new();
        for event in events {
            if let EventMsg::RolledBack { turns } = &event.msg {
                let live = runs.iter_mut().rev().filter(|r| !r.rolled_back);
                for run in live.take(*turns as usize) {
                    run.rolled_back = true;
                }
                continue;
            }
            let Some(turn) = event.turn_id else { continue };
            if matches!(event.msg, EventMsg::TurnStarted { .. }) && !index.contains_key(&turn) {
                let previous = runs.last().map(|r| ResponseId {
                    thread,
                    turn: r.turn,
                });
                index.insert(turn, runs.len());
                runs.push(RunFold {
                    turn,
                    projector: Projector::new(ResponseId { thread, turn }, previous),
                    created_ms: event.timestamp_ms,
                    updated_ms: event.timestamp_ms,
                    rolled_back: false,
                });
            }
            if let Some(&i) = index.get(&turn) {
                runs[i].projector.push(event);
                runs[i].updated_ms = event.timestamp_ms;
            }
        }
        Self { runs }
    }

    pub fn run(&self, turn: TurnId) -> Option<&RunFold> {
        self.runs.iter().find(|r| r.turn == turn && !r.rolled_back)
    }

    /// The messages of the runs before `turn` (all of them for `None`), rollbacks left out.
    pub fn messages_before(&self, turn: Option<TurnId>) -> Vec<Value> {
        self.runs
            .iter()
            .take_while(|r| Some(r.turn) != turn)
            .filter(|r| !r.rolled_back)
            .flat_map(RunFold::messages)
            .collect()
    }

    /// The thread's values: every message of its live runs.
    pub fn values(&self) -> Value {
        json!({ "messages": self.messages_before(None) })
    }

    /// The latest run not rolled back.
    pub fn last(&self) -> Option<&RunFold> {
        self.runs.iter().rev().find(|r| !r.rolled_back)
    }
}

/// A run's status in the protocol's words; `running` says whether a process runs it.
pub fn run_status(status: Status, running: bool) -> &'static str {
    match status {
        Status::Queued => "pending",
        Status::InProgress if running => "running",
        // Open in the rollout with nothing running it: cut off by a dead process.
        Status::InProgress | Status::Cancelled | Status::Incomplete => "interrupted",
        Status::Completed => "success",
        Status::Failed => "error",
    }
}

/// The messages of one run, in LangChain's shape.
pub fn messages_of(projector: &Projector) -> Vec<Value> {
    let mut messages: Vec<Value> = projector.input_items().iter().map(human).collect();
    let response = projector.response();
    for item in response["output"].as_array().into_iter().flatten() {
        messages.extend(from_output(item));
    }
    messages
}

fn human(item: &Value) -> Value {
    let parts = item["content"].as_array().cloned().unwrap_or_default();
    let content = match parts.as_slice() {
        [one] if one["type"] == "input_text" => one["text"].clone(),
        _ => Value::Array(
            parts
                .iter()
                .map(|p| match p["type"].as_str() {
                    Some("input_image") => {
                        json!({ "type": "image_url", "image_url": { "url": p["image_url"] } })
                    }
                    _ => json!({ "type": "text", "text": p["text"] }),
                })
                .collect(),
        ),
    };
    json!({ "type": "human", "id": item["id"], "content": content })
}

/// The messages of one output item: none while a message is being written, an `ai` one
/// once done, and for a tool call an `ai` one with the call, then a `tool` one with its
/// output once it has one.
fn from_output(item: &Value) -> Vec<Value> {
    match item["type"].as_str() {
        Some("message") if item["status"] != "in_progress" => vec![json!({
            "type": "ai", "id": item["id"], "content": item["content"][0]["text"],
            "tool_calls": [],
            "response_metadata": { "status": item["status"] },
        })],
        Some("tool_call") => {
            let arguments = item["arguments"].as_str().unwrap_or_default();
            // LangChain's tool calls carry their arguments as an object; rein's are the
            // model's JSON text, passed on whole when it is not an object.
            let args = match serde_json::from_str::<Value>(arguments) {
                Ok(Value::Object(args)) => Value::Object(args),
                _ => json!({ "input": arguments }),
            };
            let mut messages = vec![json!({
                "type": "ai", "id": item["id"], "content": "",
                "tool_calls": [{
                    "type": "tool_call", "id": item["call_id"], "name": item["name"], "args": args,
                }],
            })];
            if !item["output"].is_null() {
                let status = if item["status"] == "completed" {
                    "success"
                } else {
                    "error"
                };
                messages.push(json!({
                    "type": "tool", "id": format!("tool_{}", item["call_id"].as_str().unwrap_or_default()),
                    "tool_call_id": item["call_id"], "name": item["name"],
                    "content": item["output"], "status": status,
                }));
            }
            messages
        }
        _ => Vec::new(),
    }
}

/// The stream modes a run's stream sends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Modes {
    pub values: bool,
    pub updates: bool,
    /// `messages-tuple`: the text as it is written (live only: deltas are not stored).
    pub messages: bool,
}

impl Modes {
    /// These, or `values` when none.
    pub fn or_values(self) -> Self {
        if self == Self::default() {
            Self {
                values: true,
                ..self
            }
        } else {
            self
        }
    }

    /// Whether a stream of these modes sends events of `kind` (`metadata`, `error` and
    /// `end` are in every one).
    pub fn sends(self, kind: &str) -> bool {
        match kind {
            "values" => self.values,
            "updates" => self.updates,
            "messages" => self.messages,
            _ => true,
        }
    }

    /// The protocol's names of these (what [`Modes::parse`] reads back).
    pub fn names(self) -> Vec<String> {
        [
            (self.values, "values"),
            (self.updates, "updates"),
            (self.messages, "messages-tuple"),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| name.to_owned())
        .collect()
    }

    /// From the protocol's names; a name rein does not send is a 400 naming it.
    pub fn parse<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut modes = Self::default();
        let mut any = false;
        for name in names {
            any = true;
            match name {
                "values" => modes.values = true,
                "updates" => modes.updates = true,
                "messages-tuple" => modes.messages = true,
                other => {
                    return Err(format!(
                        "stream mode {other:?} is not supported (values, updates, messages-tuple)"
                    ))
                }
            }
        }
        if !any {
            modes.values = true;
        }
        Ok(modes)
    }
}

/// One Agent Protocol stream event.
#[derive(Clone, Debug, PartialEq)]
pub struct ApEvent {
    pub id: u64,
    pub event: &'static str,
    pub data: Value,
}

/// One run's stream: the Responses projection of its turn, said in the protocol's events.
pub struct RunStream {
    thread: ThreadId,
    turn: TurnId,
    /// The messages of the runs before it.
    before: Vec<Value>,
    projector: Projector,
    modes: Modes,
    /// Messages already announced (`updates` sends only the new ones).
    sent: usize,
    /// Open approval requests last announced.
    asking: usize,
    /// Events numbered at or below this are not sent (`Last-Event-ID`).
    after: Option<u64>,
}

impl RunStream {
    pub fn new(
        id: ResponseId,
        previous: Option<ResponseId>,
        before: Vec<Value>,
        modes: Modes,
        after: Option<u64>,
    ) -> Self {
        Self {
            thread: id.thread,
            turn: id.turn,
            before,
            projector: Projector::new(id, previous),
            modes,
            sent: 0,
            asking: 0,
            after,
        }
    }

    pub fn status(&self) -> Status {
        self.projector.status()
    }

    /// The kernel seq of the last event folded.
    pub fn last_seq(&self) -> Option<u64> {
        self.projector.last_seq()
    }

    /// Fold `event`; the protocol events to send for it.
    pub fn step(&mut self, event: &Event) -> Vec<ApEvent> {
        let inputs = self.projector.input_items().len();
        let produced = self.projector.push(event);
        let grew = self.projector.input_items().len() > inputs;
        self.translate(event.seq, &produced, grew)
    }

    /// Nothing runs the turn any more (the process that ran it died): its last events.
    pub fn interrupted(&mut self) -> Vec<ApEvent> {
        let Some(last) = self.projector.interrupted() else {
            return Vec::new();
        };
        let seq = self.projector.last_seq().map_or(0, |s| s + 1);
        self.translate(seq, &[last], false)
    }

    fn translate(&mut self, seq: u64, produced: &[StreamEvent], input_grew: bool) -> Vec<ApEvent> {
        let mut out: Vec<(&'static str, Value)> = Vec::new();
        let mut changed = input_grew;
        for event in produced {
            match event.kind() {
                "response.created" => out.push((
                    "metadata",
                    json!({ "run_id": self.turn.to_string(), "attempt": 1 }),
                )),
                "response.output_text.delta" => {
                    out.push(self.chunk(&event.data["item_id"], &event.data["delta"]));
                }
                "response.output_item.added" => {
                    // The message's first, empty chunk: it is stored (the item's start),
                    // so a replay shows the model began answering, deltas or not.
                    let item = &event.data["item"];
                    if item["type"] == "message" {
                        out.push(self.chunk(&item["id"], &json!("")));
                    }
                    changed = true;
                }
                "response.output_item.done" => changed = true,
                "response.failed" => {
                    let error = &event.data["response"]["error"];
                    out.push((
                        "error",
                        json!({ "error": error["code"], "message": error["message"] }),
                    ));
                }
                _ => {}
            }
        }
        if changed {
            out.extend(self.state_events());
        }
        let ends = produced.iter().any(|e| {
            matches!(
                e.kind(),
                "response.completed" | "response.failed" | "response.incomplete"
            )
        });
        if ends {
            out.push(("end", Value::Null));
        }
        // Numbered among the events of every mode, then filtered: an id names the same
        // event whatever modes a stream asked for.
        let (after, modes) = (self.after, self.modes);
        out.into_iter()
            .zip(0..)
            .map(|((event, data), i)| ApEvent {
                id: seq * SLOTS + i,
                event,
                data,
            })
            .filter(|e| after.is_none_or(|n| e.id > n) && modes.sends(e.event))
            .collect()
    }

    fn chunk(&self, item_id: &Value, text: &Value) -> (&'static str, Value) {
        let chunk = json!({ "type": "AIMessageChunk", "id": item_id, "content": text });
        let meta = json!({
            "run_id": self.turn.to_string(), "thread_id": self.thread.to_string(),
            "langgraph_node": "agent",
        });
        ("messages", json!([chunk, meta]))
    }

    /// `values` and `updates` for the messages the last event completed.
    fn state_events(&mut self) -> Vec<(&'static str, Value)> {
        let messages = messages_of(&self.projector);
        let interrupts = interrupts_of(&self.projector);
        let grew = messages.len() > self.sent;
        if !grew && interrupts.len() == self.asking {
            return Vec::new();
        }
        let new: Vec<Value> = messages[self.sent.min(messages.len())..].to_vec();
        self.sent = messages.len();
        self.asking = interrupts.len();
        let mut all = self.before.clone();
        all.extend(messages);
        let mut values = json!({ "messages": all });
        if !interrupts.is_empty() {
            values["__interrupt__"] = json!(interrupts);
        }
        let mut out = vec![("values", values)];
        if grew {
            // The node that made them, in a LangGraph agent's names.
            let node = match new.first().map(|m| m["type"].clone()) {
                Some(Value::String(t)) if t == "human" => "__start__",
                Some(Value::String(t)) if t == "tool" => "tools",
                _ => "agent",
            };
            out.push(("updates", json!({ node: { "messages": new } })));
        } else if !interrupts.is_empty() {
            out.push(("updates", json!({ "__interrupt__": interrupts })));
        }
        out
    }
}

/// The run's open approval requests, as the protocol's interrupts (`value`: what is asked;
/// `id`: the request's id, answered at `/v1/responses/{id}/approvals/{request_id}`).
pub fn interrupts_of(projector: &Projector) -> Vec<Value> {
    let response = projector.response();
    response["output"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "approval_request" && item["status"] == "pending")
        .map(|item| json!({ "value": item["request"], "id": item["id"] }))
        .collect()
}
