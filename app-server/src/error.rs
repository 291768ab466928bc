//! Errors: [`RpcError`] is what a request answers with on the wire (a JSON-RPC error
//! object); [`AppServerError`] is what stops a transport.

use jsonrpsee::types::{ErrorObject, ErrorObjectOwned};
use rein_app_server_protocol::{codes, JsonRpcErrorBody};

/// A request's failure, as the client will see it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<serde_json::Value>,
}

/// Longest error message sent: whatever a message quotes, an answer stays small.
pub const MAX_MESSAGE_BYTES: usize = 1024;
/// Longest excerpt of a client's value quoted in a message.
pub const MAX_QUOTED_BYTES: usize = 200;

/// `text` cut to at most `max` bytes (on a character boundary), with a marker saying how
/// much was cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}

/// A client's value for quoting in an error message: Debug-quoted, at most
/// [`MAX_QUOTED_BYTES`] of it.
pub fn quote(value: &str) -> String {
    let mut end = value.len().min(MAX_QUOTED_BYTES);
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    if end == value.len() {
        format!("{value:?}")
    } else {
        format!("{:?}… [{} more bytes]", &value[..end], value.len() - end)
    }
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: truncate(&message.into(), MAX_MESSAGE_BYTES),
            data: None,
        }
    }

    pub fn parse_error(detail: impl std::fmt::Display) -> Self {
        Self::new(codes::PARSE_ERROR, format!("Parse error: {detail}"))
    }

    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_REQUEST, message)
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            codes::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// Bad params; `data.field` names the offending field when serde said which.
    pub fn invalid_params(detail: impl std::fmt::Display, field: Option<String>) -> Self {
        Self {
            data: field.map(|f| serde_json::json!({ "field": truncate(&f, MAX_QUOTED_BYTES) })),
            ..Self::new(codes::INVALID_PARAMS, format!("Invalid params: {detail}"))
        }
    }

    pub fn internal(detail: impl std::fmt::Display) -> Self {
        Self::new(codes::INTERNAL_ERROR, format!("Internal error: {detail}"))
    }

    pub fn overloaded() -> Self {
        Self::new(codes::OVERLOADED, "Server overloaded; retry later.")
    }

    pub fn body(&self) -> JsonRpcErrorBody {
        JsonRpcErrorBody {
            code: self.code,
            message: self.message.clone(),
            data: self.data.clone(),
        }
    }
}

impl From<RpcError> for ErrorObjectOwned {
    fn from(e: RpcError) -> Self {
        // Every code rein sends is a JSON-RPC code, well within i32.
        let code = i32::try_from(e.code).unwrap_or(codes::INTERNAL_ERROR as i32);
        ErrorObject::owned(code, e.message, e.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_quotes_are_bounded_on_character_boundaries() {
        let huge = "é".repeat(5_000_000);
        let e = RpcError::invalid_params(format!("model: {huge}"), Some(huge.clone()));
        assert!(
            e.message.len() < MAX_MESSAGE_BYTES + 40,
            "{}",
            e.message.len()
        );
        assert!(
            e.message.ends_with(" more bytes]"),
            "{}",
            &e.message[1000..]
        );
        let field = e.data.unwrap()["field"].as_str().unwrap().to_owned();
        assert!(field.len() < MAX_QUOTED_BYTES + 40);
        let q = quote(&huge);
        assert!(q.starts_with("\"éé") && q.ends_with(" more bytes]"), "{q}");
        assert_eq!(quote("short"), "\"short\"");
    }
}

/// Why a connection stopped other than by its peer closing it.
#[derive(Debug, thiserror::Error)]
pub enum AppServerError {
    #[error("reading from the client failed: {0}")]
    Read(#[source] std::io::Error),
    #[error("writing to the client failed: {0}")]
    Write(#[source] std::io::Error),
}
