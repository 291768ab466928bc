//! `_session/steering`, the extension codex-acp and claude-agent-acp share (advertised as
//! `_meta.steering.supported` in `initialize`): add to the session's running turn, or start
//! a turn when none runs. A plain `session/prompt` that arrives while a turn runs waits for
//! it instead (see `session.rs`), so a client that wants its words in the running turn says
//! so with this request.

use agent_client_protocol::v1::schema::{ContentBlock, SessionId};
use agent_client_protocol::{JsonRpcRequest, JsonRpcResponse};
use serde::{Deserialize, Serialize};

pub const METHOD: &str = "_session/steering";

#[derive(Debug, Clone, Serialize, Deserialize, JsonRpcRequest)]
#[request(method = "_session/steering", response = SteeringResponse)]
#[serde(rename_all = "camelCase")]
pub struct SteeringRequest {
    pub session_id: SessionId,
    pub prompt: Vec<ContentBlock>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonRpcResponse)]
pub struct SteeringResponse {
    pub outcome: SteeringOutcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SteeringOutcome {
    /// The input joined the running turn (the model sees it at its next step).
    Injected,
    /// No turn was running: the input started one (its updates follow; no prompt waits on it).
    StartedNewTurn,
}

/// What `initialize` says about the extension, under `_meta`.
pub fn advertised() -> agent_client_protocol::v1::schema::Meta {
    let mut meta = serde_json::Map::new();
    meta.insert(
        "steering".into(),
        serde_json::json!({ "supported": true, "method": METHOD }),
    );
    meta
}
