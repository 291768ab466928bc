//! The `config` overrides of `thread/start` that rein applies to the one thread: Codex's
//! clients send configuration keys there (dotted, as `-c` takes them, or nested). A key
//! rein applies per thread is honoured or refused with an error naming it, never dropped;
//! keys that configure the process rather than a thread (`features.*`, `mcp_servers`, …)
//! are the server's own configuration's business and are not read here.

use rein_app_server_protocol::SandboxMode;
use rein_protocol::{ApprovalPolicy, SandboxPolicy, Strategy};
use serde_json::{Map, Value};

use crate::convert::{approval_policy_from_wire, sandbox_from_mode};
use crate::error::RpcError;

/// What a `thread/start`'s `config` asks of the new thread. The request's own fields
/// (`model`, `approvalPolicy`, `sandbox`) win over these, as in Codex.
#[derive(Debug, Default, PartialEq)]
pub struct ThreadOverrides {
    pub strategy: Option<Strategy>,
    pub model: Option<String>,
    pub approval_policy: Option<ApprovalPolicy>,
    pub sandbox: Option<SandboxPolicy>,
}

/// Read the keys rein applies per thread from a `config` map.
pub fn thread_overrides(config: Option<&Map<String, Value>>) -> Result<ThreadOverrides, RpcError> {
    let Some(config) = config else {
        return Ok(ThreadOverrides::default());
    };
    let mut out = ThreadOverrides::default();
    if let Some(v) = lookup(config, &["agents", "strategy"]) {
        out.strategy = Some(match v.as_str() {
            Some("single") => Strategy::Single,
            Some("planner") => Strategy::Planner,
            _ => {
                return Err(bad(
                    "agents.strategy",
                    "expected \"single\" or \"planner\"",
                    v,
                ))
            }
        });
    }
    if let Some(v) = lookup(config, &["model"]) {
        let model = v.as_str().filter(|m| !m.is_empty());
        out.model = Some(
            model
                .ok_or_else(|| bad("model", "expected a model name", v))?
                .into(),
        );
    }
    if let Some(v) = lookup(config, &["approval_policy"]) {
        out.approval_policy = Some(
            approval_policy_from_wire(v)
                .map_err(|_| bad("approval_policy", "expected an approval policy", v))?,
        );
    }
    if let Some(v) = lookup(config, &["sandbox_mode"]) {
        let mode: SandboxMode = serde_json::from_value(v.clone()).map_err(|_| {
            bad(
                "sandbox_mode",
                "expected \"read-only\", \"workspace-write\" or \"danger-full-access\"",
                v,
            )
        })?;
        out.sandbox = Some(sandbox_from_mode(mode));
    }
    Ok(out)
}

/// `path` as a dotted key (`"agents.strategy"`) or nested objects (`{"agents": {...}}`).
fn lookup<'a>(config: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    if let Some(v) = config.get(&path.join(".")) {
        return Some(v);
    }
    let (first, rest) = path.split_first()?;
    let mut value = config.get(*first)?;
    for key in rest {
        value = value.as_object()?.get(*key)?;
    }
    Some(value)
}

fn bad(key: &str, expected: &str, got: &Value) -> RpcError {
    let field = format!("config.{key}");
    let got = crate::error::truncate(&got.to_string(), 80);
    RpcError::invalid_params(format!("{field}: {expected}, got {got}"), Some(field))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(v: Value) -> Result<ThreadOverrides, RpcError> {
        thread_overrides(v.as_object())
    }

    #[test]
    fn dotted_and_nested_keys_are_read_alike() {
        let want = ThreadOverrides {
            strategy: Some(Strategy::Planner),
            model: Some("m".into()),
            approval_policy: Some(ApprovalPolicy::Never),
            sandbox: Some(SandboxPolicy::ReadOnly),
        };
        let dotted = json!({"agents.strategy": "planner", "model": "m",
            "approval_policy": "never", "sandbox_mode": "read-only", "features.plugins": false});
        assert_eq!(read(dotted).unwrap(), want);
        let nested = json!({"agents": {"strategy": "planner"}, "model": "m",
            "approval_policy": "never", "sandbox_mode": "read-only"});
        assert_eq!(read(nested).unwrap(), want);
        assert_eq!(read(json!({})).unwrap(), ThreadOverrides::default());
    }

    #[test]
    fn a_bad_value_is_refused_naming_the_key() {
        for (config, key) in [
            (
                json!({"agents.strategy": "swarm"}),
                "config.agents.strategy",
            ),
            (json!({"approval_policy": 3}), "config.approval_policy"),
            (json!({"sandbox_mode": "open"}), "config.sandbox_mode"),
            (json!({"model": ""}), "config.model"),
        ] {
            let e = read(config).unwrap_err();
            assert!(e.message.contains(key), "{}", e.message);
        }
    }
}
