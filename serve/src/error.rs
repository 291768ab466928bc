//! Errors in the shape OpenAI's API gives them (`{"error": {"message", "type", "param",
//! "code"}}`), with their HTTP status, so the official SDKs raise their own exception types
//! (`BadRequestError`, `NotFoundError`, `ConflictError`, ...).

use hyper::StatusCode;
use rein_bootstrap::admission::Refusal;
use serde_json::{json, Value};

/// A request the server refuses, and why.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The body or a field of it is wrong; `param` names the field when one is to blame.
    #[error("{message}")]
    BadRequest {
        message: String,
        param: Option<String>,
        code: Option<&'static str>,
    },
    #[error("missing or wrong bearer token")]
    Unauthorized,
    /// A browser page (an `Origin`) or a rebinding DNS name (a foreign `Host`).
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    /// The thread already runs a turn.
    #[error("{0}")]
    Conflict(String),
    #[error("the request body is larger than {limit} bytes")]
    TooLarge { limit: usize },
    /// More runs at once than the server takes.
    #[error("{0}")]
    TooManyRuns(String),
    /// The kernel failed to do what was asked.
    #[error("{0}")]
    Internal(String),
}

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::Token => ApiError::Unauthorized,
            Refusal::Origin => {
                ApiError::Forbidden("requests with an Origin header (web pages) are refused")
            }
            Refusal::Host => ApiError::Forbidden("the Host header does not name this server"),
        }
    }
}

impl ApiError {
    pub fn bad(message: impl Into<String>, param: Option<&str>) -> Self {
        ApiError::BadRequest {
            message: message.into(),
            param: param.map(str::to_owned),
            code: None,
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::TooManyRuns(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The error object, as OpenAI's API writes it.
    pub fn body(&self) -> Value {
        let (kind, param, code) = match self {
            ApiError::BadRequest { param, code, .. } => {
                ("invalid_request_error", param.clone(), *code)
            }
            ApiError::Unauthorized => ("invalid_request_error", None, Some("invalid_api_key")),
            ApiError::Forbidden(_) => ("invalid_request_error", None, Some("forbidden")),
            ApiError::NotFound(_) => ("invalid_request_error", None, Some("not_found")),
            ApiError::MethodNotAllowed(_) => ("invalid_request_error", None, None),
            ApiError::Conflict(_) => ("invalid_request_error", None, Some("conflict")),
            ApiError::TooLarge { .. } => ("invalid_request_error", None, Some("body_too_large")),
            ApiError::TooManyRuns(_) => ("rate_limit_error", None, Some("too_many_runs")),
            ApiError::Internal(_) => ("server_error", None, None),
        };
        json!({ "error": { "message": self.to_string(), "type": kind, "param": param, "code": code } })
    }
}
