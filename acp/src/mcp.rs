//! MCP servers the client names in `session/new`, `session/load`, `session/resume` and
//! `session/fork`: they join that session's thread as one more tool source, through the
//! same supervisor (`rein-mcp`) that runs the servers of config.toml, so their calls are
//! tool facts like any other and the projection shows them without knowing they came from
//! the client. Each session has its own manager: the servers live as long as the session
//! and stop with it (close, or the end of the connection).
//!
//! Stdio and streamable-HTTP servers are offered (`mcpCapabilities.http`); an SSE server
//! (the transport MCP deprecated) is refused with the request, before any thread is
//! touched. Here each becomes a [`ClientServer`]; bootstrap checks it and turns it into
//! rein's configuration (`rein_bootstrap::client_mcp`, which says how headers and tokens
//! are kept).

use agent_client_protocol::v1::schema::{McpServer, McpServerStdio};
use agent_client_protocol::Error;
use rein_bootstrap::client_mcp::{ClientMcp, ClientServer};
use rein_core::ThreadHandle;
use rein_protocol::ThreadSettings;

use crate::agent::invalid_params;

/// The servers a client asked for, checked; nothing runs until [`ClientServers::attach`].
pub struct ClientServers {
    servers: Option<ClientMcp>,
}

impl ClientServers {
    /// Check `servers` (bootstrap turns them into rein's MCP configuration: names
    /// reduced to what rein's server names allow, made unique; a refusal names why).
    pub fn of(servers: &[McpServer]) -> Result<Self, Error> {
        if servers.is_empty() {
            return Ok(Self { servers: None });
        }
        let servers = ClientMcp::new(&described(servers)?)
            .map_err(|e| invalid_params(&format!("mcpServers: {e}")))?;
        Ok(Self {
            servers: Some(servers),
        })
    }

    /// Start the servers for `handle`'s thread and offer their tools to it, once each is
    /// ready or has failed (see [`ClientMcp::attach`]); the servers, to stop with the
    /// session.
    pub async fn attach(
        self,
        handle: &ThreadHandle,
        settings: &ThreadSettings,
    ) -> Option<ClientMcp> {
        let servers = self.servers?;
        for (name, status) in servers.attach(handle, settings).await {
            tracing::warn!("the client's MCP server {name} did not start: {status:?}");
        }
        Some(servers)
    }
}

/// `servers` as rein's bootstrap takes a client's servers.
fn described(servers: &[McpServer]) -> Result<Vec<ClientServer>, Error> {
    servers
        .iter()
        .map(|server| match server {
            McpServer::Stdio(stdio) => stdio_server(stdio),
            McpServer::Http(http) => Ok(ClientServer::Http {
                name: http.name.clone(),
                url: http.url.clone(),
                headers: http
                    .headers
                    .iter()
                    .map(|h| (h.name.clone(), h.value.clone()))
                    .collect(),
            }),
            _ => Err(invalid_params(
                "mcpServers: only stdio and http servers are supported (mcpCapabilities has no sse)",
            )),
        })
        .collect()
}

fn stdio_server(stdio: &McpServerStdio) -> Result<ClientServer, Error> {
    let Some(command) = stdio.command.to_str() else {
        return Err(invalid_params(&format!(
            "mcpServers: the command of {:?} is not UTF-8",
            stdio.name
        )));
    };
    Ok(ClientServer::Stdio {
        name: stdio.name.clone(),
        command: command.to_owned(),
        args: stdio.args.clone(),
        env: stdio
            .env
            .iter()
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::{EnvVariable, HttpHeader, McpServerHttp, McpServerSse};
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn stdio_and_http_servers_are_described_as_given() {
        let servers = vec![
            McpServer::Stdio(
                McpServerStdio::new("My files", "/usr/bin/files")
                    .args(vec!["--root".into(), "/tmp".into()])
                    .env(vec![EnvVariable::new("TOKEN", "t")]),
            ),
            McpServer::Http(
                McpServerHttp::new("web", "http://127.0.0.1:1/mcp")
                    .headers(vec![HttpHeader::new("authorization", "bearer s3cret")]),
            ),
        ];
        assert_eq!(
            described(&servers).unwrap(),
            vec![
                ClientServer::Stdio {
                    name: "My files".into(),
                    command: "/usr/bin/files".into(),
                    args: vec!["--root".into(), "/tmp".into()],
                    env: vec![("TOKEN".into(), "t".into())],
                },
                ClientServer::Http {
                    name: "web".into(),
                    url: "http://127.0.0.1:1/mcp".into(),
                    headers: vec![("authorization".into(), "bearer s3cret".into())],
                },
            ]
        );
        assert!(ClientServers::of(&servers).is_ok());
    }

    #[test]
    fn sse_servers_and_headers_the_transport_owns_are_refused() {
        let refused = |server: McpServer| {
            let error = ClientServers::of(&[server]).err().unwrap();
            assert_eq!(error.code, agent_client_protocol::ErrorCode::INVALID_PARAMS);
            error.message
        };
        let http = |header: HttpHeader| {
            McpServer::Http(
                McpServerHttp::new("web", "http://127.0.0.1:1/mcp").headers(vec![header]),
            )
        };
        refused(McpServer::Sse(McpServerSse::new(
            "old",
            "http://127.0.0.1:1/sse",
        )));
        refused(http(HttpHeader::new("Authorization", "Basic dXNlcg==")));
        refused(http(HttpHeader::new("Mcp-Session-Id", "x")));
        // What the configuration's own checks refuse reaches the client too.
        refused(http(HttpHeader::new("bad header", "x")));
        refused(McpServer::Http(McpServerHttp::new(
            "web",
            "ftp://127.0.0.1/mcp",
        )));
    }
}
