//! The hook definitions of one file, in Claude Code's shape (which Codex reads too):
//! `{"PreToolUse": [{"matcher": "REGEX", "hooks": [{"type": "command", "command": "...",
//! "timeout": SECONDS}]}]}`. The same shape comes from `hooks.json` (under `"hooks"`),
//! Claude's `settings.json` (under `"hooks"`) and config.toml's `[hooks]` table (turned into
//! JSON by the caller). A problem is an error naming the file and the key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rein_core::hooks::OnError;
use rein_protocol::HookEventName;
use serde_json::Value;

use crate::matcher::Matcher;

/// Codex's default, and Claude Code's for command hooks.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Keys of config.toml's `[hooks]` table that are settings, not events.
pub const SETTING_KEYS: &[&str] = &[
    "state",
    "read_claude_settings",
    "read_codex_home",
    "max_continuations",
];

/// One command hook as configured.
#[derive(Clone, Debug)]
pub struct HookDef {
    pub event: HookEventName,
    pub matcher: Matcher,
    pub command: String,
    pub timeout: Duration,
    pub on_error: OnError,
    /// Its position: the matcher group and the handler within it.
    pub group: usize,
    pub handler: usize,
}

impl HookDef {
    /// What trust is given to: everything that decides what the hook does.
    pub fn normalized(&self) -> Value {
        serde_json::json!({
            "event": self.event.as_str(),
            "matcher": self.matcher.source(),
            "type": "command",
            "command": self.command,
            "timeout_sec": self.timeout.as_secs(),
            "on_error": match self.on_error { OnError::Block => "block", OnError::Allow => "allow" },
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HookConfigError {
    #[error("{path}: cannot read it: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not valid JSON: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path}: `{key}`: {problem}")]
    Key {
        path: PathBuf,
        key: String,
        problem: String,
    },
}

/// What one file defines: the hooks rein runs, and what it cannot run (said as warnings).
#[derive(Debug, Default)]
pub struct Parsed {
    pub hooks: Vec<HookDef>,
    pub warnings: Vec<String>,
}

/// Parse the event table `events` (the value of `"hooks"`) of `path`.
pub fn parse_events(path: &Path, events: &Value) -> Result<Parsed, HookConfigError> {
    let key_error = |key: String, problem: &str| HookConfigError::Key {
        path: path.to_owned(),
        key,
        problem: problem.to_owned(),
    };
    let Value::Object(map) = events else {
        return Err(key_error("hooks".into(), "must be a table of events"));
    };
    let mut parsed = Parsed::default();
    for (name, groups) in map {
        if SETTING_KEYS.contains(&name.as_str()) {
            continue;
        }
        let Some(event) = HookEventName::ALL.into_iter().find(|e| e.as_str() == name) else {
            parsed.warnings.push(format!(
                "{}: hooks of `{name}` do not run: rein runs hooks of {} only",
                path.display(),
                HookEventName::ALL.map(HookEventName::as_str).join(", ")
            ));
            continue;
        };
        let Value::Array(groups) = groups else {
            return Err(key_error(
                format!("hooks.{name}"),
                "must be a list of matcher groups",
            ));
        };
        for (g, group) in groups.iter().enumerate() {
            let at = format!("hooks.{name}[{g}]");
            parse_group(path, &at, event, g, group, &mut parsed)?;
        }
    }
    Ok(parsed)
}

fn parse_group(
    path: &Path,
    at: &str,
    event: HookEventName,
    group: usize,
    value: &Value,
    parsed: &mut Parsed,
) -> Result<(), HookConfigError> {
    let key_error = |key: String, problem: String| HookConfigError::Key {
        path: path.to_owned(),
        key,
        problem,
    };
    let Value::Object(map) = value else {
        return Err(key_error(at.to_owned(), "must be a table".into()));
    };
    let matcher = match map.get("matcher") {
        None | Some(Value::Null) => Matcher::any(),
        Some(Value::String(pattern)) => Matcher::new(pattern).map_err(|e| {
            key_error(
                format!("{at}.matcher"),
                format!("not a regular expression: {e}"),
            )
        })?,
        Some(_) => {
            return Err(key_error(
                format!("{at}.matcher"),
                "must be a string".into(),
            ))
        }
    };
    let Some(Value::Array(handlers)) = map.get("hooks") else {
        return Err(key_error(
            format!("{at}.hooks"),
            "must be a list of hooks".into(),
        ));
    };
    for (h, handler) in handlers.iter().enumerate() {
        let at = format!("{at}.hooks[{h}]");
        let Value::Object(handler) = handler else {
            return Err(key_error(at, "must be a table".into()));
        };
        match handler.get("type").and_then(Value::as_str) {
            Some("command") | None => {}
            Some(other) => {
                parsed.warnings.push(format!(
                    "{}: `{at}` does not run: rein runs hooks of type `command` only, not `{other}`",
                    path.display()
                ));
                continue;
            }
        }
        let Some(command) = handler.get("command").and_then(Value::as_str) else {
            return Err(key_error(
                format!("{at}.command"),
                "must be a string".into(),
            ));
        };
        let (timeout, on_error) = handler_limits(handler, &at, &key_error)?;
        parsed.hooks.push(HookDef {
            event,
            matcher: matcher.clone(),
            command: command.to_owned(),
            timeout,
            on_error,
            group,
            handler: h,
        });
    }
    Ok(())
}

/// A handler's `timeout` (Claude's `timeout`, Codex's `timeout_sec`: seconds either way)
/// and `on_error`, checked.
fn handler_limits(
    handler: &serde_json::Map<String, Value>,
    at: &str,
    key_error: &dyn Fn(String, String) -> HookConfigError,
) -> Result<(Duration, OnError), HookConfigError> {
    let timeout = match handler
        .get("timeout")
        .or_else(|| handler.get("timeout_sec"))
    {
        None => DEFAULT_TIMEOUT,
        Some(v) => match v.as_f64() {
            Some(secs) if secs > 0.0 && secs.is_finite() => Duration::from_secs_f64(secs),
            _ => {
                return Err(key_error(
                    format!("{at}.timeout"),
                    "must be a positive number of seconds".into(),
                ))
            }
        },
    };
    let on_error = match handler.get("on_error").and_then(Value::as_str) {
        None | Some("block") => OnError::Block,
        Some("allow") => OnError::Allow,
        Some(_) => {
            return Err(key_error(
                format!("{at}.on_error"),
                "must be \"block\" or \"allow\"".into(),
            ))
        }
    };
    Ok((timeout, on_error))
}

/// Read a JSON file whose `"hooks"` member is an event table (`hooks.json`, Claude's
/// `settings.json`). `Ok(None)`: the file does not exist, or has no hooks.
pub fn read_file(path: &Path) -> Result<Option<Parsed>, HookConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(HookConfigError::Read {
                path: path.to_owned(),
                source,
            })
        }
    };
    let value: Value = serde_json::from_str(&text).map_err(|source| HookConfigError::Json {
        path: path.to_owned(),
        source,
    })?;
    match value.get("hooks") {
        None | Some(Value::Null) => Ok(None),
        Some(events) => parse_events(path, events).map(Some),
    }
}
