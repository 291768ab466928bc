//! MCP servers for IDEs: `mcpServerStatus/list` (every configured server, its state and
//! tools), `config/mcpServer/reload`, `mcpServer/tool/call` (a tool of a thread's server
//! called by the client itself), and the `mcpServer/startupStatus/updated` notifications a
//! connection receives as servers start, fail and stop.

use rein_app_server_protocol::{
    ListMcpServerStatusParams, ListMcpServerStatusResponse, McpAuthStatus,
    McpServerConnectionStatus, McpServerRefreshResponse, McpServerStartupState, McpServerStatus,
    McpServerStatusUpdatedNotification, McpServerToolCallParams, McpServerToolCallResponse,
    ServerNotification,
};
use rein_mcp::{CallError, McpManager, Server, ServerStatus, StatusUpdate};

use super::loaded;
use crate::dispatch::ServerState;
use crate::error::RpcError;
use crate::outbound::Outbound;

pub fn status_list(
    state: &ServerState,
    p: ListMcpServerStatusParams,
) -> Result<ListMcpServerStatusResponse, RpcError> {
    let data = match &state.kernel.mcp {
        None => Vec::new(),
        Some(mcp) => statuses(mcp)
            .into_iter()
            .filter(|s| p.server_name.as_ref().is_none_or(|n| *n == s.name))
            .collect(),
    };
    Ok(ListMcpServerStatusResponse {
        data,
        next_cursor: None,
    })
}

pub async fn reload(state: &ServerState) -> Result<McpServerRefreshResponse, RpcError> {
    state
        .kernel
        .reload_mcp()
        .await
        .map_err(|e| RpcError::invalid_request(e.to_string()))?;
    Ok(McpServerRefreshResponse {})
}

/// The server of the thread's working directory (started now if it is not running yet)
/// answers; its result is passed on as it is, `isError` included.
pub async fn tool_call(
    state: &ServerState,
    p: McpServerToolCallParams,
) -> Result<McpServerToolCallResponse, RpcError> {
    let thread = loaded(state, &p.thread_id)?;
    let cwd = thread.meta().settings.cwd.clone();
    let server = state
        .kernel
        .mcp
        .as_ref()
        .and_then(|mcp| {
            mcp.servers_for(&cwd)
                .into_iter()
                .find(|s| s.name() == p.server)
        })
        .ok_or_else(|| {
            RpcError::invalid_request(format!(
                "no enabled MCP server '{}' is configured",
                p.server
            ))
        })?;
    let result = server
        .call_tool(&p.tool, p.arguments, p.meta)
        .await
        .map_err(|e| match e {
            CallError::Invalid(message) => RpcError::invalid_request(message),
            CallError::Failed(message) => RpcError::internal(message),
        })?;
    Ok(McpServerToolCallResponse {
        content: result
            .content
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()
            .map_err(RpcError::internal)?,
        structured_content: result.structured_content,
        is_error: result.is_error,
        meta: result
            .meta
            .map(serde_json::to_value)
            .transpose()
            .map_err(RpcError::internal)?,
    })
}

fn statuses(mcp: &McpManager) -> Vec<McpServerStatus> {
    let running = mcp.running();
    mcp.configs()
        .iter()
        .map(|config| {
            // Of the instances (one per working directory), the most advanced one.
            let server: Option<&Server> = running
                .iter()
                .filter(|s| s.name() == config.name && **s.config() == **config)
                .max_by_key(|s| match s.status() {
                    ServerStatus::Ready => 3,
                    ServerStatus::Starting => 2,
                    ServerStatus::Failed { .. } => 1,
                    ServerStatus::Stopped { .. } => 0,
                });
            let status = server.map(Server::status);
            McpServerStatus {
                name: config.name.clone(),
                auth_status: if config.bearer_token_env_var().is_some() {
                    McpAuthStatus::BearerToken
                } else {
                    McpAuthStatus::Unsupported
                },
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
                resources: Vec::new(),
                resource_templates: Vec::new(),
                runtime_status: Some(match (&status, config.enabled) {
                    (_, false) => McpServerConnectionStatus::Disabled,
                    (None, true) => McpServerConnectionStatus::NotStarted,
                    (Some(ServerStatus::Starting), _) => McpServerConnectionStatus::Starting,
                    (Some(ServerStatus::Ready), _) => McpServerConnectionStatus::Connected,
                    (Some(ServerStatus::Failed { .. }), _) => McpServerConnectionStatus::Failed,
                    (Some(ServerStatus::Stopped { .. }), _) => McpServerConnectionStatus::Cancelled,
                }),
                server_info: server
                    .and_then(Server::server_info)
                    .and_then(|i| serde_json::to_value(i).ok()),
                // A ready server whose listing passed rein's limits says what was left out.
                tools_error: match status {
                    Some(ServerStatus::Failed { error }) => Some(error),
                    _ => server
                        .map(Server::listing_warnings)
                        .filter(|w| !w.is_empty())
                        .map(|w| w.join("; ")),
                },
            }
        })
        .collect()
}

/// The notification for a server's status change.
pub fn startup_notification(update: &StatusUpdate) -> ServerNotification {
    let (status, error) = match &update.status {
        ServerStatus::Starting => (McpServerStartupState::Starting, None),
        ServerStatus::Ready => (McpServerStartupState::Ready, None),
        ServerStatus::Failed { error } => (McpServerStartupState::Failed, Some(error.clone())),
        ServerStatus::Stopped { reason } => {
            (McpServerStartupState::Cancelled, Some(reason.clone()))
        }
    };
    ServerNotification::McpServerStatusUpdated(McpServerStatusUpdatedNotification {
        name: update.server.clone(),
        status,
        error,
        thread_id: None,
    })
}

/// Forward every status change of the servers to the connection until it closes.
pub async fn forward_status(
    mut updates: tokio::sync::broadcast::Receiver<StatusUpdate>,
    out: Outbound,
) {
    loop {
        match updates.recv().await {
            Ok(update) => out.notify(startup_notification(&update)).await,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!("{n} MCP status updates were dropped for a slow connection");
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}
