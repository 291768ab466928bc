//! MCP servers the client names in `session/new`, `session/load`, `session/resume` and
//! `session/fork`: they join that session's thread as one more tool source, through the
//! same supervisor (`rein-mcp`) that runs the servers of config.toml, so their calls are
//! tool facts like any other and the projection shows them without knowing they came from
//! the client. Each session has its own manager: the servers live as long as the session
//! and stop with it (close, or the end of the connection).
//!
//! Only stdio is offered (`mcpCapabilities` says so); an HTTP or SSE server is refused
//! with the request, before any thread is touched.

use std::collections::HashSet;
use std::sync::Arc;

use agent_client_protocol::v1::schema::McpServer;
use agent_client_protocol::Error;
use rein_core::tools::ThreadToolSource;
use rein_core::ThreadHandle;
use rein_mcp::{McpManager, ServerStatus};
use rein_protocol::ThreadSettings;

use crate::agent::invalid_params;

/// The servers a client asked for, checked; nothing runs until [`ClientServers::attach`].
pub struct ClientServers {
    manager: Option<Arc<McpManager>>,
}

impl ClientServers {
    /// Check `servers` and turn them into rein's MCP configuration. Names are reduced to
    /// the characters rein's server names allow (ACP's are free text), and made unique.
    pub fn of(servers: &[McpServer]) -> Result<Self, Error> {
        if servers.is_empty() {
            return Ok(Self { manager: None });
        }
        let table = table_of(servers)?;
        let env: rein_mcp::Env = Arc::new(|k: &str| std::env::var(k).ok());
        let manager = McpManager::new(&table, env)
            .map_err(|e| invalid_params(&format!("mcpServers: {e}")))?;
        Ok(Self {
            manager: Some(manager),
        })
    }

    /// Start the servers for `handle`'s thread and offer their tools to it; returns once
    /// each server is ready or has failed (a failed one is logged and left out, so the
    /// session still opens), so the session's first prompt already sees their tools.
    pub async fn attach(
        self,
        handle: &ThreadHandle,
        settings: &ThreadSettings,
    ) -> Option<Arc<McpManager>> {
        let manager = self.manager?;
        if let Some(source) = manager.for_thread(settings) {
            handle.add_tool_source(source);
        }
        for server in manager.servers_for(&settings.cwd) {
            match server.wait_settled().await {
                ServerStatus::Ready => {}
                status => tracing::warn!(
                    "the client's MCP server {} did not start: {status:?}",
                    server.name()
                ),
            }
        }
        Some(manager)
    }
}

/// `[mcp_servers]` as config.toml would say it, for the stdio servers of `servers`.
fn table_of(servers: &[McpServer]) -> Result<toml::Table, Error> {
    let mut table = toml::Table::new();
    let mut taken = HashSet::new();
    for server in servers {
        let McpServer::Stdio(stdio) = server else {
            return Err(invalid_params(
                "mcpServers: only stdio servers are supported (mcpCapabilities has neither http nor sse)",
            ));
        };
        let Some(command) = stdio.command.to_str() else {
            return Err(invalid_params(&format!(
                "mcpServers: the command of {:?} is not UTF-8",
                stdio.name
            )));
        };
        let mut name = rein_mcp::naming::sanitize(&stdio.name);
        let base = name.clone();
        let mut n = 1;
        while !taken.insert(name.clone()) {
            n += 1;
            name = format!("{base}_{n}");
        }
        let env: toml::Table = stdio
            .env
            .iter()
            .map(|v| (v.name.clone(), toml::Value::String(v.value.clone())))
            .collect();
        let mut entry = toml::Table::new();
        entry.insert("command".into(), toml::Value::String(command.to_owned()));
        entry.insert(
            "args".into(),
            toml::Value::Array(
                stdio
                    .args
                    .iter()
                    .cloned()
                    .map(toml::Value::String)
                    .collect(),
            ),
        );
        entry.insert("env".into(), toml::Value::Table(env));
        table.insert(name, toml::Value::Table(entry));
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::{EnvVariable, McpServerHttp, McpServerStdio};
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn stdio_servers_become_config_entries_with_unique_names() {
        let servers = vec![
            McpServer::Stdio(
                McpServerStdio::new("My files", "/usr/bin/files")
                    .args(vec!["--root".into(), "/tmp".into()])
                    .env(vec![EnvVariable::new("TOKEN", "t")]),
            ),
            McpServer::Stdio(McpServerStdio::new("My-files", "/usr/bin/other")),
        ];
        let table = table_of(&servers).unwrap();
        let expected: toml::Table = toml::from_str(
            r#"
            [My_files]
            command = "/usr/bin/files"
            args = ["--root", "/tmp"]
            env = { TOKEN = "t" }
            [My_files_2]
            command = "/usr/bin/other"
            args = []
            env = {}
            "#,
        )
        .unwrap();
        assert_eq!(table, expected);
        assert!(ClientServers::of(&servers).is_ok());
    }

    #[test]
    fn an_http_server_is_refused() {
        let servers = vec![McpServer::Http(McpServerHttp::new(
            "web",
            "http://127.0.0.1:1/mcp",
        ))];
        let error = table_of(&servers).unwrap_err();
        assert_eq!(error.code, agent_client_protocol::ErrorCode::INVALID_PARAMS);
    }
}
