//! Errors: [`RpcError`] is what a request answers with on the wire (a JSON-RPC error
//! object); [`AppServerError`] is what stops a transport.

use jsonrpsee::types::{ErrorObject, ErrorObjectOwned};
use rein_protocol::app_server::{codes, JsonRpcErrorBody};

/// A request's failure, as the client will see it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<serde_json::Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
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
            code: codes::INVALID_PARAMS,
            message: format!("Invalid params: {detail}"),
            data: field.map(|f| serde_json::json!({ "field": f })),
        }
    }

    pub fn internal(detail: impl std::fmt::Display) -> Self {
        Self::new(codes::INTERNAL_ERROR, format!("Internal error: {detail}"))
    }

    pub fn overloaded() -> Self {
        Self::new(codes::OVERLOADED, "Server overloaded; retry later.")
    }

    /// The error object of a response the method module produced (the module speaks
    /// jsonrpsee's types; the wire and the handlers speak ours).
    pub fn from_object(object: &serde_json::Value) -> Self {
        Self {
            code: object
                .get("code")
                .and_then(serde_json::Value::as_i64)
                .unwrap_or(codes::INTERNAL_ERROR),
            message: object
                .get("message")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            data: object.get("data").cloned(),
        }
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

/// Why a connection stopped other than by its peer closing it.
#[derive(Debug, thiserror::Error)]
pub enum AppServerError {
    #[error("reading from the client failed: {0}")]
    Read(#[source] std::io::Error),
    #[error("writing to the client failed: {0}")]
    Write(#[source] std::io::Error),
}
