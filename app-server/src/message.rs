//! Classifying one inbound message: a request, a notification, or a response to one of our
//! server → client requests. `"jsonrpc": "2.0"` is accepted but not required.

use rein_protocol::app_server::RequestId;
use serde_json::Value;

use crate::error::RpcError;

#[derive(Debug, PartialEq)]
pub enum Inbound {
    Request {
        id: RequestId,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
    },
    /// A reply to a server → client request: `result` or `error`.
    Response {
        id: RequestId,
        outcome: Result<Value, Value>,
    },
}

/// A message that cannot be handled, with the id to answer to when one could be read.
#[derive(Debug, PartialEq)]
pub struct Rejected {
    pub id: Option<RequestId>,
    pub error: RpcError,
}

pub fn parse(bytes: &[u8]) -> Result<Inbound, Rejected> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| Rejected {
        id: None,
        error: RpcError::parse_error(e),
    })?;
    classify(value)
}

/// The id of a message, if it has a well-formed one (used to answer "overloaded" without
/// handling the message).
pub fn peek_id(bytes: &[u8]) -> Option<RequestId> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    value.get("method")?;
    read_id(value.get("id")?).ok()
}

fn read_id(value: &Value) -> Result<RequestId, RpcError> {
    serde_json::from_value(value.clone()).map_err(|_| {
        RpcError::invalid_request("Invalid request: id must be a string or an integer")
    })
}

fn classify(value: Value) -> Result<Inbound, Rejected> {
    let Value::Object(mut obj) = value else {
        return Err(Rejected {
            id: None,
            error: RpcError::invalid_request("Invalid request: a message must be a JSON object"),
        });
    };
    if let Some(v) = obj.get("jsonrpc") {
        if v != "2.0" {
            return Err(Rejected {
                id: obj.get("id").and_then(|v| read_id(v).ok()),
                error: RpcError::invalid_request("Invalid request: jsonrpc must be \"2.0\""),
            });
        }
    }
    let id = match obj.get("id") {
        None | Some(Value::Null) => None,
        Some(v) => Some(read_id(v).map_err(|error| Rejected { id: None, error })?),
    };
    match obj.remove("method") {
        Some(Value::String(method)) => {
            let params = obj.remove("params").unwrap_or(Value::Null);
            Ok(match id {
                Some(id) => Inbound::Request { id, method, params },
                None => Inbound::Notification { method },
            })
        }
        Some(_) => Err(Rejected {
            id,
            error: RpcError::invalid_request("Invalid request: method must be a string"),
        }),
        None => {
            let Some(id) = id else {
                return Err(Rejected {
                    id: None,
                    error: RpcError::invalid_request(
                        "Invalid request: expected a method, or an id with a result or error",
                    ),
                });
            };
            let outcome = match (obj.remove("result"), obj.remove("error")) {
                (Some(result), None) => Ok(result),
                (None, Some(error)) => Err(error),
                _ => {
                    return Err(Rejected {
                        id: Some(id),
                        error: RpcError::invalid_request(
                            "Invalid request: a response needs exactly one of result and error",
                        ),
                    })
                }
            };
            Ok(Inbound::Response { id, outcome })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::app_server::codes;

    #[test]
    fn request_without_jsonrpc_member_is_accepted() {
        let m = parse(br#"{"id":1,"method":"initialize","params":{}}"#);
        assert!(matches!(
            m,
            Ok(Inbound::Request {
                id: RequestId::Integer(1),
                ..
            })
        ));
    }

    #[test]
    fn response_with_string_id_is_a_response() {
        let m = parse(br#"{"jsonrpc":"2.0","id":"a","result":{"decision":"accept"}}"#);
        assert!(matches!(
            m,
            Ok(Inbound::Response {
                id: RequestId::String(_),
                outcome: Ok(_)
            })
        ));
    }

    #[test]
    fn garbage_is_a_parse_error_and_arrays_are_invalid() {
        assert_eq!(parse(b"{oops").unwrap_err().error.code, codes::PARSE_ERROR);
        assert_eq!(
            parse(b"[1,2]").unwrap_err().error.code,
            codes::INVALID_REQUEST
        );
        let bad_id = parse(br#"{"id":{"x":1},"method":"m"}"#).unwrap_err();
        assert_eq!(bad_id.error.code, codes::INVALID_REQUEST);
    }

    #[test]
    fn non_string_method_keeps_the_id_for_the_answer() {
        let r = parse(br#"{"id":7,"method":3}"#).unwrap_err();
        assert_eq!(r.id, Some(RequestId::Integer(7)));
    }
}
