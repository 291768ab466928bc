//! A client calling a server's tool itself (app-server `mcpServer/tool/call`): no model and
//! no turn, so no approval (the client is the user) and no item; the raw tool name, the
//! server's enabled/disabled lists and its `tool_timeout` as for the model's calls. A server
//! still starting is waited for (its startup is bounded by `startup_timeout`).

use rmcp::model::{CallToolRequest, CallToolRequestParams, CallToolResult, ServerResult};
use rmcp::service::PeerRequestOptions;
use serde_json::Value;

use crate::server::{Server, ServerStatus};
use crate::tool::transport_error;

/// Why a direct call got no tool result. A tool's own failure is not one: it is a result
/// with `isError`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CallError {
    /// The call was wrong: no such tool, a disabled one, arguments that are no object.
    #[error("{0}")]
    Invalid(String),
    /// The server could not answer: not running, timed out, gone during the call.
    #[error("{0}")]
    Failed(String),
}

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
