//! What the MCP tests share: where scripts/test-setup.sh put the real servers, a kernel over
//! the scripted model with an MCP manager, and event helpers.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;

use rein_core::model::scripted::ScriptedModel;
use rein_core::model::{ModelInfo, StaticCatalog};
use rein_core::{EventStream, ThreadManager};
use rein_mcp::McpManager;
use rein_protocol::{
    ApprovalPolicy, EventMsg, SandboxPolicy, ThreadSettings, ToolAction, ToolOutcome, TurnBudget,
};

pub use crate::kernel::{fast_config, is_turn_end, until, MODEL};
use crate::test_setup;
pub use crate::test_setup::repo_root;

/// The entry point of `@modelcontextprotocol/server-everything` (run it with `node`).
/// Tests that use it are ignored without `rein_has_node`.
pub fn everything() -> PathBuf {
    test_setup::installed(
        "target/mcp-node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    )
}

/// The Python of the venv holding the MCP SDK (1.x) and `mcp-server-time`. Tests that use
/// it are ignored without `rein_has_python`.
pub fn python() -> PathBuf {
    test_setup::installed("target/mcp-venv/bin/python")
}

pub fn scripted_server() -> PathBuf {
    repo_root().join("tests/fixtures/mcp/scripted_server.py")
}

pub fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

pub fn env() -> rein_mcp::Env {
    Arc::new(|k: &str| std::env::var(k).ok())
}

pub fn mcp(config: &str) -> Arc<McpManager> {
    McpManager::new(&rein_config::mcp::parse_document(config).unwrap(), env())
}

pub fn kernel(model: Arc<ScriptedModel>, mcp: &Arc<McpManager>) -> ThreadManager {
    let catalog = Arc::new(StaticCatalog::new().with(
        ModelInfo {
            id: MODEL.into(),
            provider: "scripted".into(),
            context_window: Some(200_000),
            traits: Default::default(),
        },
        model,
    ));
    let manager = ThreadManager::builder(catalog)
        .config(fast_config())
        .build();
    manager.add_thread_tool_source(Arc::clone(mcp) as _);
    manager
}

pub fn settings(cwd: PathBuf) -> ThreadSettings {
    ThreadSettings {
        model: MODEL.into(),
        cwd,
        approval_policy: ApprovalPolicy::OnRequest,
        sandbox_policy: SandboxPolicy::WorkspaceWrite,
        sandbox_options: None,
        reasoning_effort: None,
        budget: TurnBudget::default(),
        instructions: String::new(),
    }
}

/// The action and outcome of every call of the events seen until the turn ended.
pub async fn calls_of_turn(events: &mut EventStream) -> Vec<(ToolAction, ToolOutcome)> {
    let mut actions = std::collections::HashMap::new();
    let mut calls = Vec::new();
    loop {
        let event = events.recv().await.expect("the thread ended");
        match &event.msg {
            EventMsg::ToolCallBegin {
                call_id, action, ..
            } => {
                actions.insert(call_id.clone(), action.clone());
            }
            EventMsg::ToolCallEnd {
                call_id, outcome, ..
            } => calls.push((actions.remove(call_id).unwrap(), outcome.clone())),
            _ if is_turn_end(&event) => {
                assert!(
                    matches!(event.msg, EventMsg::TurnCompleted { .. }),
                    "{event:?}"
                );
                return calls;
            }
            _ => {}
        }
    }
}

/// Whether process `pid` still exists (a zombie counts as gone).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}
