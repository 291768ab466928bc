//! The whole kernel against real model servers on 127.0.0.1 (rein-mock-model): the
//! kernel's retry loop after a cut stream, and its fallback to another provider.
#![allow(clippy::unwrap_used)]

// The kernel's test helpers (settings, fast config), shared rather than copied.
use rein_test_support::kernel as support;

use std::path::Path;
use std::sync::Arc;

use rein_config::{resolve, LoadOptions};
use rein_core::{ThreadManager, ThreadOptions};
use rein_mock_model::{serve, MockServer};
use rein_protocol::script::{Fault, Script, ScriptedReply, WhenExhausted};
use rein_protocol::{EventMsg, Item, Op};
use rein_providers::catalog::ProviderCatalog;
use support::*;

async fn server(replies: Vec<ScriptedReply>) -> MockServer {
    let script = Script {
        replies,
        when_exhausted: WhenExhausted::RepeatLast,
        asides: Vec::new(),
    };
    serve(script, "127.0.0.1:0".parse().unwrap(), None)
        .await
        .unwrap()
}

fn manager_for(config_text: &str) -> ThreadManager {
    let env = |_: &str| None;
    let config = resolve(
        config_text,
        Path::new("config.toml"),
        &LoadOptions::default(),
        &env,
    )
    .unwrap();
    let catalog = ProviderCatalog::from_config(&config, &env).unwrap();
    ThreadManager::builder(Arc::new(catalog))
        .config(fast_config())
        .build()
}

fn thread_settings(model: &str) -> rein_protocol::ThreadSettings {
    rein_protocol::ThreadSettings {
        model: model.into(),
        ..settings()
    }
}

#[tokio::test]
async fn a_cut_http_stream_is_retried_and_leaves_no_duplicate_items() {
    let main = server(vec![
        ScriptedReply::text("abcdefgh")
            .with_deltas(4)
            .with_fault(Fault::CutAfter { events: 3 }),
        ScriptedReply::text("complete answer").with_deltas(2),
    ])
    .await;
    let m = manager_for(&format!(
        r#"
model = "m"
model_provider = "main"
[model_providers.main]
base_url = "{}"
wire_api = "responses"
request_max_retries = 2
stream_max_retries = 2
"#,
        main.base_url()
    ));
    let mut t = m
        .create_thread(ThreadOptions::new(thread_settings("m")))
        .unwrap();
    t.handle.submit(Op::user_text("hi")).await.unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    assert!(events
        .iter()
        .any(|e| matches!(e.msg, EventMsg::StreamRetry { attempt: 1, .. })));
    assert_eq!(
        events.last().unwrap().msg,
        EventMsg::TurnCompleted {
            last_agent_message: Some("complete answer".into())
        }
    );
    let state = t.handle.state().await.unwrap();
    let agent: Vec<_> = state
        .history
        .iter()
        .filter(|i| matches!(i.as_ref(), Item::AgentMessage { .. }))
        .collect();
    assert_eq!(agent.len(), 1, "the cut attempt left nothing in history");
    let bodies = main.requests();
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        bodies[0].body, bodies[1].body,
        "the retry sent the same request"
    );
}

#[tokio::test]
async fn an_unavailable_provider_falls_back_to_another_server_once() {
    let down = server(vec![ScriptedReply::default().with_fault(
        Fault::HttpError {
            status: 503,
            message: None,
        },
    )])
    .await;
    let backup = server(vec![ScriptedReply::text("backup says hi")]).await;
    let m = manager_for(&format!(
        r#"
profile = "p"
[model_providers.down]
base_url = "{}"
wire_api = "responses"
request_max_retries = 1
stream_max_retries = 1
[model_providers.backup]
base_url = "{}"
wire_api = "chat"
[profiles.p]
model = "main-model"
model_provider = "down"
fallback_model = "backup-model"
fallback_provider = "backup"
"#,
        down.base_url(),
        backup.base_url()
    ));
    let mut t = m
        .create_thread(ThreadOptions::new(thread_settings("main-model")))
        .unwrap();
    t.handle.submit(Op::user_text("hi")).await.unwrap();
    let events = t.events.collect_until(is_turn_end).await;
    let reroutes = events
        .iter()
        .filter(|e| matches!(e.msg, EventMsg::ModelRerouted { .. }))
        .count();
    assert_eq!(reroutes, 1);
    assert_eq!(
        events.last().unwrap().msg,
        EventMsg::TurnCompleted {
            last_agent_message: Some("backup says hi".into())
        }
    );
    assert_eq!(down.requests().len(), 2, "one try plus one retry");
    assert_eq!(backup.requests().len(), 1);
    let body = &backup.requests()[0].body;
    assert_eq!(body["model"], "backup-model");
}

#[tokio::test]
async fn encrypted_reasoning_goes_back_to_the_model_on_the_next_request() {
    let mut first = ScriptedReply::text("first answer");
    first.reasoning = Some("planning".into());
    let main = server(vec![first, ScriptedReply::text("second answer")]).await;
    let m = manager_for(&format!(
        "model = \"m\"\nmodel_provider = \"main\"\n[model_providers.main]\nbase_url = \"{}\"\nwire_api = \"responses\"\n",
        main.base_url()
    ));
    let mut settings = thread_settings("m");
    settings.reasoning_effort = Some(rein_protocol::ReasoningEffort::LOW);
    let mut t = m.create_thread(ThreadOptions::new(settings)).unwrap();
    for text in ["one", "two"] {
        t.handle.submit(Op::user_text(text)).await.unwrap();
        let end = t.events.wait_for(is_turn_end).await.unwrap();
        assert!(matches!(end.msg, EventMsg::TurnCompleted { .. }));
    }
    // The item kept in history (and so in the rollout) carries the blob.
    let state = t.handle.state().await.unwrap();
    let kept: Vec<Option<&str>> = state
        .history
        .iter()
        .filter_map(|i| match i.as_ref() {
            Item::Reasoning {
                encrypted_content, ..
            } => Some(encrypted_content.as_deref()),
            _ => None,
        })
        .collect();
    assert_eq!(kept, vec![Some("enc:rs_resp_mock_0_0")]);
    let bodies = main.requests();
    assert_eq!(
        bodies[0].body["include"],
        serde_json::json!(["reasoning.encrypted_content"])
    );
    let input = bodies[1].body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input
        .iter()
        .map(|i| i["type"].as_str().unwrap_or("message"))
        .collect();
    assert_eq!(kinds, vec!["message", "reasoning", "message", "message"]);
    assert_eq!(
        input[1],
        serde_json::json!({
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "planning"}],
            "encrypted_content": "enc:rs_resp_mock_0_0"
        })
    );
}
