//! History items: exactly what the model saw and said. The thread's history is a list of
//! these; the model request is built from it and the rollout stores it verbatim.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::ItemId;
use crate::tool_facts::ToolFacts;

/// One part of a user's input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputPart {
    Text {
        text: String,
    },
    /// An image by URL or `data:` URL.
    Image {
        url: String,
    },
    /// A skill attached to the input (an explicit `$name` mention, or a client's `skill`
    /// input item): its `SKILL.md` as read when the input was submitted. The model reads
    /// `text`; `name`, `path` and `sha256` are the activation's record, so `thread/read`,
    /// replay and `rein sessions show` know which skills a session used, and which bytes.
    Skill {
        name: String,
        path: std::path::PathBuf,
        /// SHA-256 (hex) of the `SKILL.md` bytes read.
        sha256: String,
        text: String,
        /// The tools the skill allows (its `allowed-tools`, as rein's tool names): the
        /// turn this input starts offers only these (empty: the skill narrows nothing).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        allowed_tools: Vec<String>,
        /// Claude Code's `context: fork`: the turn this input starts first runs the skill
        /// as a sub-agent (`spawn_agent`, then `wait_agent`), whose answer the turn's model
        /// reads.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        fork: bool,
    },
}

impl InputPart {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// Whether the part carries nothing the model could read.
    pub fn is_blank(&self) -> bool {
        match self {
            InputPart::Text { text } => text.trim().is_empty(),
            InputPart::Image { url } => url.trim().is_empty(),
            InputPart::Skill { text, .. } => text.trim().is_empty(),
        }
    }

    /// The text the model reads of this part; none for an image.
    pub fn model_text(&self) -> Option<&str> {
        match self {
            InputPart::Text { text } | InputPart::Skill { text, .. } => Some(text),
            InputPart::Image { .. } => None,
        }
    }
}

/// Why a message is in history; the model provider maps this to a role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    User,
    Assistant,
    /// Instructions injected by the harness (stop hooks, interruption markers).
    Developer,
}

/// One model-visible history item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Item {
    /// A message from the user (a started turn's input, or a steer drained at a step boundary).
    UserMessage { id: ItemId, content: Vec<InputPart> },
    /// Text the model produced. `partial` is set when the turn was interrupted mid-stream.
    AgentMessage {
        id: ItemId,
        text: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        partial: bool,
    },
    /// The model's reasoning summary / text.
    Reasoning {
        id: ItemId,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
    },
    /// A function call issued by the model; `arguments` is the raw JSON text it sent.
    ToolCall {
        id: ItemId,
        call_id: String,
        name: String,
        arguments: String,
    },
    /// The result of a tool call, fed back to the model (`output`, `success`), with what
    /// the kernel knows of the call (`facts`: absent in rollouts written before tools
    /// reported outcomes). The model never sees `facts`.
    ToolOutput {
        id: ItemId,
        call_id: String,
        output: String,
        success: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        facts: Option<Box<ToolFacts>>,
    },
    /// An instruction the harness adds to history (e.g. a stop hook's veto).
    DeveloperMessage { id: ItemId, text: String },
    /// Marks where a turn was interrupted; the model reads it on the next request.
    Interruption { id: ItemId, text: String },
}

impl Item {
    pub fn id(&self) -> &ItemId {
        match self {
            Item::UserMessage { id, .. }
            | Item::AgentMessage { id, .. }
            | Item::Reasoning { id, .. }
            | Item::ToolCall { id, .. }
            | Item::ToolOutput { id, .. }
            | Item::DeveloperMessage { id, .. }
            | Item::Interruption { id, .. } => id,
        }
    }

    pub fn user_text(text: impl Into<String>) -> Self {
        Item::UserMessage {
            id: ItemId::new(),
            content: vec![InputPart::text(text)],
        }
    }

    /// The plain text of a user or agent message, if this is one.
    pub fn message_text(&self) -> Option<String> {
        match self {
            Item::UserMessage { content, .. } => Some(
                content
                    .iter()
                    // What the user wrote: an attached skill's file is not part of it.
                    .filter_map(|p| match p {
                        InputPart::Text { text } => Some(text.as_str()),
                        InputPart::Image { .. } | InputPart::Skill { .. } => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            Item::AgentMessage { text, .. } => Some(text.clone()),
            _ => None,
        }
    }
}

/// The text of the marker appended to history when a turn is interrupted.
pub const INTERRUPTION_MARKER: &str =
    "<turn_aborted>The user interrupted the previous turn. Output above may be incomplete.</turn_aborted>";
