//! What a hook's exit code and output mean, as Claude Code's contract says (Codex follows
//! it): exit 0 is no objection, with optional JSON on stdout (`decision`,
//! `hookSpecificOutput.permissionDecision` allow / deny / ask with its reason, or for
//! `PermissionRequest` `hookSpecificOutput.decision.behavior` allow / deny with a `message`,
//! `updatedInput`, `additionalContext`, `systemMessage`, `continue: false`); exit 2 blocks,
//! its stderr the reason; anything else is a failure. Stdout that is not meant as JSON
//! (empty, or not starting with `{`) is plain text and means nothing here; stdout that
//! starts with `{` but is not the contract's JSON is a failure, said plainly.

use rein_core::hooks::{HookOutput, HookVerdict};
use serde_json::Value;

/// The verdict of a hook that exited with `code` (`None`: killed by a signal).
pub fn verdict(code: Option<i32>, stdout: &str, stderr: &str) -> HookVerdict {
    match code {
        Some(0) => parse_stdout(stdout),
        Some(2) => HookVerdict::Block {
            reason: match stderr.trim() {
                "" => "the hook exited with code 2".to_owned(),
                reason => reason.to_owned(),
            },
        },
        Some(code) => HookVerdict::Failed {
            message: with_stderr(format!("it exited with code {code}"), stderr),
        },
        None => HookVerdict::Failed {
            message: with_stderr("it was killed by a signal".to_owned(), stderr),
        },
    }
}

fn with_stderr(message: String, stderr: &str) -> String {
    match stderr.trim() {
        "" => message,
        err => format!("{message}: {err}"),
    }
}

fn failed(message: impl Into<String>) -> HookVerdict {
    HookVerdict::Failed {
        message: message.into(),
    }
}

fn parse_stdout(stdout: &str) -> HookVerdict {
    let text = stdout.trim();
    if !text.starts_with('{') {
        return HookVerdict::Proceed(HookOutput {
            text: (!text.is_empty()).then(|| text.to_owned()),
            ..HookOutput::default()
        });
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return failed(format!("its output is not valid JSON: {e}")),
    };
    let specific = value
        .get("hookSpecificOutput")
        .cloned()
        .unwrap_or(Value::Null);
    let string = |v: &Value, key: &str| -> Result<Option<String>, Malformed> {
        match v.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Malformed(format!("`{key}` in its output must be a string"))),
        }
    };
    let read = || -> Result<HookVerdict, Malformed> {
        // A `PermissionRequest` hook answers with `decision: {behavior, message}`.
        let request = specific.get("decision").filter(|d| d.is_object());
        let behavior = match request {
            Some(d) => string(d, "behavior")?,
            None => None,
        };
        let given_reason = match request {
            Some(d) => string(d, "message")?,
            None => string(&specific, "permissionDecisionReason")?,
        }
        .or(string(&value, "reason")?);
        let reason = given_reason
            .clone()
            .unwrap_or_else(|| "the hook said no".to_owned());
        if value.get("continue") == Some(&Value::Bool(false)) {
            let stop = string(&value, "stopReason")?.unwrap_or(reason);
            return Ok(HookVerdict::Block { reason: stop });
        }
        let decision = match (behavior, string(&specific, "permissionDecision")?) {
            (Some(d), _) | (None, Some(d)) => Some(d),
            // The older top-level spelling: `approve` / `block`.
            (None, None) => string(&value, "decision")?,
        };
        let decision = match decision.as_deref() {
            None => None,
            Some("deny" | "block") => return Ok(HookVerdict::Block { reason }),
            Some("allow" | "approve") => Some("allow".to_owned()),
            Some("ask") => Some("ask".to_owned()),
            Some(other) => {
                return Err(Malformed(format!(
                    "its decision `{other}` is none of allow, deny, ask"
                )))
            }
        };
        let updated_input = match specific.get("updatedInput") {
            None | Some(Value::Null) => None,
            Some(v @ Value::Object(_)) => Some(v.clone()),
            Some(_) => {
                return Err(Malformed(
                    "`updatedInput` in its output must be an object".to_owned(),
                ))
            }
        };
        Ok(HookVerdict::Proceed(HookOutput {
            decision,
            reason: given_reason,
            updated_input,
            additional_context: string(&specific, "additionalContext")?,
            system_message: string(&value, "systemMessage")?,
            text: None,
        }))
    };
    read().unwrap_or_else(|Malformed(message)| failed(message))
}

/// Output that starts as JSON but is not the contract's: what is wrong with it.
struct Malformed(String);
