//! MCP servers the client names in `session/new`, `session/load`, `session/resume` and
//! `session/fork`: they join that session's thread as one more tool source, through the
//! same supervisor (`rein-mcp`) that runs the servers of config.toml, so their calls are
//! tool facts like any other and the projection shows them without knowing they came from
//! the client. Each session has its own manager: the servers live as long as the session
//! and stop with it (close, or the end of the connection).
//!
//! Stdio and streamable-HTTP servers are offered (`mcpCapabilities.http`); an SSE server
//! (the transport MCP deprecated) is refused with the request, before any thread is
//! touched. An HTTP server's headers are sent as given, except `Authorization: Bearer`,
//! which goes through the transport's own token slot (rein-mcp sets that header itself and
//! refuses it among the plain ones): the token is kept in this session's manager, never
//! in rein's environment. Other headers the transport owns are refused.

use std::collections::{BTreeMap, HashSet};

use agent_client_protocol::v1::schema::{McpServer, McpServerHttp, McpServerStdio};
use agent_client_protocol::Error;
use rein_bootstrap::client_mcp::ClientMcp;
use rein_config::mcp::{self, McpServerConfig, Transport};
use rein_core::ThreadHandle;
use rein_protocol::ThreadSettings;

use crate::agent::invalid_params;

/// The servers a client asked for, checked; nothing runs until [`ClientServers::attach`].
pub struct ClientServers {
    servers: Option<ClientMcp>,
}

impl ClientServers {
    /// Check `servers` and turn them into rein's MCP configuration. Names are reduced to
    /// the characters rein's server names allow (ACP's are free text), and made unique.
    pub fn of(servers: &[McpServer]) -> Result<Self, Error> {
        if servers.is_empty() {
            return Ok(Self { servers: None });
        }
        let (configs, tokens) = configs_of(servers)?;
        Ok(Self {
            servers: Some(ClientMcp::new(&configs, tokens)),
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

/// The bearer tokens of HTTP servers, by the variable name their entry gives.
type Tokens = Vec<(String, String)>;

/// The configurations of `servers`, as `[mcp_servers]` would give them with Codex's
/// defaults, and the bearer tokens they refer to. Names are reduced to the characters
/// rein's server names allow (ACP's are free text), and made unique; the result passes the
/// same check as config.toml's servers.
fn configs_of(servers: &[McpServer]) -> Result<(Vec<McpServerConfig>, Tokens), Error> {
    let mut configs = Vec::new();
    let mut tokens = Tokens::new();
    let mut taken = HashSet::new();
    for server in servers {
        let (name, transport) = match server {
            McpServer::Stdio(stdio) => (unique(&stdio.name, &mut taken), stdio_transport(stdio)?),
            McpServer::Http(http) => {
                let name = unique(&http.name, &mut taken);
                // Named after the unique name, so two servers never share one; the `:`
                // keeps it apart from any real environment variable.
                let var = format!("acp-client-token:{name}");
                let (transport, token) = http_transport(http, &var)?;
                tokens.extend(token.map(|token| (var, token)));
                (name, transport)
            }
            _ => {
                return Err(invalid_params(
                    "mcpServers: only stdio and http servers are supported (mcpCapabilities has no sse)",
                ))
            }
        };
        configs.push(McpServerConfig::new(name, transport));
    }
    mcp::check(&configs).map_err(|e| invalid_params(&format!("mcpServers: {e}")))?;
    Ok((configs, tokens))
}

fn unique(given: &str, taken: &mut HashSet<String>) -> String {
    let base = mcp::sanitize(given);
    let mut name = base.clone();
    let mut n = 1;
    while !taken.insert(name.clone()) {
        n += 1;
        name = format!("{base}_{n}");
    }
    name
}

fn stdio_transport(stdio: &McpServerStdio) -> Result<Transport, Error> {
    let Some(command) = stdio.command.to_str() else {
        return Err(invalid_params(&format!(
            "mcpServers: the command of {:?} is not UTF-8",
            stdio.name
        )));
    };
    Ok(Transport::Stdio {
        command: command.to_owned(),
        args: stdio.args.clone(),
        env: stdio
            .env
            .iter()
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect(),
        env_vars: Vec::new(),
        cwd: None,
    })
}

/// The transport of an HTTP server, and its bearer token (which it names `token_var`).
fn http_transport(
    http: &McpServerHttp,
    token_var: &str,
) -> Result<(Transport, Option<String>), Error> {
    let mut headers = BTreeMap::new();
    let mut token = None;
    for header in &http.headers {
        if header.name.eq_ignore_ascii_case("authorization") {
            let bearer = header
                .value
                .trim()
                .split_once(' ')
                .filter(|(scheme, rest)| {
                    scheme.eq_ignore_ascii_case("bearer") && !rest.trim().is_empty()
                });
            let Some((_, rest)) = bearer else {
                return Err(invalid_params(&format!(
                    "mcpServers: {:?}: only a Bearer token is supported in Authorization",
                    http.name
                )));
            };
            token = Some(rest.trim().to_owned());
            continue;
        }
        if mcp::RESERVED_HEADERS
            .iter()
            .any(|r| r.eq_ignore_ascii_case(&header.name))
        {
            return Err(invalid_params(&format!(
                "mcpServers: {:?}: the header {} is set by rein's MCP transport",
                http.name, header.name
            )));
        }
        headers.insert(header.name.clone(), header.value.clone());
    }
    let transport = Transport::StreamableHttp {
        url: http.url.clone(),
        bearer_token_env_var: token.as_ref().map(|_| token_var.to_owned()),
        http_headers: headers,
        env_http_headers: BTreeMap::new(),
    };
    Ok((transport, token))
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::{EnvVariable, HttpHeader, McpServerSse};
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn stdio_and_http_servers_become_configurations_with_unique_names() {
        let servers = vec![
            McpServer::Stdio(
                McpServerStdio::new("My files", "/usr/bin/files")
                    .args(vec!["--root".into(), "/tmp".into()])
                    .env(vec![EnvVariable::new("TOKEN", "t")]),
            ),
            McpServer::Stdio(McpServerStdio::new("My-files", "/usr/bin/other")),
            McpServer::Http(
                McpServerHttp::new("web", "http://127.0.0.1:1/mcp").headers(vec![
                    HttpHeader::new("X-Team", "rein"),
                    HttpHeader::new("authorization", "bearer  s3cret "),
                ]),
            ),
            McpServer::Http(McpServerHttp::new("web", "https://example.test/mcp")),
        ];
        let (configs, tokens) = configs_of(&servers).unwrap();
        let stdio = |command: &str, args: &[&str], env: &[(&str, &str)]| Transport::Stdio {
            command: command.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            env_vars: Vec::new(),
            cwd: None,
        };
        let http =
            |url: &str, headers: &[(&str, &str)], token: Option<&str>| Transport::StreamableHttp {
                url: url.into(),
                bearer_token_env_var: token.map(str::to_owned),
                http_headers: headers
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
                env_http_headers: BTreeMap::new(),
            };
        let expected = vec![
            McpServerConfig::new(
                "My_files".into(),
                stdio("/usr/bin/files", &["--root", "/tmp"], &[("TOKEN", "t")]),
            ),
            McpServerConfig::new("My_files_2".into(), stdio("/usr/bin/other", &[], &[])),
            McpServerConfig::new(
                "web".into(),
                http(
                    "http://127.0.0.1:1/mcp",
                    &[("X-Team", "rein")],
                    Some("acp-client-token:web"),
                ),
            ),
            McpServerConfig::new("web_2".into(), http("https://example.test/mcp", &[], None)),
        ];
        assert_eq!(configs, expected);
        assert_eq!(
            tokens,
            vec![("acp-client-token:web".to_owned(), "s3cret".to_owned())]
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
        refused(http(HttpHeader::new("Authorization", "Bearer ")));
        refused(http(HttpHeader::new("Mcp-Session-Id", "x")));
        // What the configuration's own checks refuse reaches the client too.
        refused(http(HttpHeader::new("bad header", "x")));
        refused(McpServer::Http(McpServerHttp::new(
            "web",
            "ftp://127.0.0.1/mcp",
        )));
    }
}
