//! A client calling a server's tool itself (app-server `mcpServer/tool/call`): no model and
//! no turn, so no approval (the client is the user) and no item; the raw tool name, the
//! server's enabled/disabled lists and its `tool_timeout` as for the model's calls. A server
//! still starting is waited for (its startup is bounded by `startup_timeout`).

use rmcp::model::{CallToolRequest, CallToolRequestParams, CallToolResult, ServerResult};
use rmcp::service::PeerRequestOptions;
use serde_json::Value;

use std::path::Path;

use rein_core::tool_servers::{CallError, DirectCallResult, ServerStatus};

use crate::manager::McpManager;
use crate::server::Server;
use crate::tool::transport_error;

impl Server {
    /// Call `tool` (its raw name) with `arguments` (an object, or none) and `_meta`.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Option<Value>,
        meta: Option<Value>,
    ) -> Result<CallToolResult, CallError> {
        let shared = &self.shared;
        let arguments = match arguments {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => Some(map),
            Some(other) => {
                return Err(CallError::Invalid(format!(
                    "the arguments must be a JSON object, not {other}"
                )))
            }
        };
        let meta = match meta {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                serde_json::from_value(value)
                    .map_err(|e| CallError::Invalid(format!("_meta must be an object: {e}")))?,
            ),
        };
        if let ServerStatus::Starting = self.status() {
            self.wait_settled().await;
        }
        let peer = shared.peer().map_err(CallError::Failed)?;
        if !self.listed_tools().iter().any(|t| t.name == tool) {
            return Err(CallError::Invalid(format!(
                "MCP server '{}' has no tool '{tool}'",
                shared.name
            )));
        }
        if !shared.config.offers(tool) {
            return Err(CallError::Invalid(format!(
                "tool '{tool}' is disabled for MCP server '{}'",
                shared.name
            )));
        }
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.meta = meta;
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let request = rmcp::model::ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let timeout = shared.config.tool_timeout;
        let answer = match peer
            .send_cancellable_request(request, PeerRequestOptions::with_timeout(timeout))
            .await
        {
            Ok(handle) => handle.await_response().await,
            Err(e) => Err(e),
        };
        match answer {
            Ok(ServerResult::CallToolResult(result)) => Ok(result),
            Ok(_) => Err(CallError::Failed(format!(
                "MCP server '{}' answered tools/call with something else than a tool result",
                shared.name
            ))),
            Err(e) => Err(CallError::Failed(transport_error(shared, &e, timeout))),
        }
    }
}

impl McpManager {
    /// Call `tool` of the server `server` of the working directory `cwd` (started now if it
    /// is not running yet); its answer in the port's shape.
    pub async fn call_direct(
        &self,
        cwd: &Path,
        server: &str,
        tool: &str,
        arguments: Option<Value>,
        meta: Option<Value>,
    ) -> Result<DirectCallResult, CallError> {
        let found = self
            .servers_for(cwd)
            .into_iter()
            .find(|s| s.name() == server)
            .ok_or_else(|| {
                CallError::Invalid(format!("no enabled MCP server '{server}' is configured"))
            })?;
        let result = found.call_tool(tool, arguments, meta).await?;
        let unreadable = |e: serde_json::Error| CallError::Failed(e.to_string());
        Ok(DirectCallResult {
            content: result
                .content
                .iter()
                .map(serde_json::to_value)
                .collect::<Result<_, _>>()
                .map_err(unreadable)?,
            structured_content: result.structured_content,
            is_error: result.is_error,
            meta: result
                .meta
                .map(serde_json::to_value)
                .transpose()
                .map_err(unreadable)?,
        })
    }
}
