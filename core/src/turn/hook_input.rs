//! A `PreToolUse` hook's `updatedInput`, checked against the tool's parameter schema
//! before the tool sees it: a hook that rewrites a call into something the tool was never
//! offered to take (an unknown key, a number where a path goes) gets a clear refusal naming
//! the key, instead of whatever the tool's own parser makes of it.
//!
//! The subset of JSON Schema that tool specs use: `type` (one or a list), `anyOf`,
//! `properties`, `required`, `additionalProperties: false`, `items` and `enum`. Anything else
//! in a schema is accepted as is (the tool still parses its arguments).

use serde_json::Value;

/// Where `value` does not fit `schema`, said plainly (`None`: it fits).
pub(crate) fn misfit(schema: &Value, value: &Value) -> Option<String> {
    check(schema, value, "input")
}

fn check(schema: &Value, value: &Value, at: &str) -> Option<String> {
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
        let fits = options.iter().any(|s| check(s, value, at).is_none());
        if !fits {
            return Some(format!("`{at}` fits none of the forms the tool takes"));
        }
    }
    if let Some(types) = schema.get("type") {
        let wanted: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !wanted.is_empty() && !wanted.iter().any(|t| is_type(value, t)) {
            return Some(format!("`{at}` must be {}", wanted.join(" or ")));
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            return Some(format!("`{at}` is not one of the values the tool takes"));
        }
    }
    match value {
        Value::Object(map) => check_object(schema, map, at),
        Value::Array(items) => {
            let item_schema = schema.get("items")?;
            items
                .iter()
                .enumerate()
                .find_map(|(i, item)| check(item_schema, item, &format!("{at}[{i}]")))
        }
        _ => None,
    }
}

fn check_object(schema: &Value, map: &serde_json::Map<String, Value>, at: &str) -> Option<String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    for key in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !map.contains_key(key) {
            return Some(format!("`{at}.{key}` is required"));
        }
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (key, item) in map {
        let inner = format!("{at}.{key}");
        match properties.and_then(|p| p.get(key)) {
            Some(property) => {
                if let Some(problem) = check(property, item, &inner) {
                    return Some(problem);
                }
            }
            None if closed => return Some(format!("`{inner}` is not a parameter of the tool")),
            None => {}
        }
    }
    None
}

fn is_type(value: &Value, name: &str) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value.as_i64().is_some() || value.as_u64().is_some(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::misfit;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_rewritten_input_is_checked_as_the_tool_declares_its_parameters() {
        let schema = json!({
            "type": "object",
            "properties": {
                "command": {"anyOf": [
                    {"type": "array", "items": {"type": "string"}},
                    {"type": "string"}
                ]},
                "timeout_ms": {"type": "integer"},
                "env_policy": {"type": "string", "enum": ["inherit", "core"]}
            },
            "required": ["command"],
            "additionalProperties": false
        });
        let cases = [
            (json!({"command": "ls"}), None),
            (json!({"command": ["ls", "-l"], "timeout_ms": 5}), None),
            (json!({}), Some("`input.command` is required")),
            (
                json!({"command": "ls", "sudo": true}),
                Some("`input.sudo` is not a parameter of the tool"),
            ),
            (
                json!({"command": 3}),
                Some("`input.command` fits none of the forms the tool takes"),
            ),
            (
                json!({"command": "ls", "timeout_ms": 1.5}),
                Some("`input.timeout_ms` must be integer"),
            ),
            (
                json!({"command": "ls", "env_policy": "all"}),
                Some("`input.env_policy` is not one of the values the tool takes"),
            ),
            (json!("ls"), Some("`input` must be object")),
        ];
        for (value, expected) in cases {
            assert_eq!(misfit(&schema, &value).as_deref(), expected, "{value}");
        }
    }
}
