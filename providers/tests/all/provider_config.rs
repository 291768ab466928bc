//! From configuration text to a working client: a `ProviderCatalog` built from
//! config.toml reaches the mock model server with the key from the (injected)
//! environment, and routes the fallback model to its own provider.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::Path;

use futures::StreamExt;
use rein_config::{resolve, LoadOptions};
use rein_core::model::{ModelCatalog, ModelEvent, ModelRequest};
use rein_mock_model::serve;
use rein_protocol::script::{Script, ScriptedReply, WhenExhausted};
use rein_protocol::Item;
use rein_providers::catalog::ProviderCatalog;

fn request(model: &str) -> ModelRequest {
    ModelRequest {
        model: model.into(),
        instructions: String::new(),
        input: vec![std::sync::Arc::new(Item::user_text("hi"))],
        tools: std::sync::Arc::from(Vec::new()),
        parallel_tool_calls: false,
        reasoning_effort: None,
        prompt_cache_key: "t".into(),
        output_schema: None,
    }
}

#[tokio::test]
async fn configured_providers_reach_their_servers_with_their_keys() {
    let script = |text: &str| Script {
        replies: vec![ScriptedReply::text(text)],
        when_exhausted: WhenExhausted::RepeatLast,
        asides: Vec::new(),
    };
    let local = serve(script("from local"), "127.0.0.1:0".parse().unwrap(), None)
        .await
        .unwrap();
    let remote = serve(script("from remote"), "127.0.0.1:0".parse().unwrap(), None)
        .await
        .unwrap();
    let text = format!(
        r#"
profile = "dev"

[model_providers.local]
base_url = "{}"
wire_api = "chat"

[model_providers.remote]
base_url = "{}"
env_key = "REMOTE_KEY"
http_headers = {{ "X-Client" = "rein-test" }}

[profiles.dev]
model = "small"
model_provider = "local"
fallback_model = "big"
fallback_provider = "remote"
"#,
        local.base_url(),
        remote.base_url()
    );
    let env: HashMap<&str, &str> = [("REMOTE_KEY", "sk-remote-7")].into_iter().collect();
    let env = move |k: &str| env.get(k).map(|v| (*v).to_owned());
    let config = resolve(
        &text,
        Path::new("config.toml"),
        &LoadOptions::default(),
        &env,
    )
    .unwrap();
    let catalog = ProviderCatalog::from_config(&config, &env).unwrap();

    let small: Vec<_> = catalog
        .client("small")
        .unwrap()
        .stream(request("small"))
        .collect()
        .await;
    assert_eq!(small[0], Ok(ModelEvent::TextDelta("from local".into())));
    let big: Vec<_> = catalog
        .client("big")
        .unwrap()
        .stream(request("big"))
        .collect()
        .await;
    assert_eq!(big[0], Ok(ModelEvent::TextDelta("from remote".into())));

    let local_seen = local.requests().remove(0);
    assert_eq!(local_seen.path, "/v1/chat/completions");
    assert_eq!(local_seen.header("authorization"), None);
    let remote_seen = remote.requests().remove(0);
    assert_eq!(remote_seen.path, "/v1/responses");
    assert_eq!(
        remote_seen.header("authorization"),
        Some("Bearer sk-remote-7")
    );
    assert_eq!(remote_seen.header("x-client"), Some("rein-test"));
    assert_eq!(remote_seen.body["model"], "big");
}
