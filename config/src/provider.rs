//! Model providers: the built-ins (`openai`, `ollama`, `lmstudio`), how a
//! `[model_providers.<id>]` table refines or adds one. Turning a provider into an HTTP
//! endpoint (its API key looked up in the environment) is the providers crate's job.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::error::ConfigError;

/// How long a stream may stay silent before it is given up, unless the provider says.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Which HTTP API a provider speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireApi {
    #[default]
    Responses,
    Chat,
}

/// How a Chat Completions server is told not to think when the effort is `none`:
/// `enable_thinking: false` at the top of the body (DeepSeek, some vLLM builds), inside
/// `chat_template_kwargs` (Qwen on vLLM or SGLang, llama.cpp), both (the default: servers
/// ignore the key they do not know), or neither (the effort is sent as `reasoning_effort`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingOff {
    Flag,
    Template,
    #[default]
    Both,
    None,
}

impl ThinkingOff {
    pub fn flag(self) -> bool {
        matches!(self, ThinkingOff::Flag | ThinkingOff::Both)
    }

    pub fn template(self) -> bool {
        matches!(self, ThinkingOff::Template | ThinkingOff::Both)
    }
}

/// A `[model_providers.<id>]` table as written; every field refines a built-in of the
/// same id, or defines a new provider.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ProviderToml {
    pub name: Option<String>,
    pub base_url: Option<String>,
    pub wire_api: Option<WireApi>,
    pub env_key: Option<String>,
    /// Shown with a missing-key error, e.g. where to get a key.
    pub env_key_instructions: Option<String>,
    #[serde(default)]
    pub http_headers: BTreeMap<String, String>,
    /// Header name → environment variable holding its value (as Codex names it); a header
    /// whose variable is unset or empty is not sent.
    #[serde(default)]
    pub env_http_headers: BTreeMap<String, String>,
    #[serde(default)]
    pub query_params: BTreeMap<String, String>,
    pub request_max_retries: Option<u32>,
    pub stream_max_retries: Option<u32>,
    pub stream_idle_timeout_ms: Option<u64>,
    /// Chat Completions only: how effort `none` is sent (see [`ThinkingOff`]).
    pub thinking_off: Option<ThinkingOff>,
}

/// Retry counts above this are configuration mistakes, not intentions.
const MAX_RETRIES: u32 = 100;

/// A resolved provider.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderInfo {
    pub id: String,
    pub name: String,
    pub base_url: String,
    pub wire_api: WireApi,
    /// The environment variable holding the API key; `None` for servers that need none.
    pub env_key: Option<String>,
    pub env_key_instructions: Option<String>,
    pub http_headers: Vec<(String, String)>,
    /// Headers whose values are read from the environment when the endpoint is made.
    pub env_http_headers: Vec<(String, String)>,
    pub query_params: Vec<(String, String)>,
    pub request_max_retries: u32,
    pub stream_max_retries: u32,
    pub stream_idle_timeout: Duration,
    pub thinking_off: ThinkingOff,
}

impl ProviderInfo {
    fn new(id: &str, name: &str, base_url: &str, wire_api: WireApi) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            base_url: base_url.into(),
            wire_api,
            env_key: None,
            env_key_instructions: None,
            http_headers: Vec::new(),
            env_http_headers: Vec::new(),
            query_params: Vec::new(),
            request_max_retries: 4,
            stream_max_retries: 5,
            stream_idle_timeout: DEFAULT_STREAM_IDLE_TIMEOUT,
            thinking_off: ThinkingOff::default(),
        }
    }

    /// The providers rein knows without configuration. `OPENAI_BASE_URL` moves the
    /// `openai` one (e.g. to a proxy).
    pub fn built_ins(env: &dyn Fn(&str) -> Option<String>) -> BTreeMap<String, ProviderInfo> {
        let mut openai = ProviderInfo::new(
            "openai",
            "OpenAI",
            "https://api.openai.com/v1",
            WireApi::Responses,
        );
        if let Some(url) = env("OPENAI_BASE_URL").filter(|u| !u.trim().is_empty()) {
            openai.base_url = url;
        }
        openai.env_key = Some("OPENAI_API_KEY".into());
        openai.env_key_instructions =
            Some("create a key at https://platform.openai.com/api-keys".into());
        let ollama = ProviderInfo::new(
            "ollama",
            "Ollama",
            "http://127.0.0.1:11434/v1",
            WireApi::Chat,
        );
        let lmstudio = ProviderInfo::new(
            "lmstudio",
            "LM Studio",
            "http://127.0.0.1:1234/v1",
            WireApi::Chat,
        );
        [openai, ollama, lmstudio]
            .into_iter()
            .map(|p| (p.id.clone(), p))
            .collect()
    }

    /// A provider from its table, on top of the built-in of the same id if there is one.
    pub fn from_toml(
        id: &str,
        base: Option<&ProviderInfo>,
        t: &ProviderToml,
    ) -> Result<Self, ConfigError> {
        let mut p = match base {
            Some(b) => b.clone(),
            None => {
                let url = t
                    .base_url
                    .as_deref()
                    .ok_or_else(|| ConfigError::MissingBaseUrl {
                        provider: id.into(),
                    })?;
                ProviderInfo::new(id, id, url, WireApi::default())
            }
        };
        if let Some(v) = &t.name {
            p.name.clone_from(v);
        }
        if let Some(v) = &t.base_url {
            p.base_url.clone_from(v);
        }
        if let Some(v) = t.wire_api {
            p.wire_api = v;
        }
        if let Some(v) = &t.env_key {
            p.env_key = Some(v.clone()).filter(|k| !k.is_empty());
        }
        if let Some(v) = &t.env_key_instructions {
            p.env_key_instructions = Some(v.clone());
        }
        p.http_headers
            .extend(t.http_headers.iter().map(|(k, v)| (k.clone(), v.clone())));
        p.env_http_headers.extend(
            t.env_http_headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        p.query_params
            .extend(t.query_params.iter().map(|(k, v)| (k.clone(), v.clone())));
        if let Some(v) = t.request_max_retries {
            p.request_max_retries = v.min(MAX_RETRIES);
        }
        if let Some(v) = t.stream_max_retries {
            p.stream_max_retries = v.min(MAX_RETRIES);
        }
        if let Some(v) = t.stream_idle_timeout_ms {
            p.stream_idle_timeout = Duration::from_millis(v);
        }
        if let Some(v) = t.thinking_off {
            p.thinking_off = v;
        }
        p.validate()?;
        Ok(p)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let bad_url = |reason: String| ConfigError::InvalidBaseUrl {
            provider: self.id.clone(),
            url: self.base_url.clone(),
            reason,
        };
        let url = url::Url::parse(&self.base_url).map_err(|e| bad_url(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad_url("the scheme must be http or https".into()));
        }
        for (name, value) in &self.http_headers {
            self.check_header(name, value)?;
        }
        for (name, _) in &self.env_http_headers {
            self.check_header(name, "")?;
        }
        Ok(())
    }

    /// Whether `name: value` can be sent as an HTTP header of this provider.
    pub fn check_header(&self, name: &str, value: &str) -> Result<(), ConfigError> {
        let ok = http::HeaderName::from_bytes(name.as_bytes()).is_ok()
            && http::HeaderValue::from_str(value).is_ok();
        if ok {
            Ok(())
        } else {
            Err(ConfigError::InvalidHeader {
                provider: self.id.clone(),
                name: name.to_owned(),
            })
        }
    }
}
