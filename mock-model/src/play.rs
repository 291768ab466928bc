//! Which reply of the script answers a request, and what that reply is as a sequence of
//! model-level events. Both wire formats render the same events, and count them the same
//! way the in-process scripted model does, so a fault such as "cut after 2 events" cuts
//! at the same point whichever face plays the script.

use std::sync::{Arc, Mutex};

use rein_protocol::script::{Fault, Script, ScriptedReply, WhenExhausted, ASIDE_INDEX_BASE};
use rein_protocol::TokenUsage;

/// One thing the model says; each is one "event" for `cut_after` and `delay_ms`.
#[derive(Clone, Debug, PartialEq)]
pub enum Said {
    Reasoning(String),
    /// A text delta; `first` / `last` tell the renderer when the message opens and closes.
    Text {
        delta: String,
        first: bool,
        last: bool,
        /// The whole text, shared by every delta of the message (a copy each would make
        /// long scripted replies quadratic in memory).
        full: Arc<str>,
    },
    ToolCall {
        call_id: String,
        name: String,
        arguments: String,
    },
    Completed(TokenUsage),
}

/// How a reply is delivered.
#[derive(Clone, Debug, PartialEq)]
pub enum Delivery {
    /// Stream these events; `cut_after` / `hang_after` stop it early as scripted.
    Stream {
        said: Vec<Said>,
        delay_ms: u64,
        cut_after: Option<usize>,
        hang_after: Option<usize>,
    },
    /// Fail before streaming with this status and message.
    HttpError {
        status: u16,
        message: String,
    },
    RateLimited {
        retry_after_ms: u64,
    },
    ContextWindowExceeded,
}

/// The script and how far it has been played.
pub struct Player {
    script: Script,
    /// The reply to every request that ends with a tool's output, instead of the next
    /// scripted one, when set (so concurrent turns each get a tool call, then this).
    after_tool_output: std::sync::OnceLock<ScriptedReply>,
    next: Mutex<usize>,
    /// How many asides were played (they number their own ids).
    asides: std::sync::atomic::AtomicUsize,
}

impl Player {
    pub fn new(script: Script) -> Self {
        Self {
            script,
            after_tool_output: std::sync::OnceLock::new(),
            next: Mutex::new(0),
            asides: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Answer every request that ends with a tool's output with `reply` (once set, kept).
    pub fn answer_tool_outputs_with(&self, reply: ScriptedReply) -> bool {
        self.after_tool_output.set(reply).is_ok()
    }

    /// The reply for a request: the one for tool outputs when set and the request ends
    /// with one, else [`Player::next_reply`].
    pub fn reply_for(
        &self,
        last_user_text: Option<String>,
        ends_with_tool_output: bool,
    ) -> (usize, ScriptedReply) {
        match self.after_tool_output.get() {
            Some(reply) if ends_with_tool_output => {
                let n = self
                    .asides
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                (ASIDE_INDEX_BASE + n, reply.clone())
            }
            _ => self.next_reply(last_user_text),
        }
    }

    /// The reply for the next request, and its 0-based index in the order of requests.
    pub fn next_reply(&self, last_user_text: Option<String>) -> (usize, ScriptedReply) {
        if let Some(reply) = self.script.aside_for(last_user_text.as_deref()) {
            let n = self
                .asides
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return (ASIDE_INDEX_BASE + n, reply.clone());
        }
        let index = {
            // A poisoned counter is still a valid counter.
            let mut next = self
                .next
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let index = *next;
            *next += 1;
            index
        };
        let reply = match self.script.replies.get(index) {
            Some(r) => r.clone(),
            None => self.exhausted(last_user_text),
        };
        (index, reply)
    }

    fn exhausted(&self, last_user_text: Option<String>) -> ScriptedReply {
        match self.script.when_exhausted {
            WhenExhausted::RepeatLast => self
                .script
                .replies
                .last()
                .cloned()
                .unwrap_or_else(|| ScriptedReply::text("(the script has no replies)")),
            WhenExhausted::Error => ScriptedReply::default().with_fault(Fault::HttpError {
                status: 400,
                message: Some("the script is exhausted".into()),
            }),
            WhenExhausted::Echo => {
                ScriptedReply::text(format!("echo: {}", last_user_text.unwrap_or_default()))
            }
        }
    }
}

/// What `reply` (the `index`-th) looks like on the wire; `request_bytes` sizes the
/// estimated usage when the script gives none.
pub fn delivery(reply: &ScriptedReply, index: usize, request_bytes: usize) -> Delivery {
    match &reply.fault {
        Some(Fault::HttpError { status, message }) => {
            return Delivery::HttpError {
                status: *status,
                message: message
                    .clone()
                    .unwrap_or_else(|| format!("injected HTTP {status}")),
            }
        }
        Some(Fault::RateLimited { retry_after_ms }) => {
            return Delivery::RateLimited {
                retry_after_ms: *retry_after_ms,
            }
        }
        Some(Fault::ContextWindowExceeded) => return Delivery::ContextWindowExceeded,
        _ => {}
    }
    let mut said = Vec::new();
    if let Some(r) = &reply.reasoning {
        said.push(Said::Reasoning(r.clone()));
    }
    let deltas = reply.text_deltas();
    let full: Arc<str> = reply.text.as_deref().unwrap_or_default().into();
    let n = deltas.len();
    for (i, delta) in deltas.into_iter().enumerate() {
        said.push(Said::Text {
            delta,
            first: i == 0,
            last: i + 1 == n,
            full: Arc::clone(&full),
        });
    }
    let text_events = said.len();
    for (n, call) in reply.tool_calls.iter().enumerate() {
        said.push(Said::ToolCall {
            call_id: call.id_for(index, n),
            name: call.name.clone(),
            arguments: call.arguments.to_string(),
        });
    }
    let usage = reply.usage.unwrap_or_else(|| {
        let input = (request_bytes as u64).div_ceil(4);
        let output = (full.len() as u64).div_ceil(4);
        TokenUsage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input + output,
            ..TokenUsage::default()
        }
    });
    said.push(Said::Completed(usage));
    Delivery::Stream {
        said,
        delay_ms: reply.delay_ms,
        cut_after: match reply.fault {
            Some(Fault::CutAfter { events }) => Some(events as usize),
            _ => None,
        },
        hang_after: (reply.fault == Some(Fault::Hang)).then_some(text_events),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn replies_play_in_order_then_echo() {
        let player = Player::new(Script {
            replies: vec![ScriptedReply::text("one")],
            when_exhausted: WhenExhausted::Echo,
            asides: Vec::new(),
        });
        assert_eq!(player.next_reply(None).1.text.as_deref(), Some("one"));
        let (index, reply) = player.next_reply(Some("ping".into()));
        assert_eq!(index, 1);
        assert_eq!(reply.text.as_deref(), Some("echo: ping"));
    }

    #[test]
    fn tool_outputs_get_their_own_reply_once_set() {
        let player = Player::new(Script {
            replies: vec![ScriptedReply::tool_call("shell", serde_json::json!({}))],
            when_exhausted: WhenExhausted::RepeatLast,
            asides: Vec::new(),
        });
        // Not set: a tool output is just the next request.
        assert_eq!(player.reply_for(None, true).1.tool_calls.len(), 1);
        assert!(player.answer_tool_outputs_with(ScriptedReply::text("done")));
        assert!(!player.answer_tool_outputs_with(ScriptedReply::text("again")));
        let (first, reply) = player.reply_for(None, true);
        assert_eq!(reply.text.as_deref(), Some("done"));
        assert_eq!(player.reply_for(None, true).0, first + 1, "distinct ids");
        assert_eq!(player.reply_for(None, false).1.tool_calls.len(), 1);
    }

    #[test]
    fn hang_stops_after_the_text_events() {
        let reply = ScriptedReply::text("abcd")
            .with_deltas(2)
            .with_tool_call("shell", serde_json::json!({}))
            .with_fault(Fault::Hang);
        let Delivery::Stream {
            said, hang_after, ..
        } = delivery(&reply, 0, 0)
        else {
            panic!("expected a stream");
        };
        assert_eq!(hang_after, Some(2));
        assert_eq!(said.len(), 4);
    }
}
