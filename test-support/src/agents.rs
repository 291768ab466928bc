//! What the sub-agent tests share (the kernel's, in `core/tests/all/`, and the durable tree's,
//! in `bootstrap/tests/all/`): one scripted model per agent, picked by the `model` argument of
//! `spawn_agent`, so every thread's replies are deterministic, and waits on events.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;

use rein_core::agents::AgentsConfig;
use rein_core::model::scripted::ScriptedModel;
use rein_core::model::{ModelInfo, ModelRequest, StaticCatalog};
use rein_core::{EventStream, ThreadCreated, ThreadManager, ThreadOrigin};
use rein_protocol::script::ScriptedReply;
use rein_protocol::{Event, EventMsg, Item};
use serde_json::{json, Value};

/// The root's model is the kernel fixtures' `MODEL`; the settings, the kernel config
/// and the event helpers are theirs too.
pub use crate::kernel::{fast_config, is_turn_end, request_user_texts, settings, MODEL};
use tokio::sync::broadcast;

/// A catalog of one scripted model per name (`MODEL` is the root's).
pub fn catalog(models: &[(&str, &Arc<ScriptedModel>)]) -> Arc<StaticCatalog> {
    let mut catalog = StaticCatalog::new();
    for (name, model) in models {
        catalog.insert(
            ModelInfo {
                id: (*name).into(),
                provider: "scripted".into(),
                context_window: Some(200_000),
                traits: Default::default(),
            },
            Arc::clone(model) as Arc<dyn rein_core::model::ModelClient>,
        );
    }
    Arc::new(catalog)
}

/// A manager over `models` with sub-agents configured by `config` (nothing persisted).
pub fn manager(models: &[(&str, &Arc<ScriptedModel>)], config: AgentsConfig) -> Arc<ThreadManager> {
    ThreadManager::builder(catalog(models))
        .config(fast_config())
        .agents(config)
        .build_shared()
}

pub fn spawn(model: &str, message: &str) -> ScriptedReply {
    ScriptedReply::tool_call("spawn_agent", json!({"message": message, "model": model}))
}

pub fn wait(targets: &[&str]) -> ScriptedReply {
    ScriptedReply::tool_call(
        "wait_agent",
        json!({"targets": targets, "timeout_ms": 60_000}),
    )
}

/// The outputs of tool calls the model was sent, in order, parsed as JSON when they are.
pub fn tool_outputs(request: &ModelRequest) -> Vec<Value> {
    request
        .input
        .iter()
        .filter_map(|i| match i.as_ref() {
            Item::ToolOutput { output, .. } => {
                Some(serde_json::from_str(output).unwrap_or_else(|_| Value::String(output.clone())))
            }
            _ => None,
        })
        .collect()
}

/// The user messages the model was sent, in order.
pub fn offered(request: &ModelRequest) -> Vec<String> {
    request.tools.iter().map(|s| s.name.clone()).collect()
}

/// The next sub-agent spawned.
pub async fn next_child(created: &mut broadcast::Receiver<ThreadCreated>) -> ThreadCreated {
    loop {
        let c = created.recv().await.unwrap();
        if matches!(c.origin, ThreadOrigin::Spawned { .. }) {
            return c;
        }
    }
}

pub fn is_v4(id: rein_protocol::TurnId) -> bool {
    id.as_uuid().get_version_num() == 4
}

/// The next turn end, which must be a completion.
pub async fn completed(events: &mut EventStream) -> Arc<Event> {
    let end = events.wait_for(is_turn_end).await.unwrap();
    assert!(matches!(end.msg, EventMsg::TurnCompleted { .. }), "{end:?}");
    end
}
