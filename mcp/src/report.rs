//! The status listing front ends show (app-server `mcpServerStatus/list`): one report per
//! configured server, in the port's vocabulary.

use rein_core::tool_servers::{ServerReport, ServerStatus};

use crate::manager::McpManager;
use crate::server::Server;

impl McpManager {
    /// Every configured server, with the most advanced of its instances (one per working
    /// directory).
    pub fn reports(&self) -> Vec<ServerReport> {
        let running = self.running();
        self.configs()
            .iter()
            .map(|config| {
                let server: Option<&Server> = running
                    .iter()
                    .filter(|s| s.name() == config.name && **s.config() == **config)
                    .max_by_key(|s| match s.status() {
                        ServerStatus::Ready => 3,
                        ServerStatus::Starting => 2,
                        ServerStatus::Failed { .. } => 1,
                        ServerStatus::Stopped { .. } => 0,
                    });
                ServerReport {
                    name: config.name.clone(),
                    enabled: config.enabled,
                    bearer_token: config.bearer_token_env_var().is_some(),
                    status: server.map(Server::status),
                    tools: server
                        .map(|s| {
                            s.listed_tools()
                                .into_iter()
                                .filter(|t| config.offers(&t.name))
                                .filter_map(|t| {
                                    Some((t.name.to_string(), serde_json::to_value(&t).ok()?))
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                    server_info: server
                        .and_then(Server::server_info)
                        .and_then(|i| serde_json::to_value(i).ok()),
                    listing_warnings: server.map(Server::listing_warnings).unwrap_or_default(),
                }
            })
            .collect()
    }
}
