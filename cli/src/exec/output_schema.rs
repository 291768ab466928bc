//! `--output-schema`: the final answer must be JSON satisfying a JSON Schema. The schema
//! is shown to the model in the instructions and the answer is checked afterwards.
//!
//! The checker covers the keywords structured-output schemas use — `type`, `properties`,
//! `required`, `additionalProperties`, `items`, `enum`, `const`, `anyOf` / `oneOf` /
//! `allOf`, and the numeric and length bounds. A full validator crate would bring a large
//! dependency tree for keywords these schemas do not use; unknown keywords are ignored.

use std::path::{Path, PathBuf};

use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("reading the output schema {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the output schema {path} is not valid JSON: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("the output schema {path} must be a JSON object")]
    NotAnObject { path: PathBuf },
}

/// Where in the answer a check failed, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at {pointer}: {problem}")]
pub struct Mismatch {
    /// JSON pointer into the answer (`/` for the root).
    pub pointer: String,
    pub problem: String,
}

#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("the final message is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("the final message does not match the output schema {0}")]
    Mismatch(#[source] Mismatch),
    #[error("the turn ended without a final message")]
    Missing,
}

#[derive(Debug, Clone)]
pub struct OutputSchema {
    pub schema: Value,
}

impl OutputSchema {
    pub fn load(path: &Path) -> Result<Self, SchemaError> {
        let text = std::fs::read_to_string(path).map_err(|source| SchemaError::Read {
            path: path.to_owned(),
            source,
        })?;
        let schema: Value = serde_json::from_str(&text).map_err(|source| SchemaError::Parse {
            path: path.to_owned(),
            source,
        })?;
        if !schema.is_object() {
            return Err(SchemaError::NotAnObject {
                path: path.to_owned(),
            });
        }
        Ok(Self { schema })
    }

    /// The instruction that tells the model what shape to answer in.
    pub fn instructions(&self) -> String {
        format!(
            "Your final answer must be a single JSON value, with no prose or code fences \
             around it, that satisfies this JSON Schema:\n{}",
            self.schema
        )
    }

    /// Check the final message; a fenced ```json block is accepted as the JSON.
    pub fn check(&self, answer: Option<&str>) -> Result<Value, AnswerError> {
        let text = answer.ok_or(AnswerError::Missing)?;
        let value: Value = serde_json::from_str(strip_fence(text)).map_err(AnswerError::NotJson)?;
        validate(&self.schema, &value, "").map_err(AnswerError::Mismatch)?;
        Ok(value)
    }
}

fn strip_fence(text: &str) -> &str {
    let t = text.trim();
    t.strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .map_or(t, str::trim)
}

fn fail(pointer: &str, problem: impl Into<String>) -> Result<(), Mismatch> {
    Err(Mismatch {
        pointer: if pointer.is_empty() {
            "/".into()
        } else {
            pointer.into()
        },
        problem: problem.into(),
    })
}

/// Validate `value` against `schema`; `pointer` names where `value` sits.
pub fn validate(schema: &Value, value: &Value, pointer: &str) -> Result<(), Mismatch> {
    let Some(s) = schema.as_object() else {
        // `true` accepts everything, `false` nothing.
        return match schema {
            Value::Bool(false) => fail(pointer, "no value is allowed here"),
            _ => Ok(()),
        };
    };
    if let Some(t) = s.get("type") {
        let allowed: Vec<&str> = match t {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.is_empty() && !allowed.iter().any(|t| has_type(value, t)) {
            return fail(
                pointer,
                format!(
                    "expected {}, found {}",
                    allowed.join(" or "),
                    type_name(value)
                ),
            );
        }
    }
    if let Some(options) = s.get("enum").and_then(Value::as_array) {
        if !options.contains(value) {
            return fail(
                pointer,
                format!("{value} is not one of {}", Value::from(options.clone())),
            );
        }
    }
    if let Some(c) = s.get("const") {
        if c != value {
            return fail(pointer, format!("expected {c}, found {value}"));
        }
    }
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        for sub in all {
            validate(sub, value, pointer)?;
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(any) = s.get(key).and_then(Value::as_array) {
            let passing = any
                .iter()
                .filter(|sub| validate(sub, value, pointer).is_ok())
                .count();
            if passing == 0 || (key == "oneOf" && passing > 1) {
                return fail(
                    pointer,
                    format!("matches {passing} of the {key} alternatives"),
                );
            }
        }
    }
    match value {
        Value::Object(map) => {
            let props = s.get("properties").and_then(Value::as_object);
            for name in s
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(name) = name.as_str() {
                    if !map.contains_key(name) {
                        return fail(pointer, format!("missing required property `{name}`"));
                    }
                }
            }
            for (name, v) in map {
                let at = format!("{pointer}/{name}");
                match props.and_then(|p| p.get(name)) {
                    Some(sub) => validate(sub, v, &at)?,
                    None => match s.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            return fail(pointer, format!("property `{name}` is not allowed"))
                        }
                        Some(sub @ Value::Object(_)) => validate(sub, v, &at)?,
                        _ => {}
                    },
                }
            }
        }
        Value::Array(items) => {
            bound(s, "minItems", "maxItems", items.len(), "items", pointer)?;
            if let Some(sub) = s.get("items") {
                for (i, v) in items.iter().enumerate() {
                    validate(sub, v, &format!("{pointer}/{i}"))?;
                }
            }
        }
        Value::String(text) => {
            bound(
                s,
                "minLength",
                "maxLength",
                text.chars().count(),
                "characters",
                pointer,
            )?;
        }
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                if s.get("minimum")
                    .and_then(Value::as_f64)
                    .is_some_and(|m| x < m)
                {
                    return fail(pointer, format!("{x} is below the minimum"));
                }
                if s.get("maximum")
                    .and_then(Value::as_f64)
                    .is_some_and(|m| x > m)
                {
                    return fail(pointer, format!("{x} is above the maximum"));
                }
            }
        }
        Value::Bool(_) | Value::Null => {}
    }
    Ok(())
}

fn bound(
    s: &serde_json::Map<String, Value>,
    min_key: &str,
    max_key: &str,
    n: usize,
    what: &str,
    pointer: &str,
) -> Result<(), Mismatch> {
    let n = n as u64;
    if let Some(min) = s.get(min_key).and_then(Value::as_u64) {
        if n < min {
            return fail(pointer, format!("{n} {what}, at least {min} required"));
        }
    }
    if let Some(max) = s.get(max_key).and_then(Value::as_u64) {
        if n > max {
            return fail(pointer, format!("{n} {what}, at most {max} allowed"));
        }
    }
    Ok(())
}

fn has_type(value: &Value, t: &str) -> bool {
    match t {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => true,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> OutputSchema {
        OutputSchema {
            schema: json!({
                "type": "object",
                "properties": {
                    "summary": {"type": "string", "minLength": 1},
                    "status": {"type": "string", "enum": ["ok", "action_required"]},
                    "files": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["summary", "status"],
                "additionalProperties": false
            }),
        }
    }

    #[test]
    fn a_matching_answer_passes_even_in_a_fence() {
        let v = schema()
            .check(Some(
                "```json\n{\"summary\":\"s\",\"status\":\"ok\",\"files\":[\"a\"]}\n```",
            ))
            .unwrap();
        assert_eq!(v["status"], "ok");
    }

    #[test]
    fn mismatches_name_the_place_and_the_problem() {
        let cases = [
            (
                r#"{"status":"ok"}"#,
                "/",
                "missing required property `summary`",
            ),
            (
                r#"{"summary":"s","status":"bad"}"#,
                "/status",
                "is not one of",
            ),
            (
                r#"{"summary":"s","status":"ok","x":1}"#,
                "/",
                "`x` is not allowed",
            ),
            (
                r#"{"summary":"s","status":"ok","files":[1]}"#,
                "/files/0",
                "expected string",
            ),
            (r#"{"summary":"","status":"ok"}"#, "/summary", "at least 1"),
        ];
        for (answer, pointer, problem) in cases {
            match schema().check(Some(answer)) {
                Err(AnswerError::Mismatch(m)) => {
                    assert_eq!(m.pointer, pointer, "{answer}");
                    assert!(m.problem.contains(problem), "{answer}: {}", m.problem);
                }
                other => panic!("{answer}: {other:?}"),
            }
        }
    }

    #[test]
    fn prose_is_not_json_and_no_answer_is_missing() {
        assert!(matches!(
            schema().check(Some("Sure!")),
            Err(AnswerError::NotJson(_))
        ));
        assert!(matches!(schema().check(None), Err(AnswerError::Missing)));
    }

    #[test]
    fn any_of_and_integer_types() {
        let s = json!({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]});
        assert!(validate(&s, &json!(3), "").is_ok());
        assert!(validate(&s, &json!(null), "").is_ok());
        assert!(validate(&s, &json!(-1), "").is_err());
        assert!(validate(&s, &json!(1.5), "").is_err());
    }
}
