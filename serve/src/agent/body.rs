//! Agent Protocol request bodies: the fields rein honours, each checked. A field rein
//! cannot honour is a 400 that names it (unknown ones by serde, known ones it cannot do
//! below), so a client never believes a setting took effect that did not.

use rein_protocol::InputPart;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::fold::Modes;
use crate::error::ApiError;

/// What a second run does on a thread that is running one.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Multitask {
    /// Refused (409).
    #[default]
    Reject,
    /// The running run is interrupted (it stays, `interrupted`), then this one starts.
    Interrupt,
    /// The running run is interrupted and dropped from the thread, then this one starts.
    Rollback,
    /// This one waits (`pending`) until the runs before it have ended.
    Enqueue,
}

impl Multitask {
    pub fn name(self) -> &'static str {
        match self {
            Multitask::Reject => "reject",
            Multitask::Interrupt => "interrupt",
            Multitask::Rollback => "rollback",
            Multitask::Enqueue => "enqueue",
        }
    }
}

/// `on_disconnect`: what a streamed run does when its client goes away.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OnDisconnect {
    Cancel,
    /// rein's default, for every run: a dropped connection never ends a turn.
    #[default]
    Continue,
}

/// `stream_mode`: one name or a list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum StreamModes {
    One(String),
    Many(Vec<String>),
}

/// The body of `POST /threads/{id}/runs` (and `/stream`, `/wait`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCreate {
    pub assistant_id: String,
    pub input: Value,
    #[serde(default)]
    pub stream_mode: Option<StreamModes>,
    #[serde(default)]
    pub stream_subgraphs: Option<bool>,
    /// Every run's stream is resumable (its events are in the rollout); accepted.
    #[serde(default)]
    pub stream_resumable: Option<bool>,
    #[serde(default)]
    pub multitask_strategy: Option<Multitask>,
    #[serde(default)]
    pub on_disconnect: Option<OnDisconnect>,
    #[serde(default)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub config: Option<Value>,
    #[serde(default)]
    pub context: Option<Value>,
    #[serde(default)]
    pub if_not_exists: Option<String>,
    /// A stateless run's (`POST /runs`) temporary thread, once the run has ended.
    #[serde(default)]
    pub on_completion: Option<OnCompletion>,
}

/// `on_completion`: what becomes of a stateless run's thread when the run ends.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OnCompletion {
    /// Deleted as `DELETE /threads/{id}` deletes (archived: out of every listing).
    #[default]
    Delete,
    /// Kept, as any thread.
    Keep,
}

impl RunCreate {
    pub fn modes(&self) -> Result<Modes, ApiError> {
        let parsed = match &self.stream_mode {
            None => Modes::parse([]),
            Some(StreamModes::One(one)) => Modes::parse([one.as_str()]),
            Some(StreamModes::Many(many)) => Modes::parse(many.iter().map(String::as_str)),
        };
        parsed.map_err(|e| ApiError::bad(e, Some("stream_mode")))
    }

    /// The fields rein takes but cannot give every value of.
    pub fn check(&self) -> Result<(), ApiError> {
        if self.stream_subgraphs == Some(true) {
            return Err(ApiError::bad(
                "rein's agent has no subgraphs to stream",
                Some("stream_subgraphs"),
            ));
        }
        for (name, value) in [
            ("metadata", &self.metadata),
            ("config", &self.config),
            ("context", &self.context),
        ] {
            if !is_empty(value.as_ref()) {
                return Err(ApiError::bad(
                    format!(
                        "`{name}` is not supported on runs (the assistant's configuration applies)"
                    ),
                    Some(name),
                ));
            }
        }
        if self.if_not_exists.as_deref().is_some_and(|v| v != "reject") {
            return Err(ApiError::bad(
                "threads are made by POST /threads; `if_not_exists` can only be `reject`",
                Some("if_not_exists"),
            ));
        }
        Ok(())
    }
}

/// Absent, `null`, `{}` or a config whose `configurable` is empty.
pub fn is_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Object(map)) => map.iter().all(|(_, v)| is_empty(Some(v))),
        Some(_) => false,
    }
}

/// The body of `POST /threads`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadCreate {
    #[serde(default)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub thread_id: Option<String>,
    #[serde(default)]
    pub if_exists: Option<String>,
}

impl ThreadCreate {
    pub fn check(&self) -> Result<(), ApiError> {
        if !is_empty(self.metadata.as_ref()) {
            return Err(ApiError::bad(
                "thread metadata is not supported (rein keeps none)",
                Some("metadata"),
            ));
        }
        if self.thread_id.is_some() {
            return Err(ApiError::bad(
                "rein chooses thread ids; leave `thread_id` out",
                Some("thread_id"),
            ));
        }
        Ok(())
    }
}

/// The body of `POST /threads/search`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadSearch {
    #[serde(default)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(default)]
    pub offset: Option<usize>,
    #[serde(default)]
    pub sort_by: Option<String>,
    #[serde(default)]
    pub sort_order: Option<String>,
}

/// The body of `POST /assistants/search`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssistantSearch {
    #[serde(default)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub graph_id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(default)]
    pub offset: Option<usize>,
    #[serde(default)]
    pub sort_by: Option<String>,
    #[serde(default)]
    pub sort_order: Option<String>,
}

/// A run's input: `{"messages": [...]}`, the new human messages (a string content, or
/// `text` / `image_url` parts), in LangChain's shape or OpenAI's (`role: user`).
pub fn input_parts(input: &Value) -> Result<Vec<InputPart>, ApiError> {
    let bad = |message: String, at: &str| ApiError::bad(message, Some(at));
    let Some(messages) = input.get("messages").and_then(Value::as_array) else {
        return Err(bad(
            "`input` must be {\"messages\": [...]}".into(),
            "input.messages",
        ));
    };
    let mut parts = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let at = format!("input.messages[{i}]");
        let role = message
            .get("role")
            .or_else(|| message.get("type"))
            .and_then(Value::as_str);
        if !matches!(role, Some("user" | "human")) {
            return Err(bad(
                "only human (`user`) messages are accepted as a run's input".into(),
                &format!("{at}.role"),
            ));
        }
        match message.get("content") {
            Some(Value::String(text)) => parts.push(InputPart::text(text.clone())),
            Some(Value::Array(content)) => {
                for (j, part) in content.iter().enumerate() {
                    parts.push(content_part(part, &format!("{at}.content[{j}]"))?);
                }
            }
            _ => {
                return Err(bad(
                    "a message needs `content`: a string or a list of parts".into(),
                    &format!("{at}.content"),
                ))
            }
        }
    }
    if parts.iter().all(InputPart::is_blank) {
        return Err(bad("the run's input is empty".into(), "input.messages"));
    }
    Ok(parts)
}

fn content_part(part: &Value, at: &str) -> Result<InputPart, ApiError> {
    match part.get("type").and_then(Value::as_str) {
        Some("text") => part
            .get("text")
            .and_then(Value::as_str)
            .map(InputPart::text)
            .ok_or_else(|| {
                ApiError::bad("a `text` part needs `text`", Some(&format!("{at}.text")))
            }),
        Some("image_url") => {
            let url = part.get("image_url");
            url.and_then(|u| u.get("url").or(Some(u)))
                .and_then(Value::as_str)
                .map(|url| InputPart::Image {
                    url: url.to_owned(),
                })
                .ok_or_else(|| {
                    ApiError::bad(
                        "an `image_url` part needs a URL",
                        Some(&format!("{at}.image_url")),
                    )
                })
        }
        other => Err(ApiError::bad(
            format!("content parts of type {other:?} are not supported"),
            Some(&format!("{at}.type")),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_run_takes_human_messages_and_names_what_it_cannot_honour() {
        let parts = input_parts(&json!({ "messages": [
            { "role": "user", "content": "one" },
            { "type": "human", "content": [{ "type": "text", "text": "two" }] }
        ] }));
        assert_eq!(
            parts.ok(),
            Some(vec![InputPart::text("one"), InputPart::text("two")])
        );
        for bad in [
            json!("hi"),
            json!({ "messages": [{ "role": "assistant", "content": "x" }] }),
            json!({ "messages": [{ "role": "user", "content": "" }] }),
        ] {
            assert!(input_parts(&bad).is_err(), "{bad}");
        }
        let run: RunCreate = crate::request::parse_json(
            br#"{"assistant_id":"rein","input":{},"config":{"configurable":{"x":1}}}"#,
        )
        .unwrap();
        assert!(
            matches!(run.check(), Err(ApiError::BadRequest { param: Some(p), .. }) if p == "config")
        );
        let run: RunCreate = crate::request::parse_json(
            br#"{"assistant_id":"rein","input":{},"config":{"configurable":{}},"stream_mode":["values","updates"]}"#,
        )
        .unwrap();
        assert!(run.check().is_ok());
        assert!(run
            .modes()
            .is_ok_and(|m| m.values && m.updates && !m.messages));
        let unknown = crate::request::parse_json::<RunCreate>(
            br#"{"assistant_id":"rein","input":{},"webhook":"http://x"}"#,
        );
        assert!(
            matches!(unknown, Err(ApiError::BadRequest { param: Some(p), .. }) if p == "webhook")
        );
    }
}
