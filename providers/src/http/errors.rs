//! Classifies what a model server said went wrong — an HTTP status with its headers and
//! body, or a failure event inside a stream — into a [`ModelError`], so the kernel can
//! tell what to retry, how long to wait, and what to report.

use std::time::Duration;

use serde::Deserialize;

use rein_core::model::ModelError;

/// Longest error body kept in a message; servers sometimes answer with whole HTML pages.
const MAX_MESSAGE_CHARS: usize = 2000;

/// The `error` object OpenAI-style servers put in error bodies and `response.failed`.
#[derive(Debug, Default, Deserialize)]
pub struct ApiErrorBody {
    #[serde(default)]
    pub code: Option<serde_json::Value>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

impl ApiErrorBody {
    fn code_str(&self) -> Option<&str> {
        self.code.as_ref().and_then(|c| c.as_str())
    }

    fn is_context_window(&self) -> bool {
        if self.code_str() == Some("context_length_exceeded") {
            return true;
        }
        // Servers without OpenAI's codes say it in words (vLLM, llama.cpp, Ollama).
        let message = self.message.as_deref().unwrap_or("").to_ascii_lowercase();
        message.contains("context length")
            || message.contains("context window")
            || message.contains("maximum context")
            || message.contains("exceeds the available context")
    }
}

#[derive(Deserialize)]
struct Envelope {
    error: ApiErrorBody,
}

/// The `error` object of a body, or a plain-text message when the body is not JSON.
fn parse_body(body: &str) -> ApiErrorBody {
    if let Ok(Envelope { error }) = serde_json::from_str::<Envelope>(body) {
        return error;
    }
    let trimmed = body.trim();
    ApiErrorBody {
        message: Some(truncate(trimmed)),
        ..ApiErrorBody::default()
    }
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Maps a non-success response to the error the kernel acts on.
pub fn error_for_response(
    status: u16,
    headers: &reqwest::header::HeaderMap,
    body: &str,
) -> ModelError {
    let error = parse_body(body);
    let message = error
        .message
        .clone()
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| format!("HTTP {status}"));
    match status {
        429 if error.code_str() == Some("insufficient_quota") => {
            // Waiting does not refill a quota: report it, do not retry.
            ModelError::BadRequest { status, message }
        }
        429 => ModelError::RateLimited {
            retry_after: retry_after_from_headers(headers)
                .or_else(|| retry_after_in_text(&message)),
            message,
        },
        401 | 403 => ModelError::Unauthorized { status, message },
        400 | 413 if error.is_context_window() => ModelError::ContextWindowExceeded(message),
        // A request timeout or conflict is the server's momentary state, not a bad request.
        408 | 409 => ModelError::Server { status, message },
        400..=499 => ModelError::BadRequest { status, message },
        _ => ModelError::Server { status, message },
    }
}

/// Maps a failure reported inside a stream (`response.failed`, an `error` event or a
/// Chat Completions chunk with an `error` object).
pub fn error_for_stream_failure(error: &ApiErrorBody) -> ModelError {
    let message = error
        .message
        .clone()
        .unwrap_or_else(|| "the model server reported a failure".into());
    if error.is_context_window() {
        return ModelError::ContextWindowExceeded(message);
    }
    match error.code_str() {
        Some("rate_limit_exceeded") => ModelError::RateLimited {
            retry_after: retry_after_in_text(&message),
            message,
        },
        Some("insufficient_quota") => ModelError::BadRequest {
            status: 429,
            message,
        },
        Some("invalid_prompt") | Some("invalid_request_error") => ModelError::BadRequest {
            status: 400,
            message,
        },
        _ if error.kind.as_deref() == Some("invalid_request_error") => ModelError::BadRequest {
            status: 400,
            message,
        },
        // The response began with 200 and then failed on the server's side.
        _ => ModelError::Server {
            status: 500,
            message,
        },
    }
}

/// A stream the server sent but that cannot be understood. 502 is "an invalid answer
/// from upstream": retryable, since a garbled stream is usually a broken proxy.
pub fn malformed(what: impl std::fmt::Display) -> ModelError {
    ModelError::Server {
        status: 502,
        message: format!("malformed stream from the model server: {what}"),
    }
}

/// `retry-after-ms` (OpenAI) wins over `Retry-After` in seconds; HTTP dates are ignored,
/// model servers do not send them.
pub fn retry_after_from_headers(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    if let Some(ms) = header("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    header("retry-after").map(Duration::from_secs_f64)
}

/// Finds "try again in 1.5s" / "try again in 20ms" / "try again in 3 seconds" in a message.
pub fn retry_after_in_text(message: &str) -> Option<Duration> {
    let lower = message.to_ascii_lowercase();
    let start = lower.find("try again in")? + "try again in".len();
    let rest = lower[start..].trim_start();
    let number_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let value: f64 = rest[..number_len].parse().ok()?;
    if !value.is_finite() {
        return None;
    }
    let unit = rest[number_len..].trim_start();
    if unit.starts_with("ms") || unit.starts_with("millisecond") {
        Some(Duration::from_secs_f64(value / 1000.0))
    } else if unit.starts_with('s') {
        Some(Duration::from_secs_f64(value))
    } else if unit.starts_with("min") || unit.starts_with('m') {
        Some(Duration::from_secs_f64(value * 60.0))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn try_again_in_text_is_understood() {
        assert_eq!(
            retry_after_in_text("Rate limit reached. Please try again in 1.5s. Visit..."),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after_in_text("Please try again in 20ms."),
            Some(Duration::from_millis(20))
        );
        assert_eq!(
            retry_after_in_text("try again in 3 seconds"),
            Some(Duration::from_secs(3))
        );
        assert_eq!(retry_after_in_text("try again later"), None);
    }

    #[test]
    fn retry_after_ms_header_wins() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after_from_headers(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(
            retry_after_from_headers(&h),
            Some(Duration::from_millis(250))
        );
    }

    #[test]
    fn statuses_are_classified() {
        let h = HeaderMap::new();
        let cw = r#"{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert_eq!(
            error_for_response(400, &h, cw),
            ModelError::ContextWindowExceeded("too long".into())
        );
        assert!(matches!(
            error_for_response(400, &h, "{}"),
            ModelError::BadRequest { status: 400, .. }
        ));
        assert!(matches!(
            error_for_response(401, &h, ""),
            ModelError::Unauthorized { status: 401, .. }
        ));
        assert!(matches!(
            error_for_response(503, &h, "<html>down</html>"),
            ModelError::Server { status: 503, ref message } if message == "<html>down</html>"
        ));
        let quota = r#"{"error":{"message":"no","code":"insufficient_quota"}}"#;
        assert!(!error_for_response(429, &h, quota).is_retryable());
    }
}
