//! From resolved configuration to endpoints and a catalog: keys and environment headers
//! come from the (injected) environment and stay out of logs, a provider in use without
//! its key is refused with the variable to set, and models route to their providers.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use pretty_assertions::assert_eq;
use rein_config::{resolve, ConfigError, LoadOptions, ModelConfig};
use rein_core::model::ModelCatalog;
use rein_providers::{endpoint, ProviderCatalog};

const FILE: &str = r#"
model = "gpt-5"
model_provider = "openai"

[model_providers.vllm]
base_url = "http://127.0.0.1:8000/v1"
wire_api = "chat"
env_key = "VLLM_KEY"
http_headers = { "X-Team" = "core" }
env_http_headers = { "OpenAI-Organization" = "VLLM_ORG", "X-Unset" = "NOT_SET" }
request_max_retries = 2
stream_max_retries = 7
stream_idle_timeout_ms = 1500

[model_providers.ollama]
base_url = "http://10.0.0.5:11434/v1"

[profiles.local]
model = "qwen3-coder"
model_provider = "ollama"
fallback_model = "gpt-5-mini"
fallback_provider = "openai"
"#;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k| map.get(k).cloned()
}

fn config(text: &str, profile: Option<&str>) -> ModelConfig {
    let options = LoadOptions {
        profile: profile.map(str::to_owned),
        ..LoadOptions::default()
    };
    resolve(text, Path::new("config.toml"), &options, &env_of(&[])).unwrap()
}

#[test]
fn an_endpoint_takes_its_key_and_headers_from_the_environment() {
    let c = config(FILE, None);
    let endpoint = endpoint(
        &c.providers["vllm"],
        &env_of(&[("VLLM_KEY", "k"), ("VLLM_ORG", "org-1")]),
    )
    .unwrap();
    assert_eq!(
        endpoint.headers,
        vec![
            ("X-Team".into(), "core".into()),
            ("OpenAI-Organization".into(), "org-1".into())
        ],
        "a header whose variable is unset is not sent"
    );
    assert!(
        !format!("{endpoint:?}").contains("org-1"),
        "header values from the environment stay out of logs"
    );
    assert_eq!(endpoint.request_retry.max_retries, 2);
    assert_eq!(endpoint.stream_retry.max_retries, 7);
    assert_eq!(endpoint.retry_policy().max_retries, 7);
    assert_eq!(endpoint.stream_idle_timeout, Duration::from_millis(1500));
}

#[test]
fn missing_api_key_names_the_variable() {
    let c = config("", None);
    let err = ProviderCatalog::from_config(&c, &env_of(&[]))
        .err()
        .unwrap();
    assert!(
        err.to_string().starts_with(
            "the model provider `openai` needs an API key: set the environment variable OPENAI_API_KEY"
        ),
        "{err}"
    );
    let err = ProviderCatalog::from_config(&c, &env_of(&[("OPENAI_API_KEY", "  ")]))
        .err()
        .unwrap();
    assert!(matches!(err, ConfigError::MissingApiKey { .. }));
}

#[test]
fn catalog_routes_models_to_their_providers() {
    let c = config(FILE, Some("local"));
    // The main provider (ollama) needs no key, the fallback (openai) does.
    assert!(matches!(
        ProviderCatalog::from_config(&c, &env_of(&[])),
        Err(ConfigError::MissingApiKey { .. })
    ));
    let catalog = ProviderCatalog::from_config(&c, &env_of(&[("OPENAI_API_KEY", "sk-1")])).unwrap();
    let models = catalog.models();
    assert_eq!(
        models
            .iter()
            .map(|m| (m.id.as_str(), m.provider.as_str()))
            .collect::<Vec<_>>(),
        vec![("gpt-5-mini", "openai"), ("qwen3-coder", "ollama")]
    );
    assert_eq!(
        catalog.fallback().map(|f| f.model.as_str()),
        Some("gpt-5-mini")
    );
    assert!(catalog.client("any-other-model").is_ok());
    let debug = format!("{c:?}");
    assert!(!debug.contains("sk-1"));
}
