//! Classifying one inbound message: a request, a notification, or a response to one of our
//! server → client requests. `"jsonrpc": "2.0"` is accepted but not required.
//!
//! Nesting is limited at this boundary: a message may nest arrays and objects
//! [`MAX_NESTING`] levels deep, the message itself included. Deeper requests are refused
//! with -32602 under their own id (read by a scan that does not recurse), so every value
//! that reaches the kernel — and its rollout — is one the rollout reader reads back.

use rein_app_server_protocol::RequestId;
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

/// Levels of arrays and objects one message may nest, the message object included (so a
/// request's params may nest `MAX_NESTING - 2` levels below their own object). Well under
/// the JSON parser's limit (128) with room for the rollout's own envelope.
pub const MAX_NESTING: usize = 64;

// The rejection carries a `Value`-sized error, larger with serde_json's `preserve_order`
// (which the ACP SDK turns on); it is the rare path.
#[allow(clippy::result_large_err)]
pub fn parse(bytes: &[u8]) -> Result<Inbound, Rejected> {
    if nests_deeper_than(bytes, MAX_NESTING) && first_byte(bytes) == Some(b'{') {
        return Err(Rejected {
            id: top_level_id(bytes),
            error: RpcError::invalid_params(
                format!("the message nests arrays and objects more than {MAX_NESTING} levels deep"),
                None,
            ),
        });
    }
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

// The rejection carries a `Value`-sized error, larger with serde_json's `preserve_order`
// (which the ACP SDK turns on); it is the rare path.
#[allow(clippy::result_large_err)]
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
        None => None,
        // A request with a null id is answered (with a null id), not taken for a
        // notification.
        Some(Value::Null) => {
            return Err(Rejected {
                id: None,
                error: RpcError::invalid_request(
                    "Invalid request: id must be a string or an integer, not null",
                ),
            })
        }
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

fn first_byte(bytes: &[u8]) -> Option<u8> {
    bytes.iter().copied().find(|b| !b.is_ascii_whitespace())
}

/// Whether the arrays and objects of `bytes` (read as JSON, strings skipped) nest deeper
/// than `limit`. A flat scan: no recursion, no allocation, stops at the first excess.
pub fn nests_deeper_than(bytes: &[u8], limit: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// The `id` member of the top-level object in `bytes`, found without parsing the rest (which
/// may be too deep to parse), if it is a well-formed id.
pub fn top_level_id(bytes: &[u8]) -> Option<RequestId> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut string_start = 0;
    let mut expect_key = false;
    let mut id_key = false;
    let mut value_start: Option<usize> = None;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => {
                    in_string = false;
                    if depth == 1 && expect_key {
                        expect_key = false;
                        let key: Option<String> =
                            serde_json::from_slice(&bytes[string_start..=i]).ok();
                        id_key = key.as_deref() == Some("id");
                    }
                }
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                string_start = i;
            }
            b':' if depth == 1 && id_key => {
                id_key = false;
                value_start = Some(i + 1);
            }
            b',' | b'}' if depth == 1 => {
                if let Some(start) = value_start.take() {
                    let value: Value = serde_json::from_slice(&bytes[start..i]).ok()?;
                    return read_id(&value).ok();
                }
                expect_key = b == b',';
                if b == b'}' {
                    depth -= 1;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                if depth == 1 {
                    expect_key = b == b'{';
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_app_server_protocol::codes;

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

    fn nested(levels: usize) -> String {
        format!("{}1{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn too_deep_requests_are_refused_under_their_own_id() {
        // Params nested past the limit, the id after them, keys and strings with
        // brackets and escapes on the way.
        let line = format!(
            r#"{{"method":"turn/start","params":{{"a\"[{{":"]}}","s":{}}},"i\u0064":"deep-1"}}"#,
            nested(MAX_NESTING)
        );
        let r = parse(line.as_bytes()).unwrap_err();
        assert_eq!(r.id, Some(RequestId::String("deep-1".into())));
        assert_eq!(r.error.code, codes::INVALID_PARAMS);
        // Past the parser's own limit too.
        let line = format!(r#"{{"id":9,"method":"m","params":{}}}"#, nested(5000));
        assert_eq!(
            parse(line.as_bytes()).unwrap_err().id,
            Some(RequestId::Integer(9))
        );
        // Just under the limit is a request like any other.
        let line = format!(
            r#"{{"id":1,"method":"m","params":{}}}"#,
            nested(MAX_NESTING - 2)
        );
        assert!(matches!(
            parse(line.as_bytes()),
            Ok(Inbound::Request { .. })
        ));
        // An id nested inside params is not the request's id.
        let line = format!(
            r#"{{"params":{{"id":5,"x":{}}},"method":"m"}}"#,
            nested(100)
        );
        assert_eq!(parse(line.as_bytes()).unwrap_err().id, None);
    }

    #[test]
    fn a_null_id_is_answered_not_ignored() {
        let r = parse(br#"{"id":null,"method":"account/read"}"#).unwrap_err();
        assert_eq!(r.id, None);
        assert_eq!(r.error.code, codes::INVALID_REQUEST);
    }

    #[test]
    fn non_string_method_keeps_the_id_for_the_answer() {
        let r = parse(br#"{"id":7,"method":3}"#).unwrap_err();
        assert_eq!(r.id, Some(RequestId::Integer(7)));
    }
}
