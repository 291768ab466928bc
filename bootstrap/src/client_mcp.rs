//! MCP servers a client brings for one session (`rein acp`'s `mcpServers`): a supervisor of
//! their own, wired here so that front ends never name the supervisor. The servers live as
//! long as the session and stop with it.

use std::sync::Arc;

use rein_config::mcp::McpServerConfig;
use rein_core::tool_servers::ServerStatus;
use rein_core::tools::ThreadToolSource;
use rein_core::ThreadHandle;
use rein_mcp::McpManager;
use rein_protocol::ThreadSettings;

/// The supervisor of one session's client servers.
pub struct ClientMcp {
    manager: Arc<McpManager>,
}

impl ClientMcp {
    /// Supervise `configs` (already checked). `tokens` are the bearer tokens of HTTP
    /// servers, by the variable name their entry gives; any other variable is rein's
    /// environment, as for the servers of config.toml. Nothing runs before
    /// [`ClientMcp::attach`].
    pub fn new(configs: &[McpServerConfig], tokens: Vec<(String, String)>) -> Self {
        let env: rein_mcp::Env = Arc::new(move |k: &str| {
            tokens
                .iter()
                .find(|(var, _)| var == k)
                .map(|(_, token)| token.clone())
                .or_else(|| std::env::var(k).ok())
        });
        Self {
            manager: McpManager::new(configs, env),
        }
    }

    /// Start the servers for `handle`'s thread and offer their tools to it; returns once
    /// each server is ready or has failed, so the session's first prompt already sees their
    /// tools. Returns the servers that did not start, with how they ended (their tools are
    /// left out; the session still opens).
    pub async fn attach(
        &self,
        handle: &ThreadHandle,
        settings: &ThreadSettings,
    ) -> Vec<(String, ServerStatus)> {
        if let Some(source) = self.manager.for_thread(settings) {
            handle.add_tool_source(source);
        }
        let mut failed = Vec::new();
        for server in self.manager.servers_for(&settings.cwd) {
            let status = server.wait_settled().await;
            if status != ServerStatus::Ready {
                failed.push((server.name().to_owned(), status));
            }
        }
        failed
    }

    /// Stop every server.
    pub async fn shutdown(&self) {
        self.manager.shutdown().await;
    }
}
