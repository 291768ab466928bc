//! `POST /v1/chat/completions` bodies: the fields rein honours, each checked (any other is
//! a 400 naming it), and what they become: a turn's input, a new thread's instructions, and
//! the key under which the conversation so far may continue a thread.
//!
//! The Chat Completions API is stateless: a client sends the whole conversation each time.
//! rein's agent keeps a thread, so a conversation it has answered is found again by what it
//! says (a SHA-256 of its messages, [`conversation_key`]) and continued on its thread; one it
//! has not seen (a client's own history, or an edited one) starts a new thread that is given
//! the earlier messages in its instructions.

use rein_protocol::InputPart;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::ApiError;

/// The body of `POST /v1/chat/completions`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatRequest {
    /// A model of the configured catalog; absent: the configured model.
    #[serde(default)]
    pub model: Option<String>,
    pub messages: Vec<ChatMessage>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// One choice only: the agent's turn is one answer.
    #[serde(default)]
    pub n: Option<u32>,
    /// Every completion is stored (it is a turn of a thread); `false` is refused.
    #[serde(default)]
    pub store: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatMessage {
    pub role: Role,
    #[serde(default)]
    pub content: Option<Value>,
    #[serde(default)]
    pub name: Option<String>,
    /// The agent runs its own tools: a client's tool calls and results are refused.
    #[serde(default)]
    pub tool_calls: Option<Value>,
    #[serde(default)]
    pub tool_call_id: Option<String>,
    #[serde(default)]
    pub refusal: Option<Value>,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// A message as the conversation's key and a new thread's instructions read it: its role
/// and its text (an image as its URL).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Said {
    pub role: Role,
    pub text: String,
}

/// A checked request, split where the new input begins.
#[derive(Debug)]
pub struct Chat {
    pub model: Option<String>,
    pub stream: bool,
    pub include_usage: bool,
    /// Everything up to and including the last assistant message.
    pub before: Vec<Said>,
    /// The system and developer messages after it (a new thread's instructions).
    pub instructions: Vec<String>,
    /// The user messages after it: the turn's input.
    pub input: Vec<InputPart>,
    /// The new messages as they read, for the key of the conversation once answered.
    pub said: Vec<Said>,
}

/// Parse and check a body, naming the offending field in the 400.
pub fn parse(body: &[u8]) -> Result<Chat, ApiError> {
    let req: ChatRequest = crate::request::parse_json(body)?;
    if req.n.is_some_and(|n| n != 1) {
        return Err(ApiError::bad(
            "rein answers with one choice (`n: 1`)",
            Some("n"),
        ));
    }
    if req.store == Some(false) {
        return Err(ApiError::bad(
            "`store: false` is not supported: every completion is kept in its thread's rollout",
            Some("store"),
        ));
    }
    if req.messages.is_empty() {
        return Err(ApiError::bad("`messages` is empty", Some("messages")));
    }
    let split = req
        .messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |i| i + 1);
    let mut chat = Chat {
        model: req.model,
        stream: req.stream,
        include_usage: req.stream_options.unwrap_or_default().include_usage,
        before: Vec::new(),
        instructions: Vec::new(),
        input: Vec::new(),
        said: Vec::new(),
    };
    for (i, message) in req.messages.iter().enumerate() {
        let at = format!("messages[{i}]");
        check(message, &at)?;
        let (text, parts) = content(message, &at)?;
        let said = Said {
            role: message.role,
            text,
        };
        if i < split {
            chat.before.push(said);
            continue;
        }
        match message.role {
            Role::User => chat.input.extend(parts),
            _ => chat.instructions.push(said.text.clone()),
        }
        chat.said.push(said);
    }
    if chat.input.iter().all(InputPart::is_blank) {
        return Err(ApiError::bad(
            "the conversation must end with a user message after the last assistant one",
            Some("messages"),
        ));
    }
    Ok(chat)
}

fn check(message: &ChatMessage, at: &str) -> Result<(), ApiError> {
    let refuse = |field: &str| {
        Err(ApiError::bad(
            "rein's agent runs its own tools: a client's tool calls and results are not taken",
            Some(&format!("{at}.{field}")),
        ))
    };
    if message.role == Role::Tool {
        return refuse("role");
    }
    if message.tool_calls.is_some() {
        return refuse("tool_calls");
    }
    if message.tool_call_id.is_some() {
        return refuse("tool_call_id");
    }
    if message.name.is_some() {
        return Err(ApiError::bad(
            "message `name`s are not supported",
            Some(&format!("{at}.name")),
        ));
    }
    Ok(())
}

/// A message's text (its parts' joined) and its parts as input.
fn content(message: &ChatMessage, at: &str) -> Result<(String, Vec<InputPart>), ApiError> {
    let bad = |what: &str, field: String| Err(ApiError::bad(what, Some(&field)));
    match &message.content {
        Some(Value::String(text)) => Ok((text.clone(), vec![InputPart::text(text.clone())])),
        Some(Value::Array(items)) => {
            let mut texts = Vec::new();
            let mut parts = Vec::new();
            for (j, part) in items.iter().enumerate() {
                let field = format!("{at}.content[{j}]");
                let part = content_part(part, &field, message.role)?;
                texts.push(match &part {
                    InputPart::Image { url } => url.clone(),
                    other => other.model_text().unwrap_or_default().to_owned(),
                });
                parts.push(part);
            }
            Ok((texts.join("\n"), parts))
        }
        None | Some(Value::Null)
            if message.role == Role::Assistant && message.refusal.is_some() =>
        {
            Ok((String::new(), Vec::new()))
        }
        _ => bad(
            "a message needs `content`: a string or a list of parts",
            format!("{at}.content"),
        ),
    }
}

fn content_part(part: &Value, at: &str, role: Role) -> Result<InputPart, ApiError> {
    let kind = part.get("type").and_then(Value::as_str);
    match kind {
        Some("text") => part
            .get("text")
            .and_then(Value::as_str)
            .map(InputPart::text)
            .ok_or_else(|| {
                ApiError::bad("a `text` part needs `text`", Some(&format!("{at}.text")))
            }),
        Some("image_url") if role == Role::User => part
            .pointer("/image_url/url")
            .and_then(Value::as_str)
            .map(|url| InputPart::Image {
                url: url.to_owned(),
            })
            .ok_or_else(|| {
                ApiError::bad(
                    "an `image_url` part needs `image_url.url`",
                    Some(&format!("{at}.image_url")),
                )
            }),
        other => Err(ApiError::bad(
            format!(
                "content parts of type {other:?} are not supported in a {} message",
                role.name()
            ),
            Some(&format!("{at}.type")),
        )),
    }
}

/// The key of a conversation: a SHA-256 over each message's role and text, in order, each
/// length-prefixed so that no two conversations share one by where their texts split.
pub fn conversation_key<'a>(said: impl IntoIterator<Item = &'a Said>) -> String {
    let mut hash = Sha256::new();
    for message in said {
        for field in [message.role.name(), message.text.as_str()] {
            hash.update((field.len() as u64).to_le_bytes());
            hash.update(field.as_bytes());
        }
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A new thread's instructions: the system and developer messages, and the earlier
/// conversation (which rein's thread does not hold) as the client sent it.
pub fn new_thread_instructions(chat: &Chat) -> Option<String> {
    let mut sections = Vec::new();
    let mut earlier = Vec::new();
    for said in &chat.before {
        match said.role {
            Role::System | Role::Developer => sections.push(said.text.clone()),
            role => earlier.push(format!("[{}]\n{}", role.name(), said.text)),
        }
    }
    sections.extend(chat.instructions.iter().cloned());
    if !earlier.is_empty() {
        sections.push(format!(
            "The conversation so far, as the client sent it:\n\n{}",
            earlier.join("\n\n")
        ));
    }
    (!sections.is_empty()).then(|| sections.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(role: Role, text: &str) -> Said {
        Said {
            role,
            text: text.to_owned(),
        }
    }

    #[test]
    fn the_input_is_what_follows_the_last_assistant_message() {
        let chat = parse(
            br#"{"model":"m","messages":[
                {"role":"system","content":"Be brief."},
                {"role":"user","content":"one"},
                {"role":"assistant","content":"echo: one"},
                {"role":"user","content":[{"type":"text","text":"two"},
                    {"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]}
            ]}"#,
        )
        .unwrap();
        assert_eq!(
            chat.before,
            [
                said(Role::System, "Be brief."),
                said(Role::User, "one"),
                said(Role::Assistant, "echo: one")
            ]
        );
        assert_eq!(
            chat.input,
            [
                InputPart::text("two"),
                InputPart::Image {
                    url: "data:image/png;base64,AA".into()
                }
            ]
        );
        assert_eq!(
            new_thread_instructions(&chat).as_deref(),
            Some("Be brief.\n\nThe conversation so far, as the client sent it:\n\n[user]\none\n\n[assistant]\necho: one")
        );
    }

    #[test]
    fn what_rein_cannot_honour_is_a_400_naming_it() {
        let param = |body: &str| match parse(body.as_bytes()) {
            Err(ApiError::BadRequest { param, .. }) => param,
            other => panic!("{body}: {other:?}"),
        };
        let user = r#"{"role":"user","content":"hi"}"#;
        assert_eq!(
            param(&format!(r#"{{"messages":[{user}],"temperature":1}}"#)).as_deref(),
            Some("temperature")
        );
        assert_eq!(
            param(&format!(r#"{{"messages":[{user}],"n":2}}"#)).as_deref(),
            Some("n")
        );
        assert_eq!(
            param(r#"{"messages":[{"role":"tool","content":"x","tool_call_id":"c"}]}"#).as_deref(),
            Some("messages[0].role")
        );
        assert_eq!(
            param(
                r#"{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}"#
            )
            .as_deref(),
            Some("messages")
        );
        assert_eq!(param(r#"{"messages":[]}"#).as_deref(), Some("messages"));
    }

    #[test]
    fn keys_differ_where_the_texts_split_differently() {
        let a = [said(Role::User, "ab"), said(Role::Assistant, "c")];
        let b = [said(Role::User, "a"), said(Role::Assistant, "bc")];
        assert_ne!(conversation_key(&a), conversation_key(&b));
        let same = [said(Role::User, "ab"), said(Role::Assistant, "c")];
        assert_eq!(conversation_key(&a), conversation_key(&same));
    }
}
