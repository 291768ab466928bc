//! MCP servers a client brings for one session (`rein acp`'s `mcpServers`): a supervisor of
//! their own, wired here so that front ends never name the supervisor or the
//! configuration's types. A front end describes each server as a [`ClientServer`]; here
//! it becomes the configuration `[mcp_servers]` would give with Codex's defaults, checked
//! as config.toml's servers are. The servers live as long as the session and stop with it.
//!
//! An HTTP server's `Authorization: Bearer` header goes through the transport's own token
//! slot (rein-mcp sets that header itself and refuses it among the plain ones): the token
//! is kept in this session's supervisor, never in rein's environment. Other headers the
//! transport owns are refused.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use rein_config::mcp::{self, McpServerConfig, Transport};
use rein_core::tool_servers::ServerStatus;
use rein_core::tools::ThreadToolSource;
use rein_core::ThreadHandle;
use rein_mcp::McpManager;
use rein_protocol::ThreadSettings;

/// A server as a client describes it. `name` is free text (it is reduced to the characters
/// rein's server names allow, and made unique).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientServer {
    Stdio {
        name: String,
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        name: String,
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// Why a client's servers cannot be run; nothing was started.
#[derive(Debug, thiserror::Error)]
pub enum ClientServerError {
    #[error("{server:?}: only a Bearer token is supported in Authorization")]
    NotBearer { server: String },
    #[error("{server:?}: the header {header} is set by rein's MCP transport")]
    ReservedHeader { server: String, header: String },
    /// What the configuration's own checks refuse (a bad header name, a URL that is not
    /// HTTP).
    #[error("{0}")]
    Invalid(String),
}

/// The supervisor of one session's client servers.
pub struct ClientMcp {
    manager: Arc<McpManager>,
}

impl ClientMcp {
    /// Check `servers` and supervise them; nothing runs before [`ClientMcp::attach`].
    /// Their bearer tokens are theirs; any other variable an entry names is rein's
    /// environment, as for the servers of config.toml.
    pub fn new(servers: &[ClientServer]) -> Result<Self, ClientServerError> {
        let (configs, tokens) = configs_of(servers)?;
        let env: rein_mcp::Env = Arc::new(move |k: &str| {
            tokens
                .iter()
                .find(|(var, _)| var == k)
                .map(|(_, token)| token.clone())
                .or_else(|| std::env::var(k).ok())
        });
        Ok(Self {
            manager: McpManager::new(&configs, env),
        })
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

/// The bearer tokens of HTTP servers, by the variable name their entry gives.
pub type Tokens = Vec<(String, String)>;

/// The configurations of `servers` (what [`ClientMcp::new`] supervises) and the bearer
/// tokens they refer to.
pub fn configs_of(
    servers: &[ClientServer],
) -> Result<(Vec<McpServerConfig>, Tokens), ClientServerError> {
    let mut configs = Vec::new();
    let mut tokens = Tokens::new();
    let mut taken = HashSet::new();
    for server in servers {
        let config = match server {
            ClientServer::Stdio {
                name,
                command,
                args,
                env,
            } => {
                let transport = Transport::Stdio {
                    command: command.clone(),
                    args: args.clone(),
                    env: env.iter().cloned().collect(),
                    env_vars: Vec::new(),
                    cwd: None,
                };
                McpServerConfig::new(unique(name, &mut taken), transport)
            }
            ClientServer::Http { name, url, headers } => {
                let unique_name = unique(name, &mut taken);
                // Named after the unique name, so two servers never share one; the `:`
                // keeps it apart from any real environment variable.
                let var = format!("acp-client-token:{unique_name}");
                let (transport, token) = http_transport(name, url, headers, &var)?;
                tokens.extend(token.map(|token| (var, token)));
                McpServerConfig::new(unique_name, transport)
            }
        };
        configs.push(config);
    }
    mcp::check(&configs).map_err(|e| ClientServerError::Invalid(e.to_string()))?;
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

/// The transport of an HTTP server, and its bearer token (which it names `token_var`).
fn http_transport(
    server: &str,
    url: &str,
    given: &[(String, String)],
    token_var: &str,
) -> Result<(Transport, Option<String>), ClientServerError> {
    let mut headers = BTreeMap::new();
    let mut token = None;
    for (name, value) in given {
        if name.eq_ignore_ascii_case("authorization") {
            let bearer = value.trim().split_once(' ').filter(|(scheme, rest)| {
                scheme.eq_ignore_ascii_case("bearer") && !rest.trim().is_empty()
            });
            let Some((_, rest)) = bearer else {
                return Err(ClientServerError::NotBearer {
                    server: server.to_owned(),
                });
            };
            token = Some(rest.trim().to_owned());
            continue;
        }
        if mcp::RESERVED_HEADERS
            .iter()
            .any(|r| r.eq_ignore_ascii_case(name))
        {
            return Err(ClientServerError::ReservedHeader {
                server: server.to_owned(),
                header: name.clone(),
            });
        }
        headers.insert(name.clone(), value.clone());
    }
    let transport = Transport::StreamableHttp {
        url: url.to_owned(),
        bearer_token_env_var: token.as_ref().map(|_| token_var.to_owned()),
        http_headers: headers,
        env_http_headers: BTreeMap::new(),
    };
    Ok((transport, token))
}
