//! rmcp's streamable-HTTP client contract ([`StreamableHttpClient`]) over the workspace's
//! reqwest: rmcp ships an implementation only for a newer reqwest, whose default TLS stack
//! would bring a second crypto library and the platform's certificate store into the tree;
//! this keeps one reqwest (and one TLS configuration) for model providers and MCP servers.
//!
//! What a response means (202 accepted, JSON or an event stream, 404 for an expired
//! session, an authentication challenge, a JSON-RPC error in a failed response) follows
//! the MCP specification's "Streamable HTTP" transport; bodies are read within the limits
//! rmcp passes in, so a hostile server cannot make rein buffer without end.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::stream::{BoxStream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, RETRY_AFTER};
use reqwest::{RequestBuilder, Response, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::ClientInitializeError;
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, SseError, StreamableHttpClient,
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};

use crate::launch::Env;

type Error = StreamableHttpError<reqwest::Error>;
type SseEvents = BoxStream<'static, Result<Sse, SseError>>;

/// A reqwest client speaking MCP's streamable HTTP.
#[derive(Clone, Debug)]
pub struct HttpClient(reqwest::Client);

impl HttpClient {
    pub fn new() -> Result<Self, reqwest::Error> {
        // A redirect is followed only within the server's origin: the configured headers
        // (and the token) are for that server, and reqwest would carry custom headers to
        // any host a redirect names.
        let policy = reqwest::redirect::Policy::custom(|attempt| {
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if !same_origin {
                attempt.stop()
            } else if attempt.previous().len() > 10 {
                attempt.error("more than 10 redirects")
            } else {
                attempt.follow()
            }
        });
        Ok(Self(reqwest::Client::builder().redirect(policy).build()?))
    }

    fn request(
        &self,
        builder: RequestBuilder,
        session_id: Option<&str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> RequestBuilder {
        let mut builder = builder.headers(custom_headers.into_iter().collect());
        if let Some(token) = auth_token {
            builder = builder.bearer_auth(token);
        }
        if let Some(session_id) = session_id {
            builder = builder.header(HEADER_SESSION_ID, session_id);
        }
        builder
    }
}

fn accept_both() -> String {
    format!("{JSON_MIME_TYPE}, {EVENT_STREAM_MIME_TYPE}")
}

fn content_type_is(headers: &HeaderMap, mime: &str) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(mime))
}

/// A 401 or 403 that carries a challenge: the caller must authenticate (differently).
fn auth_challenge(response: &Response) -> Option<Error> {
    let header = response.headers().get(reqwest::header::WWW_AUTHENTICATE)?;
    let header = header.to_str().unwrap_or_default().to_owned();
    match response.status() {
        StatusCode::UNAUTHORIZED => Some(StreamableHttpError::AuthRequired(
            AuthRequiredError::new(header),
        )),
        StatusCode::FORBIDDEN => {
            let scope = scope_of(&header);
            Some(StreamableHttpError::InsufficientScope(
                InsufficientScopeError::new(header, scope),
            ))
        }
        _ => None,
    }
}

/// `scope="a b"` out of a `WWW-Authenticate: Bearer ...` challenge.
fn scope_of(challenge: &str) -> Option<String> {
    let start = challenge.find("scope=")? + "scope=".len();
    let rest = &challenge[start..];
    let value = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next()?,
        None => rest.split([',', ' ']).next()?,
    };
    Some(value.to_owned())
}

/// Rate limits and server errors, with the server's `Retry-After`, for rmcp's retries.
fn status_error(status: StatusCode, headers: &HeaderMap) -> Option<HttpStatusError> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let retry_after = headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.len() <= 64)
        .map(str::to_owned);
    Some(HttpStatusError::new(status.as_u16(), retry_after))
}

/// The body, failing once it exceeds `max` bytes.
async fn body_within(response: Response, max: usize) -> Result<Vec<u8>, Error> {
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(StreamableHttpError::Client)?;
        if body.len() + chunk.len() > max {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The first `max` bytes of a body kept for an error message.
async fn body_prefix(response: Response, max: usize) -> String {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        body.extend_from_slice(&chunk[..chunk.len().min(max - body.len().min(max))]);
        if body.len() >= max {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// An event stream whose events may not grow past `max` bytes each (a server that never
/// ends an event would otherwise be buffered without bound by the parser).
fn events(response: Response, max: usize) -> SseEvents {
    let mut since_event = 0usize;
    let mut last = [0u8; 2];
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        for &b in chunk.iter() {
            // An event ends at a blank line: "\n\n", "\r\r" or "\r\n\r\n".
            let ends = (b == b'\n' && (last[1] == b'\n' || last == [b'\n', b'\r']))
                || (b == b'\r' && last[1] == b'\r');
            last = [last[1], b];
            since_event = if ends { 0 } else { since_event + 1 };
            if since_event > max {
                return Err(std::io::Error::other(format!(
                    "an event stream event exceeded {max} bytes"
                )));
            }
        }
        Ok(chunk)
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

/// A redirect is refused: following it would send the configured server's headers (its
/// token) to another origin.
fn redirect_error(status: StatusCode, headers: &HeaderMap) -> Error {
    let to = headers
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(|v| &v[..v.floor_char_boundary(200)])
        .unwrap_or("?");
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
            format!("HTTP {status}: the server redirects to another origin ({to}); rein does not follow, so its headers stay with the configured server"),
        ))
}

/// A response that is no success: the JSON-RPC error it carries, else an error naming its
/// status (and what its body says, bounded).
async fn failed_response(
    response: Response,
    status: StatusCode,
    headers: &HeaderMap,
    session: Option<String>,
    limits: &StreamableHttpResponseLimits,
) -> Result<StreamableHttpPostResponse, Error> {
    // A failed response may still carry the JSON-RPC error that explains it.
    if content_type_is(headers, JSON_MIME_TYPE) && status != StatusCode::TOO_MANY_REQUESTS {
        let body = body_within(response, limits.max_json_response_size).await?;
        if let Ok(error @ JsonRpcMessage::Error(_)) =
            serde_json::from_slice::<ServerJsonRpcMessage>(&body)
        {
            return Ok(StreamableHttpPostResponse::Json(error, session));
        }
        if let Some(error) = status_error(status, headers) {
            return Err(error.into());
        }
        let text = String::from_utf8_lossy(&body);
        let text = &text[..text.floor_char_boundary(limits.max_error_response_size)];
        return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
            format!("HTTP {status}: {text}"),
        )));
    }
    if let Some(error) = status_error(status, headers) {
        return Err(error.into());
    }
    let text = body_prefix(response, limits.max_error_response_size).await;
    Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
        format!("HTTP {status}: {text}"),
    )))
}

fn session_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get(HEADER_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let builder = self.0.post(uri.as_ref()).header(ACCEPT, accept_both());
        let response = self
            .request(builder, session_id.as_deref(), auth_token, custom_headers)
            .json(&message)
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        if let Some(error) = auth_challenge(&response) {
            return Err(error);
        }
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let headers = response.headers().clone();
        let session = session_of(&headers);
        let json = content_type_is(&headers, JSON_MIME_TYPE);
        if status.is_redirection() {
            return Err(redirect_error(status, &headers));
        }
        if !status.is_success() {
            return failed_response(response, status, &headers, session, &limits).await;
        }
        if content_type_is(&headers, EVENT_STREAM_MIME_TYPE) {
            return Ok(StreamableHttpPostResponse::Sse(
                events(response, limits.max_sse_event_size),
                session,
            ));
        }
        let body = body_within(response, limits.max_json_response_size).await?;
        // Some servers answer a notification with an empty 200 instead of 202.
        let expects_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        if body.is_empty() && expects_nothing {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !json {
            return Err(StreamableHttpError::UnexpectedContentType(
                headers
                    .get(CONTENT_TYPE)
                    .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
            ));
        }
        let message = serde_json::from_slice(&body)?;
        Ok(StreamableHttpPostResponse::Json(message, session))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let builder = self.0.delete(uri.as_ref());
        let response = self
            .request(builder, Some(&session_id), auth_token, custom_headers)
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response
            .error_for_status()
            .map_err(StreamableHttpError::Client)?;
        Ok(())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<SseEvents, Error> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_token,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<SseEvents, Error> {
        let mut builder = self.0.get(uri.as_ref()).header(
            ACCEPT,
            format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
        );
        if let Some(id) = last_event_id {
            builder = builder.header(HEADER_LAST_EVENT_ID, id);
        }
        let response = self
            .request(builder, session_id.as_deref(), auth_token, custom_headers)
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if let Some(error) = auth_challenge(&response) {
            return Err(error);
        }
        if let Some(error) = status_error(response.status(), response.headers()) {
            return Err(error.into());
        }
        let response = response
            .error_for_status()
            .map_err(StreamableHttpError::Client)?;
        let headers = response.headers();
        if !content_type_is(headers, EVENT_STREAM_MIME_TYPE)
            && !content_type_is(headers, JSON_MIME_TYPE)
        {
            return Err(StreamableHttpError::UnexpectedContentType(
                headers
                    .get(CONTENT_TYPE)
                    .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
            ));
        }
        Ok(events(response, max_sse_event_size))
    }
}

/// The innermost cause of an error ("Connection refused (os error 111)"): rmcp's and
/// reqwest's wrappers around it name types and repeat the URL.
pub(crate) fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    loop {
        if let Some(source) = cause.source() {
            cause = source;
        } else if let Some(StreamableHttpError::Client(inner)) = cause.downcast_ref::<Error>() {
            // rmcp chains neither its client's error nor a failed initialize's as a source.
            cause = inner;
        } else if let Some(ClientInitializeError::TransportError { error, .. }) =
            cause.downcast_ref::<ClientInitializeError>()
        {
            cause = error;
        } else {
            return cause.to_string();
        }
    }
}

/// The transport to a streamable-HTTP server: the bearer token and header values read
/// from rein's environment now (so a token changed since is picked up at the next start).
pub(crate) fn transport(
    server: &str,
    url: &str,
    bearer_token_env_var: Option<&str>,
    http_headers: &BTreeMap<String, String>,
    env_http_headers: &BTreeMap<String, String>,
    env: &Env,
) -> Result<StreamableHttpClientTransport<HttpClient>, String> {
    let mut headers = HashMap::new();
    let mut add = |name: &str, value: &str| match (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_str(value),
    ) {
        (Ok(name), Ok(value)) => {
            headers.insert(name, value);
        }
        // The configuration was checked; a value from the environment may still be bad.
        _ => tracing::warn!(
            server,
            header = name,
            "MCP server header skipped: not a valid header"
        ),
    };
    for (name, value) in http_headers {
        add(name, value);
    }
    for (name, var) in env_http_headers {
        match env(var) {
            Some(value) if !value.is_empty() => add(name, &value),
            _ => {
                tracing::warn!(server, header = %name, var = %var, "MCP server header skipped: its variable is not set")
            }
        }
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(headers)
        .reinit_on_expired_session(true)
        .max_json_response_size(crate::bounded::MAX_MESSAGE_BYTES)
        .max_sse_event_size(crate::bounded::MAX_MESSAGE_BYTES);
    if let Some(var) = bearer_token_env_var {
        let token = match env(var) {
            None => {
                return Err(format!(
                    "environment variable {var} for MCP server '{server}' is not set"
                ))
            }
            Some(token) if token.is_empty() => {
                return Err(format!(
                    "environment variable {var} for MCP server '{server}' is empty"
                ))
            }
            Some(token) => token,
        };
        config = config.auth_header(token);
    }
    let client = HttpClient::new().map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_are_read_from_quoted_and_bare_challenges() {
        assert_eq!(
            scope_of(r#"Bearer error="insufficient_scope", scope="read write""#),
            Some("read write".into())
        );
        assert_eq!(scope_of("Bearer scope=read, realm=x"), Some("read".into()));
        assert_eq!(scope_of("Bearer realm=x"), None);
    }

    /// The configuration refuses every header this transport sets itself.
    #[test]
    fn the_configuration_reserves_the_transports_headers() {
        let reserved = rein_config::mcp::RESERVED_HEADERS;
        for header in [
            "accept",
            "authorization",
            "content-type",
            HEADER_SESSION_ID,
            HEADER_LAST_EVENT_ID,
            rmcp::transport::common::http_header::HEADER_MCP_PROTOCOL_VERSION,
        ] {
            assert!(
                reserved.iter().any(|r| r.eq_ignore_ascii_case(header)),
                "{header} is not reserved"
            );
        }
    }
}
