//! One HTTP model client for every wire API. A [`WireFormat`] says where to POST, how a
//! request becomes a body and how the streamed reply is read; the client does the rest
//! (endpoint, headers, key, idle timeout, retry policy).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::StreamExt;

use super::stream::{sse_stream, WireDecoder};
use super::Endpoint;
use rein_core::model::{ModelClient, ModelError, ModelRequest, ModelStream, RetryPolicy};

/// What differs between the Responses and the Chat Completions APIs.
pub trait WireFormat: Send + Sync + 'static {
    /// The path under the provider's base URL.
    const PATH: &'static str;
    type Decoder: WireDecoder;

    /// The body of `request` to `endpoint` (whose settings may shape it).
    fn request_body(request: &ModelRequest, endpoint: &Endpoint) -> Result<Vec<u8>, ModelError>;
    fn decoder() -> Self::Decoder;
}

/// A client for one model server speaking `W`.
pub struct HttpModelClient<W> {
    http: reqwest::Client,
    endpoint: Arc<Endpoint>,
    wire: PhantomData<fn() -> W>,
}

impl<W> Clone for HttpModelClient<W> {
    fn clone(&self) -> Self {
        Self {
            http: self.http.clone(),
            endpoint: Arc::clone(&self.endpoint),
            wire: PhantomData,
        }
    }
}

impl<W> fmt::Debug for HttpModelClient<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpModelClient")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl<W: WireFormat> HttpModelClient<W> {
    pub fn new(http: reqwest::Client, endpoint: Endpoint) -> Self {
        Self {
            http,
            endpoint: Arc::new(endpoint),
            wire: PhantomData,
        }
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }
}

impl<W: WireFormat> ModelClient for HttpModelClient<W> {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let body = match W::request_body(&request, &self.endpoint) {
            Ok(body) => body,
            Err(e) => return futures::stream::once(async move { Err(e) }).boxed(),
        };
        let builder = self.endpoint.post(&self.http, W::PATH, body);
        sse_stream(builder, W::decoder(), self.endpoint.stream_idle_timeout)
    }

    fn retry_policy(&self) -> RetryPolicy {
        self.endpoint.retry_policy()
    }
}
