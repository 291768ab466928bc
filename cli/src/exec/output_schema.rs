//! `--output-schema`: the final answer must be JSON satisfying a JSON Schema. The schema
//! is shown to the model in the instructions, sent as strict structured output, and the
//! answer is checked afterwards with the `jsonschema` crate (every keyword of the drafts it
//! supports; the schema itself is checked when it is loaded, so a broken schema is an error
//! before the turn, not after it).

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
    #[error("the output schema {path} is not a valid JSON Schema: {problem}")]
    Invalid { path: PathBuf, problem: String },
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

pub struct OutputSchema {
    pub schema: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchema")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
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
        Self::new(schema).map_err(|problem| SchemaError::Invalid {
            path: path.to_owned(),
            problem,
        })
    }

    /// A checker for `schema`, or why it is not a valid JSON Schema.
    pub fn new(schema: Value) -> Result<Self, String> {
        let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
        Ok(Self { schema, validator })
    }

    /// The instruction that tells the model what shape to answer in.
    pub fn instructions(&self) -> String {
        format!(
            "Your final answer must be a single JSON value, with no prose or code fences \
             around it, that satisfies this JSON Schema:\n{}",
            self.schema
        )
    }

    /// Check the final message; a fenced ```json block is accepted as the JSON. The first
    /// error is reported, with the JSON pointer of the place it is about.
    pub fn check(&self, answer: Option<&str>) -> Result<Value, AnswerError> {
        let text = answer.ok_or(AnswerError::Missing)?;
        let value: Value = serde_json::from_str(strip_fence(text)).map_err(AnswerError::NotJson)?;
        if let Some(error) = self.validator.iter_errors(&value).next() {
            let pointer = error.instance_path().as_str();
            return Err(AnswerError::Mismatch(Mismatch {
                pointer: if pointer.is_empty() {
                    "/".to_owned()
                } else {
                    pointer.to_owned()
                },
                problem: error.to_string(),
            }));
        }
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn schema() -> OutputSchema {
        OutputSchema::new(json!({
            "type": "object",
            "properties": {
                "summary": {"type": "string", "minLength": 1},
                "status": {"type": "string", "enum": ["ok", "action_required"]},
                "files": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
                "ticket": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"}
            },
            "required": ["summary", "status"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    fn mismatch(answer: &str) -> Mismatch {
        match schema().check(Some(answer)) {
            Err(AnswerError::Mismatch(m)) => m,
            other => panic!("{answer}: {other:?}"),
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
                "\"summary\" is a required property",
            ),
            (
                r#"{"summary":"s","status":"bad"}"#,
                "/status",
                "is not one of",
            ),
            (
                r#"{"summary":"s","status":"ok","x":1}"#,
                "/",
                "Additional properties are not allowed ('x' was unexpected)",
            ),
            (
                r#"{"summary":"s","status":"ok","files":[1]}"#,
                "/files/0",
                "1 is not of type \"string\"",
            ),
            (
                r#"{"summary":"","status":"ok"}"#,
                "/summary",
                "shorter than 1 character",
            ),
        ];
        for (answer, pointer, problem) in cases {
            let m = mismatch(answer);
            assert_eq!(m.pointer, pointer, "{answer}");
            assert!(m.problem.contains(problem), "{answer}: {}", m.problem);
        }
    }

    /// Keywords the hand-written checker used to skip are enforced now.
    #[test]
    fn every_keyword_counts() {
        let m = mismatch(r#"{"summary":"s","status":"ok","files":["a","a"]}"#);
        assert_eq!(m.pointer, "/files");
        let m = mismatch(r#"{"summary":"s","status":"ok","ticket":"abc"}"#);
        assert_eq!(m.pointer, "/ticket");
        assert!(m.problem.contains("does not match"), "{}", m.problem);
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
        let s = OutputSchema::new(
            json!({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}),
        )
        .unwrap();
        assert!(s.check(Some("3")).is_ok());
        assert!(s.check(Some("null")).is_ok());
        assert!(s.check(Some("-1")).is_err());
        assert!(s.check(Some("1.5")).is_err());
    }

    #[test]
    fn an_invalid_schema_is_refused_when_loaded() {
        let err = OutputSchema::new(json!({"type": "no-such-type"})).unwrap_err();
        assert!(err.contains("no-such-type"), "{err}");
    }
}
