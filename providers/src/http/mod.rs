//! Model clients that talk to real model servers over HTTP: OpenAI's Responses API
//! ([`ResponsesClient`]) and the Chat Completions API that Ollama, vLLM, llama.cpp,
//! LM Studio and OpenRouter speak ([`ChatClient`]). Both stream Server-Sent Events
//! ([`sse`]) through one driver ([`stream`]) that owns timeouts and error mapping, so the
//! two wire formats differ only in how a request body is built and an event is decoded.
//!
//! Architecture invariant: a client sends one request per `ModelClient::stream` call and
//! never retries; the kernel retries with the client's [`RetryPolicy`].

pub mod chat;
mod chat_request;
pub mod client;
pub mod errors;
pub mod responses;
pub mod sse;
pub mod stream;

use std::fmt;
use std::time::Duration;

pub use chat::ChatClient;
pub use responses::ResponsesClient;

use rein_core::model::RetryPolicy;

/// A secret that never shows in `Debug` or `Display` output, so logging a client, a
/// config or an error cannot leak it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the one place that puts it on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Where and how to reach one model server. Its `Debug` shows header and parameter names
/// but not their values, which may be credentials too (e.g. an `api-key` header).
#[derive(Clone, PartialEq)]
pub struct Endpoint {
    /// Up to and including the API version, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>` when present.
    pub api_key: Option<ApiKey>,
    /// Extra headers sent with every request, in this order.
    pub headers: Vec<(String, String)>,
    /// Extra query parameters appended to every request URL, in this order.
    pub query_params: Vec<(String, String)>,
    /// How long the stream may stay silent (headers included) before it is given up.
    pub stream_idle_timeout: Duration,
    /// Retries of a request that failed before streaming (connect errors, 5xx, 429).
    pub request_retry: RetryPolicy,
    /// Retries of a stream that broke after it started (cut, idle timeout).
    pub stream_retry: RetryPolicy,
    /// Chat Completions: how effort `none` is sent.
    pub thinking_off: rein_config::ThinkingOff,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |pairs: &[(String, String)]| -> Vec<String> {
            pairs.iter().map(|(k, _)| k.clone()).collect()
        };
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("headers", &names(&self.headers))
            .field("query_params", &names(&self.query_params))
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("request_retry", &self.request_retry)
            .field("stream_retry", &self.stream_retry)
            .finish()
    }
}

impl Endpoint {
    pub const DEFAULT_IDLE_TIMEOUT: Duration = rein_config::provider::DEFAULT_STREAM_IDLE_TIMEOUT;

    /// An endpoint with no key, no extras and the default timeouts and retries.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            headers: Vec::new(),
            query_params: Vec::new(),
            stream_idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            request_retry: RetryPolicy::default(),
            stream_retry: RetryPolicy {
                max_retries: 5,
                ..RetryPolicy::default()
            },
            thinking_off: rein_config::ThinkingOff::default(),
        }
    }

    pub fn with_api_key(mut self, key: ApiKey) -> Self {
        self.api_key = Some(key);
        self
    }

    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.stream_idle_timeout = timeout;
        self
    }

    /// The kernel retries every retryable failure with one policy; the larger of the two
    /// budgets is the honest one, since a stream failure also starts a new request.
    pub fn retry_policy(&self) -> RetryPolicy {
        if self.stream_retry.max_retries > self.request_retry.max_retries {
            self.stream_retry
        } else {
            self.request_retry
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base_url.trim_end_matches('/'), path)
    }

    /// A streaming POST of `body` to `path` with the key, extra headers and parameters.
    pub(crate) fn post(
        &self,
        http: &reqwest::Client,
        path: &str,
        body: Vec<u8>,
    ) -> reqwest::RequestBuilder {
        let mut builder = http
            .post(self.url(path))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream");
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key.expose());
        }
        for (name, value) in &self.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        if !self.query_params.is_empty() {
            builder = builder.query(&self.query_params);
        }
        builder.body(body)
    }
}

/// The HTTP client shared by every request of a provider (connection pool, TLS config).
/// Building one only fails if the TLS backend cannot initialise.
pub fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_is_redacted_in_debug() {
        let mut endpoint = Endpoint::new("http://x").with_api_key(ApiKey::new("sk-secret-123"));
        endpoint
            .headers
            .push(("api-key".into(), "hdr-secret".into()));
        let shown = format!("{endpoint:?}");
        assert!(!shown.contains("sk-secret-123"), "{shown}");
        assert!(!shown.contains("hdr-secret"), "{shown}");
        assert!(shown.contains("redacted") && shown.contains("api-key"));
    }

    #[test]
    fn url_joins_without_double_slash() {
        assert_eq!(
            Endpoint::new("http://h/v1/").url("responses"),
            "http://h/v1/responses"
        );
    }
}
