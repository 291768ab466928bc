//! The script format of rein's scripted model. One format serves both faces of the
//! scripted model: the in-process provider (demo, kernel tests) and the HTTP mock model
//! server (end-to-end tests, benchmarks). See `docs/scripted-model.md`.
//!
//! ```json
//! { "replies": [
//!     { "text": "Let me look.", "tool_calls": [{ "name": "shell", "arguments": { "command": ["ls"] } }] },
//!     { "text": "Done.", "deltas": 3, "delay_ms": 5 },
//!     { "fault": { "type": "http_error", "status": 500 } }
//!   ],
//!   "when_exhausted": "repeat_last" }
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::status::TokenUsage;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Script {
    /// One entry per sampling request, in order.
    pub replies: Vec<ScriptedReply>,
    #[serde(default)]
    pub when_exhausted: WhenExhausted,
    /// Replies given out of turn: a request whose last user message contains an aside's
    /// `when_user_says` gets its reply and uses up none of `replies`. For clients that send
    /// side requests at moments a script cannot predict (the Codex TUI names a thread with
    /// a request of its own while the thread's first turn runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asides: Vec<Aside>,
}

/// A reply for the requests that say something (see [`Script::asides`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Aside {
    pub when_user_says: String,
    pub reply: ScriptedReply,
}

impl Script {
    /// The aside answering a request whose last user message is `last_user_text`.
    pub fn aside_for(&self, last_user_text: Option<&str>) -> Option<&ScriptedReply> {
        let text = last_user_text?;
        self.asides
            .iter()
            .find(|a| text.contains(&a.when_user_says))
            .map(|a| &a.reply)
    }
}

/// The index an aside's reply is played under (its ids derive from it): far past any
/// script's replies, so an aside's ids never collide with an ordered reply's.
pub const ASIDE_INDEX_BASE: usize = 1_000_000;

/// What the scripted model answers once every reply has been used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WhenExhausted {
    /// Answer with the last reply again (an empty script answers a fixed text).
    #[default]
    RepeatLast,
    /// Fail the request with a bad-request error.
    Error,
    /// Answer with the text of the last user message, prefixed by "echo: ".
    Echo,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScriptedReply {
    /// Reasoning text streamed before the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Assistant text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Into how many deltas `text` is split (at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deltas: Option<u32>,
    /// Delay before each streamed event, in milliseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl ScriptedReply {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    pub fn tool_call(name: impl Into<String>, arguments: serde_json::Value) -> Self {
        Self {
            tool_calls: vec![ScriptedToolCall {
                call_id: None,
                name: name.into(),
                arguments,
            }],
            ..Self::default()
        }
    }

    pub fn with_deltas(mut self, n: u32) -> Self {
        self.deltas = Some(n);
        self
    }

    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    pub fn with_tool_call(mut self, name: impl Into<String>, arguments: serde_json::Value) -> Self {
        self.tool_calls.push(ScriptedToolCall {
            call_id: None,
            name: name.into(),
            arguments,
        });
        self
    }

    /// `text` cut into `deltas` pieces on character boundaries.
    pub fn text_deltas(&self) -> Vec<String> {
        let Some(text) = &self.text else {
            return Vec::new();
        };
        let chars: Vec<char> = text.chars().collect();
        let n = (self.deltas.unwrap_or(1).max(1) as usize).min(chars.len().max(1));
        let size = chars.len().div_ceil(n).max(1);
        chars
            .chunks(size)
            .map(|c| c.iter().collect())
            .collect::<Vec<String>>()
    }
}

impl ScriptedToolCall {
    /// The call's id: the scripted one, else `call_<reply index>_<call index>`. Both faces
    /// of the scripted model use this, so a script yields the same ids in and out of process.
    pub fn id_for(&self, reply_index: usize, call_index: usize) -> String {
        self.call_id
            .clone()
            .unwrap_or_else(|| format!("call_{reply_index}_{call_index}"))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScriptedToolCall {
    /// Defaults to `call_<reply index>_<call index>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    pub name: String,
    /// The arguments object; sent to the kernel as its JSON text.
    pub arguments: serde_json::Value,
}

/// A failure the scripted model injects instead of (or in the middle of) a reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Fault {
    /// Fail the request with this HTTP status before streaming anything.
    HttpError {
        status: u16,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// 429 with a `Retry-After` of this many milliseconds.
    RateLimited { retry_after_ms: u64 },
    /// Stream this many events of the reply, then cut the connection.
    CutAfter { events: u32 },
    /// Stream the reply's deltas, then never complete (until the client goes away).
    Hang,
    /// Fail with "context window exceeded".
    ContextWindowExceeded,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_splits_into_requested_deltas() {
        let r = ScriptedReply::text("Hello world").with_deltas(3);
        let d = r.text_deltas();
        assert_eq!(d.len(), 3);
        assert_eq!(d.concat(), "Hello world");
    }

    #[test]
    fn more_deltas_than_chars_gives_one_per_char() {
        let r = ScriptedReply::text("hi").with_deltas(10);
        assert_eq!(r.text_deltas(), vec!["h", "i"]);
    }

    #[test]
    fn script_parses_from_documented_json() {
        let s: Script = serde_json::from_str(
            r#"{"replies":[{"text":"a","deltas":2},{"tool_calls":[{"name":"shell","arguments":{"command":["ls"]}}]},{"fault":{"type":"rate_limited","retry_after_ms":10}}],"when_exhausted":"echo"}"#,
        )
        .unwrap();
        assert_eq!(s.replies.len(), 3);
        assert_eq!(s.when_exhausted, WhenExhausted::Echo);
        assert_eq!(
            s.replies[2].fault,
            Some(Fault::RateLimited { retry_after_ms: 10 })
        );
    }
}
