//! The built-in demo: a scripted model with a short, streamed answer, so that a fresh
//! machine with no API key runs a real turn through the whole kernel.

use std::sync::Arc;

use rein_core::model::scripted::ScriptedModel;
use rein_core::model::{ModelInfo, StaticCatalog};
use rein_protocol::script::{Script, ScriptedReply, WhenExhausted};

pub const DEMO_MODEL: &str = "rein-demo";

fn answer(prompt: &str) -> String {
    format!(
        "You asked: \"{prompt}\". This answer was streamed by rein's built-in scripted model \
         through the whole kernel: a thread's submission loop routed your input, started a \
         turn, froze a step snapshot, sampled the model and folded every event into the \
         thread's state."
    )
}

pub fn catalog(prompt: &str) -> Arc<StaticCatalog> {
    let mut reply = ScriptedReply::text(answer(prompt)).with_deltas(12);
    reply.reasoning = Some("The user wants to see rein run a turn; answer plainly.".into());
    reply.delay_ms = 15;
    let model = ScriptedModel::new(Script {
        replies: vec![reply],
        when_exhausted: WhenExhausted::Echo,
    });
    Arc::new(StaticCatalog::new().with(
        ModelInfo {
            id: DEMO_MODEL.into(),
            provider: "scripted".into(),
            context_window: Some(128_000),
        },
        model,
    ))
}
