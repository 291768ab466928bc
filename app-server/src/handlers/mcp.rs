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
use rein_core::tool_servers::{CallError, ServerReport, ServerStatus, StatusUpdate};

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
        Some(mcp) => mcp
            .reports()
            .into_iter()
            .map(status_of)
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
    let Some(mcp) = &state.kernel.mcp else {
        return Err(RpcError::invalid_request(format!(
            "no enabled MCP server '{}' is configured",
            p.server
        )));
    };
    let result = mcp
        .call_direct(&cwd, &p.server, &p.tool, p.arguments, p.meta)
        .await
        .map_err(|e| match e {
            CallError::Invalid(message) => RpcError::invalid_request(message),
            CallError::Failed(message) => RpcError::internal(message),
        })?;
    Ok(McpServerToolCallResponse {
        content: result.content,
        structured_content: result.structured_content,
        is_error: result.is_error,
        meta: result.meta,
    })
}

/// A server's report as Codex's status entry.
fn status_of(report: ServerReport) -> McpServerStatus {
    let ServerReport {
        name,
        enabled,
        bearer_token,
        status,
        tools,
        server_info,
        listing_warnings,
    } = report;
    McpServerStatus {
        name,
        auth_status: if bearer_token {
            McpAuthStatus::BearerToken
        } else {
            McpAuthStatus::Unsupported
        },
        tools: tools.into_iter().collect(),
        resources: Vec::new(),
        resource_templates: Vec::new(),
        runtime_status: Some(match (&status, enabled) {
            (_, false) => McpServerConnectionStatus::Disabled,
            (None, true) => McpServerConnectionStatus::NotStarted,
            (Some(ServerStatus::Starting), _) => McpServerConnectionStatus::Starting,
            (Some(ServerStatus::Ready), _) => McpServerConnectionStatus::Connected,
            (Some(ServerStatus::Failed { .. }), _) => McpServerConnectionStatus::Failed,
            (Some(ServerStatus::Stopped { .. }), _) => McpServerConnectionStatus::Cancelled,
        }),
        server_info,
        // A ready server whose listing passed rein's limits says what was left out.
        tools_error: match status {
            Some(ServerStatus::Failed { error }) => Some(error),
            _ => Some(listing_warnings)
                .filter(|w| !w.is_empty())
                .map(|w| w.join("; ")),
        },
    }
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
