//! `POST /v1/responses` bodies: the fields rein honours, each checked; any other field is a
//! 400 that names it, so a client never believes a setting took effect that did not.

use rein_protocol::InputPart;
use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;
use crate::records::{self, ResponseRecord};

/// The body of `POST /v1/responses`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateResponse {
    /// A model of the configured catalog; absent: the configured model.
    #[serde(default)]
    pub model: Option<String>,
    pub input: Value,
    /// A new thread's instructions, after the configured ones.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Continue the thread of that response (it must be the thread's latest).
    #[serde(default)]
    pub previous_response_id: Option<String>,
    #[serde(default)]
    pub stream: bool,
    /// Answer at once; the run goes on, and is polled or streamed by its id.
    #[serde(default)]
    pub background: bool,
    /// Every response is stored (the rollout is how rein works); `false` is refused.
    #[serde(default)]
    pub store: Option<bool>,
    /// Up to 16 strings the response object echoes (checked by [`parse`]).
    #[serde(default)]
    pub metadata: Option<Value>,
    /// `metadata` as checked, with `background`: what the server records beside the turn.
    #[serde(skip)]
    pub record: ResponseRecord,
}

/// The body of `POST /v1/responses/{id}/approvals/{request_id}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalAnswer {
    /// `approve`, `approve_for_session`, `deny`, `deny_for_session` or `abort`.
    pub decision: rein_protocol::ApprovalDecision,
}

/// Parse a body, naming the offending field in the 400.
pub fn parse(body: &[u8]) -> Result<CreateResponse, ApiError> {
    let mut parsed: CreateResponse = parse_json(body)?;
    if parsed.store == Some(false) {
        return Err(ApiError::bad(
            "`store: false` is not supported: every response is kept in its thread's rollout",
            Some("store"),
        ));
    }
    parsed.record = ResponseRecord {
        metadata: records::metadata(parsed.metadata.as_ref())?,
        background: parsed.background,
    };
    Ok(parsed)
}

/// Parse a JSON body into `T`, naming the offending field in the 400.
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let message = e.inner().to_string();
        let param = unknown_field(&message).or_else(|| {
            let path = e.path().to_string();
            (path != ".").then_some(path)
        });
        if e.inner().is_syntax() || e.inner().is_eof() {
            ApiError::bad(format!("the body is not valid JSON: {message}"), None)
        } else {
            ApiError::BadRequest {
                message: format!("invalid request: {message}"),
                param,
                code: None,
            }
        }
    })
}

fn unknown_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    Some(rest.split('`').next()?.to_owned())
}

/// The user input of `input`: a string, or a list of user messages whose content is a
/// string or `input_text` / `input_image` parts.
pub fn input_parts(input: &Value) -> Result<Vec<InputPart>, ApiError> {
    let parts = match input {
        Value::String(text) => vec![InputPart::text(text.clone())],
        Value::Array(items) => {
            let mut parts = Vec::new();
            for (i, item) in items.iter().enumerate() {
                message_parts(item, &format!("input[{i}]"), &mut parts)?;
            }
            parts
        }
        _ => {
            return Err(ApiError::bad(
                "`input` must be a string or a list of input items",
                Some("input"),
            ))
        }
    };
    if parts.iter().all(InputPart::is_blank) {
        return Err(ApiError::bad("`input` is empty", Some("input")));
    }
    Ok(parts)
}

fn message_parts(item: &Value, at: &str, parts: &mut Vec<InputPart>) -> Result<(), ApiError> {
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message");
    if kind != "message" {
        return Err(ApiError::bad(
            format!("input items of type `{kind}` are not supported (only user messages)"),
            Some(&format!("{at}.type")),
        ));
    }
    let role = item.get("role").and_then(Value::as_str);
    if role != Some("user") {
        return Err(ApiError::bad(
            "only `user` messages are accepted as input (use `instructions` for the rest)",
            Some(&format!("{at}.role")),
        ));
    }
    match item.get("content") {
        Some(Value::String(text)) => parts.push(InputPart::text(text.clone())),
        Some(Value::Array(content)) => {
            for (j, part) in content.iter().enumerate() {
                parts.push(content_part(part, &format!("{at}.content[{j}]"))?);
            }
        }
        _ => {
            return Err(ApiError::bad(
                "a message needs `content`: a string or a list of parts",
                Some(&format!("{at}.content")),
            ))
        }
    }
    Ok(())
}

fn content_part(part: &Value, at: &str) -> Result<InputPart, ApiError> {
    let text = |key: &str| part.get(key).and_then(Value::as_str).map(str::to_owned);
    match part.get("type").and_then(Value::as_str) {
        Some("input_text") => text("text")
            .map(InputPart::text)
            .ok_or_else(|| ApiError::bad("`input_text` needs `text`", Some(&format!("{at}.text")))),
        Some("input_image") => text("image_url")
            .map(|url| InputPart::Image { url })
            .ok_or_else(|| {
                ApiError::bad(
                    "`input_image` needs `image_url` (file ids are not supported)",
                    Some(&format!("{at}.image_url")),
                )
            }),
        other => Err(ApiError::bad(
            format!("content parts of type {other:?} are not supported"),
            Some(&format!("{at}.type")),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_and_bad_json_are_400s_naming_what() {
        let err = parse(br#"{"input":"hi","temperature":0.2}"#).err();
        match err {
            Some(ApiError::BadRequest { param, .. }) => {
                assert_eq!(param.as_deref(), Some("temperature"))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse(b"{nope"),
            Err(ApiError::BadRequest { param: None, .. })
        ));
        assert!(parse(br#"{"input":"hi","store":false}"#).is_err());
        assert!(parse(br#"{"input":"hi","stream":true}"#).is_ok_and(|r| r.stream));
    }

    #[test]
    fn input_is_a_string_or_user_messages() {
        assert_eq!(
            input_parts(&json!("hi")).ok(),
            Some(vec![InputPart::text("hi")])
        );
        let items = json!([
            { "role": "user", "content": "one" },
            { "type": "message", "role": "user", "content": [
                { "type": "input_text", "text": "two" },
                { "type": "input_image", "image_url": "data:image/png;base64,AA" }
            ] }
        ]);
        assert_eq!(
            input_parts(&items).ok(),
            Some(vec![
                InputPart::text("one"),
                InputPart::text("two"),
                InputPart::Image {
                    url: "data:image/png;base64,AA".into()
                }
            ])
        );
        for bad in [
            json!(""),
            json!(3),
            json!([{ "role": "assistant", "content": "x" }]),
            json!([{ "type": "function_call_output", "call_id": "c", "output": "x" }]),
        ] {
            assert!(input_parts(&bad).is_err(), "{bad}");
        }
    }
}
