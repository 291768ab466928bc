//! The model as an inference engine: the [`ModelClient`] trait the kernel streams from,
//! the request it sends and the events it reads back, and the [`ModelCatalog`] that
//! resolves a model name to a client. Real providers (HTTP) are the `rein-providers`
//! crate; the scripted model ([`scripted`]) is here for tests and the demo.
//!
//! Architecture invariant: a client only turns a [`ModelRequest`] into a stream. Retries,
//! history and events are the kernel's (see `turn/step.rs`), so every provider behaves
//! the same under faults.

pub mod fingerprint;
pub mod scripted;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use rein_protocol::{ErrorCode, Item, ReasoningEffort, TokenUsage};
use serde::{Deserialize, Serialize};

use crate::tools::ToolSpec;

/// Everything one sampling request sends. Built from the Step snapshot and the history,
/// so a resumed thread builds exactly the request the original would have.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelRequest {
    pub model: String,
    pub instructions: String,
    pub input: Vec<Arc<Item>>,
    pub tools: Arc<[ToolSpec]>,
    pub parallel_tool_calls: bool,
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Stable per thread, so a provider's prompt cache hits across turns.
    pub prompt_cache_key: String,
    /// JSON Schema the final answer must follow (structured output), if the turn asked.
    pub output_schema: Option<Arc<serde_json::Value>>,
}

impl ModelRequest {
    /// The text of the last user message in the input, if any.
    pub fn last_user_text(&self) -> Option<String> {
        self.input
            .iter()
            .rev()
            .find_map(|item| match item.as_ref() {
                Item::UserMessage { .. } => item.message_text(),
                _ => None,
            })
    }
}

/// One event of a streamed reply.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelEvent {
    TextDelta(String),
    ReasoningDelta(String),
    /// A reasoning item's encrypted content (Responses API with `store: false`): opaque,
    /// sent back with the reasoning item so the model keeps its chain of thought.
    ReasoningEncrypted(String),
    /// A complete function call (providers that stream arguments assemble them first).
    ToolCall {
        call_id: String,
        name: String,
        arguments: String,
    },
    /// The reply is complete. Nothing follows.
    Completed {
        usage: TokenUsage,
    },
}

pub type ModelStream = BoxStream<'static, Result<ModelEvent, ModelError>>;

/// A failed sampling request, classified so the kernel knows whether to retry.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("could not connect to the model server: {0}")]
    Connect(String),
    #[error("model server error (HTTP {status}): {message}")]
    Server { status: u16, message: String },
    #[error("rate limited: {message}")]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    #[error("the stream ended before the reply completed")]
    StreamCut,
    #[error("no data from the model server for {0:?}")]
    IdleTimeout(Duration),
    #[error("the model server rejected the request (HTTP {status}): {message}")]
    BadRequest { status: u16, message: String },
    #[error("not authorized (HTTP {status}): {message}")]
    Unauthorized { status: u16, message: String },
    #[error("context window exceeded: {0}")]
    ContextWindowExceeded(String),
}

impl ModelError {
    /// Whether sending the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ModelError::Connect(_)
                | ModelError::Server { .. }
                | ModelError::RateLimited { .. }
                | ModelError::StreamCut
                | ModelError::IdleTimeout(_)
        )
    }

    /// How long the server asked us to wait, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            ModelError::Connect(_) | ModelError::Server { .. } => ErrorCode::ModelUnavailable,
            ModelError::RateLimited { .. } => ErrorCode::RateLimited,
            ModelError::StreamCut | ModelError::IdleTimeout(_) => ErrorCode::StreamInterrupted,
            ModelError::BadRequest { .. } => ErrorCode::ModelBadRequest,
            ModelError::Unauthorized { .. } => ErrorCode::Unauthorized,
            ModelError::ContextWindowExceeded(_) => ErrorCode::ContextWindowExceeded,
        }
    }
}

/// How often and how patiently the kernel retries a client's retryable failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 4,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    pub const NONE: RetryPolicy = RetryPolicy {
        max_retries: 0,
        base_delay: Duration::ZERO,
        max_delay: Duration::ZERO,
    };

    /// Exponential backoff with jitter for the `attempt`-th retry (1-based); a server's
    /// `Retry-After` wins when it is given.
    pub fn delay(&self, attempt: u32, server_hint: Option<Duration>) -> Duration {
        if let Some(hint) = server_hint {
            return hint.min(self.max_delay.max(hint));
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let capped = exp.min(self.max_delay);
        // Jitter in [50%, 100%] without a random-number crate: the clock's low bits vary
        // enough between retries to spread clients apart.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let factor = 0.5 + f64::from(nanos % 1000) / 2000.0;
        capped.mul_f64(factor)
    }
}

/// A model server the kernel can sample from.
pub trait ModelClient: Send + Sync + 'static {
    /// Start one sampling request. The stream ends after `Completed` or an error; dropping
    /// it cancels the request (an HTTP client closes the connection).
    fn stream(&self, request: ModelRequest) -> ModelStream;

    fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy::default()
    }
}

/// What a model picker shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub id: String,
    pub provider: String,
    pub context_window: Option<u64>,
    #[serde(default)]
    pub traits: ModelTraits,
}

/// What is known of a model's abilities; `None`: not known (anything is tried).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelTraits {
    /// The reasoning efforts it accepts, in the order a picker shows them.
    pub efforts: Option<Vec<ReasoningEffort>>,
    /// Whether it reads images.
    pub images: Option<bool>,
}

/// An effort the model's catalog entry does not list.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("model `{model}` does not support reasoning effort `{effort}` (it supports: {allowed})")]
pub struct UnsupportedEffort {
    pub model: String,
    pub effort: ReasoningEffort,
    pub allowed: String,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown model `{model}` (known: {known})")]
pub struct UnknownModel {
    pub model: String,
    pub known: String,
}

/// Resolves a model name to the client that serves it.
pub trait ModelCatalog: Send + Sync + 'static {
    fn client(&self, model: &str) -> Result<Arc<dyn ModelClient>, UnknownModel>;
    fn models(&self) -> Vec<ModelInfo>;

    /// The model to reroute to once `model` has failed recoverably and exhausted its
    /// retries. Bad requests and tool errors never fall back.
    fn fallback_for(&self, _model: &str) -> Option<String> {
        None
    }

    /// What is known of `model`.
    fn traits(&self, model: &str) -> ModelTraits {
        self.models()
            .into_iter()
            .find(|m| m.id == model)
            .map(|m| m.traits)
            .unwrap_or_default()
    }

    /// Whether `model` accepts `effort`: any non-empty effort unless the catalog lists
    /// the model's efforts.
    fn check_effort(&self, model: &str, effort: &ReasoningEffort) -> Result<(), UnsupportedEffort> {
        match self.traits(model).efforts {
            Some(allowed) if !allowed.contains(effort) => Err(UnsupportedEffort {
                model: model.to_owned(),
                effort: effort.clone(),
                allowed: allowed
                    .iter()
                    .map(ReasoningEffort::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
            _ => Ok(()),
        }
    }

    /// The model a request carrying images goes to when `model` is not known to read
    /// them (`multimodal_model` in the configuration).
    fn multimodal_for(&self, _model: &str) -> Option<String> {
        None
    }

    /// The model's context window in tokens, when known.
    fn context_window(&self, model: &str) -> Option<u64> {
        self.models()
            .into_iter()
            .find(|m| m.id == model)
            .and_then(|m| m.context_window)
    }
}

/// A fixed set of named models.
#[derive(Default, Clone)]
pub struct StaticCatalog {
    entries: BTreeMap<String, (ModelInfo, Arc<dyn ModelClient>)>,
    fallbacks: BTreeMap<String, String>,
}

impl StaticCatalog {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with(mut self, info: ModelInfo, client: Arc<dyn ModelClient>) -> Self {
        self.entries.insert(info.id.clone(), (info, client));
        self
    }

    pub fn insert(&mut self, info: ModelInfo, client: Arc<dyn ModelClient>) {
        self.entries.insert(info.id.clone(), (info, client));
    }

    /// Reroute `model` to `fallback` after recoverable failures.
    pub fn with_fallback(mut self, model: &str, fallback: &str) -> Self {
        self.fallbacks.insert(model.to_owned(), fallback.to_owned());
        self
    }
}

impl ModelCatalog for StaticCatalog {
    fn client(&self, model: &str) -> Result<Arc<dyn ModelClient>, UnknownModel> {
        self.entries
            .get(model)
            .map(|(_, c)| Arc::clone(c))
            .ok_or_else(|| UnknownModel {
                model: model.to_owned(),
                known: self.entries.keys().cloned().collect::<Vec<_>>().join(", "),
            })
    }

    fn models(&self) -> Vec<ModelInfo> {
        self.entries.values().map(|(i, _)| i.clone()).collect()
    }

    fn fallback_for(&self, model: &str) -> Option<String> {
        self.fallbacks.get(model).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let p = RetryPolicy {
            max_retries: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        };
        let d1 = p.delay(1, None);
        let d5 = p.delay(5, None);
        assert!(d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100));
        assert!(d5 >= Duration::from_millis(500) && d5 <= Duration::from_millis(1000));
    }

    #[test]
    fn server_hint_wins() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
    }

    #[test]
    fn only_transient_errors_are_retryable() {
        assert!(ModelError::StreamCut.is_retryable());
        assert!(ModelError::Server {
            status: 503,
            message: String::new()
        }
        .is_retryable());
        assert!(!ModelError::BadRequest {
            status: 400,
            message: String::new()
        }
        .is_retryable());
        assert!(!ModelError::ContextWindowExceeded(String::new()).is_retryable());
    }
}
