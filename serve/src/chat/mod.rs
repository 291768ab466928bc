//! `POST /v1/chat/completions`: OpenAI's Chat Completions API on rein's agent. A completion
//! is one turn (the agent's tools and all), answered with the turn's messages as one
//! assistant message; plain, or streamed as `chat.completion.chunk`s ending `[DONE]`.
//!
//! The turn runs on a thread like any response's (listed by `rein sessions`, continued by
//! any front end): a conversation the server has answered continues its thread (found by
//! [`request::conversation_key`], recorded once the turn is durable), any other starts a
//! new one. The chunks and the object are read off the same projection as
//! `/v1/responses` ([`crate::project`]), never from the model's stream directly.

pub mod request;

use std::collections::HashMap;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::handlers::{json_response, read_body};
use crate::ids::ResponseId;
use crate::project::{Projector, Status};
use crate::request::CreateResponse;
use crate::runs::Started;
use crate::server::{App, Body};
use crate::stream::{self, Sink};
use request::{conversation_key, Chat, Role, Said};

/// `POST /v1/chat/completions`.
pub(crate) async fn create(
    app: &Arc<App>,
    req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    let body = read_body(req, app.options.max_body_bytes, app.options.read_timeout).await?;
    let chat = request::parse(&body)?;
    let Started {
        id,
        previous,
        mut events,
    } = start(app, &chat).await?;
    let mut projector = Projector::new(id, previous);
    if chat.stream {
        let (response, sink) = stream::channel();
        let app = Arc::clone(app);
        tokio::spawn(async move {
            let mut chunks = Chunks::new(id, chat.include_usage);
            while let Some(event) = events.recv().await {
                let out = projector.push(&event);
                if !chunks.send(&sink, &projector, &out).await {
                    return;
                }
                if projector.status().is_final() {
                    break;
                }
            }
            let ended = ended(&app, &chat, &mut projector).await;
            chunks.finish(&sink, ended).await;
        });
        return Ok(response);
    }
    while let Some(event) = events.recv().await {
        projector.push(&event);
        if projector.status().is_final() {
            break;
        }
    }
    let response = ended(app, &chat, &mut projector).await?;
    Ok(json_response(&completion(id, &response)))
}

/// Continue the thread that answered the conversation so far, if there is one and it has
/// not moved on; otherwise a new thread, told the earlier messages.
async fn start(app: &App, chat: &Chat) -> Result<Started, ApiError> {
    if !chat.before.is_empty() && chat.instructions.is_empty() {
        let key = conversation_key(&chat.before);
        if let Some(previous) = app.runs.records().chat(&key).await? {
            match app
                .runs
                .start(&turn(chat, Some(previous)), chat.input.clone())
                .await
            {
                Ok(started) => return Ok(started),
                Err(e @ ApiError::TooManyRuns(_)) => return Err(e),
                // Gone, moved on or busy: the conversation goes on on a thread of its own.
                Err(e) => tracing::debug!("not continuing {previous}: {e}"),
            }
        }
    }
    app.runs.start(&turn(chat, None), chat.input.clone()).await
}

fn turn(chat: &Chat, previous: Option<ResponseId>) -> CreateResponse {
    CreateResponse {
        model: chat.model.clone(),
        input: Value::Null,
        instructions: match previous {
            None => request::new_thread_instructions(chat),
            Some(_) => None,
        },
        previous_response_id: previous.map(|p| p.to_string()),
        stream: false,
        background: false,
        store: None,
        metadata: None,
        record: Default::default(),
    }
}

/// The turn's response object once it has ended; a completed one's conversation is
/// recorded first, so a client that continues it at once finds its thread.
async fn ended(app: &App, chat: &Chat, projector: &mut Projector) -> Result<Value, ApiError> {
    if !projector.status().is_final() {
        projector.interrupted();
    }
    let response = projector.response();
    if projector.status() != Status::Completed {
        let reason = response["error"]["message"].as_str().map_or_else(
            || format!("the turn ended {}", response["status"]),
            str::to_owned,
        );
        return Err(ApiError::Internal(reason));
    }
    let answered = Said {
        role: Role::Assistant,
        text: text_of(&response),
    };
    let key = conversation_key(chat.before.iter().chain(&chat.said).chain([&answered]));
    app.runs.records().put_chat(&key, projector.id()).await?;
    Ok(response)
}

/// The assistant's text of a response: its messages' text, in order, a blank line apart.
fn text_of(response: &Value) -> String {
    let messages = response["output"].as_array().into_iter().flatten();
    let texts: Vec<&str> = messages
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().into_iter().flatten())
        .filter(|part| part["type"] == "output_text")
        .filter_map(|part| part["text"].as_str())
        .collect();
    texts.join("\n\n")
}

fn completion_id(id: ResponseId) -> String {
    let id = id.to_string();
    format!("chatcmpl-{}", id.trim_start_matches("resp_"))
}

fn usage(response: &Value) -> Value {
    let usage = &response["usage"];
    if usage.is_null() {
        return Value::Null;
    }
    json!({
        "prompt_tokens": usage["input_tokens"],
        "completion_tokens": usage["output_tokens"],
        "total_tokens": usage["total_tokens"],
        "prompt_tokens_details": { "cached_tokens": usage["input_tokens_details"]["cached_tokens"] },
        "completion_tokens_details": {
            "reasoning_tokens": usage["output_tokens_details"]["reasoning_tokens"]
        },
    })
}

/// The `chat.completion` object of an ended, completed turn.
fn completion(id: ResponseId, response: &Value) -> Value {
    json!({
        "id": completion_id(id),
        "object": "chat.completion",
        "created": response["created_at"],
        "model": response["model"],
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant", "content": text_of(response), "refusal": null,
                "annotations": [],
            },
            "logprobs": null,
            "finish_reason": "stop",
        }],
        "usage": usage(response),
        "system_fingerprint": null,
    })
}

/// A streamed completion: the `response.*` events of the projection, as chunks.
struct Chunks {
    id: String,
    include_usage: bool,
    /// `created` and `model`, once the turn has started.
    head: Option<(Value, Value)>,
    /// What was sent of each message item, so that its end sends what its deltas missed.
    sent: HashMap<String, String>,
    last_item: Option<String>,
}

impl Chunks {
    fn new(id: ResponseId, include_usage: bool) -> Self {
        Self {
            id: completion_id(id),
            include_usage,
            head: None,
            sent: HashMap::new(),
            last_item: None,
        }
    }

    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        let (created, model) = self.head.clone().unwrap_or_default();
        json!({
            "id": self.id, "object": "chat.completion.chunk", "created": created,
            "model": model, "system_fingerprint": null,
            "choices": [{
                "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason,
            }],
        })
    }

    async fn send(
        &mut self,
        sink: &Sink,
        projector: &Projector,
        out: &[crate::project::StreamEvent],
    ) -> bool {
        if self.head.is_none() && projector.started() {
            let response = projector.response();
            self.head = Some((response["created_at"].clone(), response["model"].clone()));
            let first = self.chunk(json!({ "role": "assistant", "content": "" }), None);
            if !data(sink, &first).await {
                return false;
            }
        }
        for event in out {
            let text = match event.kind() {
                "response.output_text.delta" => {
                    let item = event.data["item_id"].as_str().unwrap_or_default();
                    let delta = event.data["delta"].as_str().unwrap_or_default();
                    self.text(item, delta)
                }
                "response.output_item.done" if event.data["item"]["type"] == "message" => {
                    let item = &event.data["item"];
                    let whole = text_of(&json!({ "output": [item] }));
                    self.rest(item["id"].as_str().unwrap_or_default(), &whole)
                }
                _ => None,
            };
            if let Some(text) = text {
                let chunk = self.chunk(json!({ "content": text }), None);
                if !data(sink, &chunk).await {
                    return false;
                }
            }
        }
        true
    }

    /// A delta of message `item`, after a blank line when it starts another message.
    fn text(&mut self, item: &str, delta: &str) -> Option<String> {
        let starts = self.last_item.as_deref() != Some(item);
        let gap = if starts && self.last_item.is_some() {
            "\n\n"
        } else {
            ""
        };
        self.last_item = Some(item.to_owned());
        self.sent
            .entry(item.to_owned())
            .or_default()
            .push_str(delta);
        (!delta.is_empty()).then(|| format!("{gap}{delta}"))
    }

    /// What message `item`'s deltas did not send of its `whole` text.
    fn rest(&mut self, item: &str, whole: &str) -> Option<String> {
        let sent = self.sent.get(item).map_or("", String::as_str);
        let rest = whole.strip_prefix(sent).unwrap_or_default().to_owned();
        if rest.is_empty() {
            return None;
        }
        self.text(item, &rest)
    }

    async fn finish(&self, sink: &Sink, ended: Result<Value, ApiError>) {
        let response = match ended {
            Ok(response) => response,
            Err(e) => {
                data(sink, &e.body()).await;
                return;
            }
        };
        if !data(sink, &self.chunk(json!({}), Some("stop"))).await {
            return;
        }
        if self.include_usage {
            let mut last = self.chunk(json!({}), None);
            last["choices"] = json!([]);
            last["usage"] = usage(&response);
            if !data(sink, &last).await {
                return;
            }
        }
        sink.send_text("data: [DONE]\n\n".to_owned()).await;
    }
}

/// One `data:` event (Chat Completions' streams name no event).
async fn data(sink: &Sink, value: &Value) -> bool {
    sink.send_text(format!("data: {value}\n\n")).await
}
