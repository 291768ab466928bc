//! Translation between the kernel's types and the Codex wire shapes: settings, user input,
//! history items, token usage.

use rein_app_server_protocol::{
    AskForApproval, FileUpdateChange, SandboxMode, SandboxPolicyWire, ThreadItem,
    TokenUsageBreakdown, UserInput,
};
use rein_protocol::{
    ApprovalPolicy, InputPart, Item, ReasoningEffort, SandboxOptions, SandboxPolicy, TokenUsage,
};
use serde_json::Value;

use crate::error::RpcError;

pub fn approval_policy_from_wire(value: &Value) -> Result<ApprovalPolicy, RpcError> {
    match value {
        Value::String(s) => s
            .parse()
            .map_err(|e: rein_protocol::UnknownPolicy| bad_field("approvalPolicy", e.to_string())),
        // Codex's granular policy asks for some kinds of approval: the nearest is on-request.
        Value::Object(map) if map.contains_key("granular") => Ok(ApprovalPolicy::OnRequest),
        _ => Err(bad_field(
            "approvalPolicy",
            "expected a string or a granular policy object".into(),
        )),
    }
}

pub fn approval_policy_to_wire(policy: ApprovalPolicy) -> AskForApproval {
    match policy {
        ApprovalPolicy::Untrusted => AskForApproval::Untrusted,
        // Codex v2 no longer advertises on-failure; on-request is its successor.
        ApprovalPolicy::OnRequest | ApprovalPolicy::OnFailure => AskForApproval::OnRequest,
        ApprovalPolicy::Never => AskForApproval::Never,
    }
}

pub fn sandbox_from_mode(mode: SandboxMode) -> SandboxPolicy {
    match mode {
        SandboxMode::ReadOnly => SandboxPolicy::ReadOnly,
        SandboxMode::WorkspaceWrite => SandboxPolicy::WorkspaceWrite,
        SandboxMode::DangerFullAccess => SandboxPolicy::DangerFullAccess,
    }
}

/// A `sandboxPolicy` object: the policy and every refinement it carries, all honoured
/// (writable roots must be absolute). An external sandbox means rein adds none.
pub fn sandbox_from_wire(
    policy: &SandboxPolicyWire,
) -> Result<(SandboxPolicy, SandboxOptions), RpcError> {
    Ok(match policy {
        SandboxPolicyWire::DangerFullAccess | SandboxPolicyWire::ExternalSandbox { .. } => {
            (SandboxPolicy::DangerFullAccess, SandboxOptions::default())
        }
        SandboxPolicyWire::ReadOnly { network_access } => (
            SandboxPolicy::ReadOnly,
            SandboxOptions {
                network_access: *network_access,
                ..SandboxOptions::default()
            },
        ),
        SandboxPolicyWire::WorkspaceWrite {
            writable_roots,
            network_access,
            exclude_tmpdir_env_var,
            exclude_slash_tmp,
        } => {
            let roots: Vec<std::path::PathBuf> = writable_roots
                .iter()
                .map(std::path::PathBuf::from)
                .collect();
            if let Some(relative) = roots.iter().find(|r| !r.is_absolute()) {
                return Err(bad_field(
                    "sandboxPolicy.writableRoots",
                    format!("must be absolute paths: {}", relative.display()),
                ));
            }
            (
                SandboxPolicy::WorkspaceWrite,
                SandboxOptions {
                    writable_roots: roots,
                    network_access: *network_access,
                    exclude_tmpdir_env_var: *exclude_tmpdir_env_var,
                    exclude_slash_tmp: *exclude_slash_tmp,
                },
            )
        }
    })
}

/// The wire form of a thread's policy with its refinements (none: the defaults).
pub fn sandbox_to_wire(
    policy: SandboxPolicy,
    options: Option<&SandboxOptions>,
) -> SandboxPolicyWire {
    let default = SandboxOptions::default();
    let o = options.unwrap_or(&default);
    match policy {
        SandboxPolicy::ReadOnly => SandboxPolicyWire::ReadOnly {
            network_access: o.network_access,
        },
        SandboxPolicy::WorkspaceWrite => SandboxPolicyWire::WorkspaceWrite {
            writable_roots: o
                .writable_roots
                .iter()
                .map(|r| r.display().to_string())
                .collect(),
            network_access: o.network_access,
            exclude_tmpdir_env_var: o.exclude_tmpdir_env_var,
            exclude_slash_tmp: o.exclude_slash_tmp,
        },
        SandboxPolicy::DangerFullAccess => SandboxPolicyWire::DangerFullAccess,
    }
}

/// Codex's effort, as any non-empty name; whether the model takes it is the kernel's
/// check when the turn starts (against what the model catalog advertises).
pub fn effort_from_wire(effort: &str) -> Result<ReasoningEffort, RpcError> {
    ReasoningEffort::new(effort).map_err(|e| bad_field("effort", e.to_string()))
}

pub fn input_from_wire(input: &[UserInput]) -> Result<Vec<InputPart>, RpcError> {
    input
        .iter()
        .map(|part| match part {
            UserInput::Text { text, .. } => Ok(InputPart::text(text.clone())),
            UserInput::Image { url: Some(url), .. } => Ok(InputPart::Image { url: url.clone() }),
            UserInput::Image { .. } => Err(bad_field(
                "input",
                "an image by file id is not supported; send a url".into(),
            )),
            UserInput::LocalImage { path } => Ok(InputPart::Image {
                url: format!("file://{path}"),
            }),
            // The turn handler reads a named skill into its part before converting the
            // rest (`rein_bootstrap::Kernel::attach_skills`): one left here is a bug.
            UserInput::Skill { name, .. } => Err(RpcError::internal(format!(
                "the skill {name} was not attached"
            ))),
        })
        .collect()
}

pub fn input_to_wire(parts: &[InputPart]) -> Vec<UserInput> {
    parts
        .iter()
        .map(|p| match p {
            InputPart::Text { text } => UserInput::Text {
                text: text.clone(),
                text_elements: Vec::new(),
            },
            InputPart::Image { url } => match url.strip_prefix("file://") {
                Some(path) => UserInput::LocalImage { path: path.into() },
                None => UserInput::Image {
                    url: Some(url.clone()),
                    file_id: None,
                },
            },
            InputPart::Skill { name, path, .. } => UserInput::Skill {
                name: name.clone(),
                path: path.display().to_string(),
            },
        })
        .collect()
}

/// The client-visible form of a history item; `None` for items clients do not see as
/// items of their own (tool calls and outputs are shown through their tool's item).
pub fn item_to_wire(item: &Item) -> Option<ThreadItem> {
    match item {
        Item::UserMessage { id, content } => Some(ThreadItem::UserMessage {
            id: id.to_string(),
            client_id: None,
            content: input_to_wire(content),
        }),
        Item::AgentMessage { id, text, .. } => Some(ThreadItem::AgentMessage {
            id: id.to_string(),
            text: text.clone(),
            phase: None,
        }),
        Item::Reasoning { id, text, .. } => Some(ThreadItem::Reasoning {
            id: id.to_string(),
            summary: vec![text.clone()],
            content: Vec::new(),
        }),
        Item::ToolCall { .. }
        | Item::ToolOutput { .. }
        | Item::DeveloperMessage { .. }
        | Item::Interruption { .. } => None,
    }
}

pub fn usage_to_wire(usage: &TokenUsage) -> TokenUsageBreakdown {
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    TokenUsageBreakdown {
        total_tokens: n(usage.total_tokens),
        input_tokens: n(usage.input_tokens),
        cached_input_tokens: n(usage.cached_input_tokens),
        output_tokens: n(usage.output_tokens),
        reasoning_output_tokens: n(usage.reasoning_output_tokens),
    }
}

/// One changed file as Codex's `FileUpdateChange`.
pub fn file_change_to_wire(change: &rein_protocol::FileDiff) -> FileUpdateChange {
    let kind = match change.kind {
        rein_protocol::FileChangeKind::Add => serde_json::json!({ "type": "add" }),
        rein_protocol::FileChangeKind::Delete => serde_json::json!({ "type": "delete" }),
        rein_protocol::FileChangeKind::Update => serde_json::json!({
            "type": "update",
            "move_path": change.move_to.as_ref().map(|p| p.display().to_string()),
        }),
    };
    FileUpdateChange {
        path: change.path.display().to_string(),
        kind,
        diff: change.unified_diff.clone(),
    }
}

fn bad_field(field: &str, detail: String) -> RpcError {
    RpcError::invalid_params(format!("{field}: {detail}"), Some(field.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn decode(value: Value) -> Result<(SandboxPolicy, SandboxOptions), String> {
        let wire: SandboxPolicyWire = serde_json::from_value(value).map_err(|e| e.to_string())?;
        sandbox_from_wire(&wire).map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn every_sandbox_policy_field_is_honoured_or_refused() {
        assert_eq!(
            decode(json!({"type": "workspaceWrite", "writableRoots": ["/data"],
                "networkAccess": true, "excludeTmpdirEnvVar": true, "excludeSlashTmp": true}))
            .unwrap(),
            (
                SandboxPolicy::WorkspaceWrite,
                SandboxOptions {
                    writable_roots: vec!["/data".into()],
                    network_access: true,
                    exclude_tmpdir_env_var: true,
                    exclude_slash_tmp: true,
                }
            )
        );
        assert_eq!(
            decode(json!({"type": "readOnly", "networkAccess": true})).unwrap(),
            (
                SandboxPolicy::ReadOnly,
                SandboxOptions {
                    network_access: true,
                    ..SandboxOptions::default()
                }
            )
        );
        let relative = decode(json!({"type": "workspaceWrite", "writableRoots": ["data"]}));
        assert!(relative.unwrap_err().contains("writableRoots"));
        let unknown = decode(json!({"type": "readOnly", "readOnlyAccess": {"type": "restricted"}}));
        assert!(unknown.unwrap_err().contains("readOnlyAccess"));
        // What goes out is what came in.
        let (policy, options) =
            decode(json!({"type": "workspaceWrite", "writableRoots": ["/data"],
            "excludeSlashTmp": true}))
            .unwrap();
        assert_eq!(
            serde_json::to_value(sandbox_to_wire(policy, Some(&options))).unwrap(),
            json!({"type": "workspaceWrite", "writableRoots": ["/data"], "networkAccess": false,
                "excludeTmpdirEnvVar": false, "excludeSlashTmp": true})
        );
    }
}
