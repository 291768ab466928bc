//! The [`ModelCatalog`] built from a [`ModelConfig`]: one HTTP client per provider in use
//! (sharing one connection pool), the configured model and its fallback routed to their
//! providers, and any other model name served by the main provider — model servers accept
//! any name they host, so a `/model` switch needs no configuration.

use std::collections::BTreeMap;
use std::sync::Arc;

use rein_config::{ConfigError, Fallback, ModelConfig, ProviderInfo, WireApi};
use rein_core::model::{ModelCatalog, ModelClient, ModelInfo, RetryPolicy, UnknownModel};

use crate::http::{http_client, ApiKey, ChatClient, Endpoint, ResponsesClient};
use crate::known_models;

pub struct ProviderCatalog {
    main: Arc<dyn ModelClient>,
    main_provider: String,
    routes: BTreeMap<String, (ModelInfo, Arc<dyn ModelClient>)>,
    fallback: Option<Fallback>,
    multimodal: Option<Fallback>,
}

impl ProviderCatalog {
    /// Build the clients of the main and fallback providers. Fails when a provider in use
    /// lacks its API key, with an error that names the variable to set.
    pub fn from_config(
        config: &ModelConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let http = http_client().map_err(|e| ConfigError::HttpClient(Box::new(e)))?;
        let mut clients: BTreeMap<String, Arc<dyn ModelClient>> = BTreeMap::new();
        let mut client_for = |provider: &str| -> Result<Arc<dyn ModelClient>, ConfigError> {
            if let Some(c) = clients.get(provider) {
                return Ok(Arc::clone(c));
            }
            let info =
                config
                    .providers
                    .get(provider)
                    .ok_or_else(|| ConfigError::UnknownProvider {
                        id: provider.to_owned(),
                        known: config
                            .providers
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", "),
                        config_path: config.config_path.clone(),
                    })?;
            let endpoint = endpoint(info, env)?;
            let client: Arc<dyn ModelClient> = match info.wire_api {
                WireApi::Responses => Arc::new(ResponsesClient::new(http.clone(), endpoint)),
                WireApi::Chat => Arc::new(ChatClient::new(http.clone(), endpoint)),
            };
            clients.insert(provider.to_owned(), Arc::clone(&client));
            Ok(client)
        };
        let main = client_for(&config.provider)?;
        let info = |id: &str, provider: &str, context_window| ModelInfo {
            id: id.to_owned(),
            provider: provider.to_owned(),
            context_window,
            traits: known_models::traits(id, config.models.get(id)),
        };
        let mut routes = BTreeMap::new();
        routes.insert(
            config.model.clone(),
            (
                info(&config.model, &config.provider, config.context_window),
                Arc::clone(&main),
            ),
        );
        let seconds = [&config.fallback, &config.multimodal]
            .into_iter()
            .flatten()
            .map(|m| (m.model.clone(), m.provider.clone()));
        let extraction = config.memory.extract_model.clone();
        let judges = config
            .advisor
            .model
            .iter()
            .chain(&config.goal_evaluator)
            .cloned();
        for (model, provider) in seconds.chain(judges).chain(extraction) {
            let client = client_for(&provider)?;
            routes
                .entry(model.clone())
                .or_insert((info(&model, &provider, None), client));
        }
        // Models named only in `[models]` are served by the main provider, like any name.
        for model in config.models.keys() {
            routes
                .entry(model.clone())
                .or_insert((info(model, &config.provider, None), Arc::clone(&main)));
        }
        let catalog = Self {
            main,
            main_provider: config.provider.clone(),
            routes,
            fallback: config.fallback.clone(),
            multimodal: config.multimodal.clone(),
        };
        if let Some(effort) = &config.reasoning_effort {
            catalog.check_effort(&config.model, effort).map_err(|e| {
                ConfigError::UnsupportedEffort {
                    message: e.to_string(),
                    config_path: config.config_path.clone(),
                }
            })?;
        }
        Ok(catalog)
    }

    /// The model to reroute to once the main one has failed recoverably.
    pub fn fallback(&self) -> Option<&Fallback> {
        self.fallback.as_ref()
    }

    pub fn main_provider(&self) -> &str {
        &self.main_provider
    }
}

impl ModelCatalog for ProviderCatalog {
    fn client(&self, model: &str) -> Result<Arc<dyn ModelClient>, UnknownModel> {
        Ok(self
            .routes
            .get(model)
            .map_or_else(|| Arc::clone(&self.main), |(_, c)| Arc::clone(c)))
    }

    fn models(&self) -> Vec<ModelInfo> {
        self.routes.values().map(|(i, _)| i.clone()).collect()
    }

    fn multimodal_for(&self, model: &str) -> Option<String> {
        self.multimodal
            .as_ref()
            .filter(|m| m.model != model)
            .map(|m| m.model.clone())
    }

    fn fallback_for(&self, model: &str) -> Option<String> {
        self.fallback
            .as_ref()
            .filter(|fb| fb.model != model)
            .map(|fb| fb.model.clone())
    }
}

/// The endpoint to reach a provider, with its key read from the environment.
pub fn endpoint(
    info: &ProviderInfo,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Endpoint, ConfigError> {
    let api_key = match &info.env_key {
        None => None,
        Some(var) => match env(var).filter(|k| !k.trim().is_empty()) {
            Some(key) => Some(ApiKey::new(key.trim())),
            None => {
                return Err(ConfigError::MissingApiKey {
                    provider: info.id.clone(),
                    env_key: var.clone(),
                    instructions: info.env_key_instructions.clone(),
                })
            }
        },
    };
    let mut headers = info.http_headers.clone();
    for (name, var) in &info.env_http_headers {
        if let Some(value) = env(var).filter(|v| !v.trim().is_empty()) {
            let value = value.trim().to_owned();
            info.check_header(name, &value)?;
            headers.push((name.clone(), value));
        }
    }
    let retry = |max_retries| RetryPolicy {
        max_retries,
        ..RetryPolicy::default()
    };
    Ok(Endpoint {
        base_url: info.base_url.clone(),
        api_key,
        headers,
        query_params: info.query_params.clone(),
        stream_idle_timeout: info.stream_idle_timeout,
        request_retry: retry(info.request_max_retries),
        stream_retry: retry(info.stream_max_retries),
        thinking_off: info.thinking_off,
    })
}
