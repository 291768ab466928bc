//! The built-in tools: the one place a tool is registered. One instance per process,
//! stateless per thread (a thread's background terminals and session grants live in its
//! `ThreadTools`, reached through the call's context); `rein-bootstrap` offers them to
//! every thread as its first tool source.

use std::path::PathBuf;
use std::sync::Arc;

use super::apply_patch::ApplyPatchTool;
use super::files::{GrepTool, ListDirTool, ReadFileTool};
use super::plan::UpdatePlanTool;
use super::policy::{PolicyConfig, PolicyEngine};
use super::sandbox::Sandbox;
use super::shell::ShellConfig;
use super::shell_tool::ShellTool;
use super::terminals::WriteStdinTool;
use super::Tool;

/// How the built-in tools are configured.
#[derive(Clone, Debug, Default)]
pub struct BuiltinConfig {
    pub shell: ShellConfig,
    /// Writable under workspace-write besides the cwd and the temp dir.
    pub extra_writable_roots: Vec<PathBuf>,
    /// Sandboxed commands may use the network.
    pub network_access: bool,
    /// The sandbox support to use; detected when `None`.
    pub sandbox: Option<Arc<Sandbox>>,
}

/// Every built-in tool, sharing one policy engine.
pub fn builtin_tools(config: BuiltinConfig) -> Vec<Arc<dyn Tool>> {
    let sandbox = config.sandbox.unwrap_or_else(Sandbox::detected);
    match (sandbox.mechanism(), sandbox.unavailable_reason()) {
        (Some(mechanism), _) => tracing::info!(?mechanism, "command sandbox available"),
        (None, reason) => tracing::warn!(
            reason = reason.unwrap_or_default(),
            "no command sandbox: sandboxed commands will be refused"
        ),
    }
    let policy = Arc::new(PolicyEngine::new(
        PolicyConfig {
            extra_writable_roots: config.extra_writable_roots,
            network_access: config.network_access,
        },
        sandbox.unavailable_reason().map(str::to_owned),
    ));
    vec![
        Arc::new(ShellTool::new(config.shell, Arc::clone(&policy), sandbox)),
        Arc::new(WriteStdinTool),
        Arc::new(ApplyPatchTool::new(policy)),
        Arc::new(ReadFileTool),
        Arc::new(ListDirTool),
        Arc::new(GrepTool),
        Arc::new(UpdatePlanTool),
    ]
}
