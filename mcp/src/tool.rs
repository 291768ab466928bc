//! One tool of an MCP server, as the kernel runs it: described as `ToolAction::Mcp`
//! before it runs; its arguments checked against the tool's input schema; asked about
//! first when its annotations or its approval mode say so; called with the server's
//! `tool_timeout` (an expired or interrupted call sends MCP cancellation); progress
//! streamed to clients; `isError` results are failures the model reads; long output
//! is cut in the middle like a command's.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use rein_core::tools::HeadTailBuffer;
use rein_core::tools::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};
use rein_protocol::{
    ApprovalPolicy, ClientRequest, ClientResponse, Decliner, Question, QuestionOption, ToolAction,
    ToolOutcome,
};
use rmcp::model::{CallToolRequest, CallToolRequestParams, CallToolResult, ServerResult};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::server::Shared;
use rein_config::mcp::Annotations;

/// What the model reads of one result at most (as for a command's output).
pub const OUTPUT_CAP: usize = 32 * 1024;

pub(crate) struct McpTool {
    server: Arc<Shared>,
    tool: rmcp::model::Tool,
    model_name: String,
    validator: Option<jsonschema::Validator>,
}

impl McpTool {
    pub(crate) fn new(server: Arc<Shared>, tool: rmcp::model::Tool, model_name: String) -> Self {
        let schema = Value::Object((*tool.input_schema).clone());
        let validator = match jsonschema::validator_for(&schema) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::warn!(server = %server.name, tool = %tool.name, "the tool's input schema does not compile, arguments go unchecked: {e}");
                None
            }
        };
        Self {
            server,
            tool,
            model_name,
            validator,
        }
    }

    fn annotations(&self) -> Option<Annotations> {
        self.tool.annotations.as_ref().map(|a| Annotations {
            read_only: a.read_only_hint,
            destructive: a.destructive_hint,
            open_world: a.open_world_hint,
        })
    }

    /// The arguments object, or why the call is refused before it reaches the server.
    fn arguments(&self, raw: &str) -> Result<Option<serde_json::Map<String, Value>>, String> {
        if raw.trim().is_empty() {
            return Ok(None);
        }
        let value: Value =
            serde_json::from_str(raw).map_err(|e| format!("the arguments are not JSON: {e}"))?;
        let object = match value {
            Value::Null => serde_json::Map::new(),
            Value::Object(map) => map,
            other => return Err(format!("the arguments must be a JSON object, not {other}")),
        };
        if let Some(validator) = &self.validator {
            let instance = Value::Object(object.clone());
            let problems: Vec<String> = validator
                .iter_errors(&instance)
                .take(5)
                .map(|e| {
                    let path = e.instance_path().to_string();
                    if path.is_empty() {
                        e.to_string()
                    } else {
                        format!("{path}: {e}")
                    }
                })
                .collect();
            if !problems.is_empty() {
                return Err(format!(
                    "the arguments do not match the tool's input schema: {}",
                    problems.join("; ")
                ));
            }
        }
        Ok(Some(object))
    }

    /// Ask the user when the tool's approval mode and annotations say so.
    async fn approved(&self, ctx: &ToolContext) -> Result<(), ToolResult> {
        if !self
            .server
            .config
            .asks_for(&self.tool.name, self.annotations().as_ref())
        {
            return Ok(());
        }
        if ctx.settings.approval_policy == ApprovalPolicy::Never {
            return Err(ToolResult::declined(
                Decliner::Policy,
                format!(
                    "MCP tool '{}' of server '{}' needs approval, and the approval policy is never",
                    self.tool.name, self.server.name
                ),
            ));
        }
        let id = format!("mcp_tool_call_approval_{}", ctx.call_id);
        let title = self
            .tool
            .title
            .clone()
            .unwrap_or_else(|| self.tool.name.to_string());
        let request = ClientRequest::Question {
            questions: vec![Question {
                id: id.clone(),
                header: "Approve app tool call?".into(),
                question: format!(
                    "The MCP server '{}' wants to run the tool \"{title}\". Allow it?",
                    self.server.name
                ),
                options: ["Allow", "Cancel"]
                    .into_iter()
                    .map(|label| QuestionOption {
                        label: label.into(),
                        description: String::new(),
                    })
                    .collect(),
                secret: false,
            }],
        };
        let answer = ctx
            .ask(rein_core::tools::Ask {
                request,
                session_grant: None,
            })
            .await;
        let allowed = match answer {
            Ok(ClientResponse::Answers { answers }) => answers
                .get(&id)
                .is_some_and(|a| a.iter().any(|v| v == "Allow")),
            // Only an approval allows the call: abort and the session-wide denial refuse
            // it as a plain denial does.
            Ok(ClientResponse::Decision { decision }) => matches!(
                decision,
                rein_protocol::ApprovalDecision::Approve
                    | rein_protocol::ApprovalDecision::ApproveForSession
            ),
            Ok(_) | Err(_) => false,
        };
        if allowed {
            Ok(())
        } else {
            Err(ToolResult::declined(
                Decliner::User,
                "user rejected MCP tool call",
            ))
        }
    }

    async fn call(&self, call: ToolCall, ctx: ToolContext) -> ToolResult {
        let arguments = match self.arguments(&call.arguments) {
            Ok(a) => a,
            Err(message) => return ToolResult::err(message),
        };
        if let Err(declined) = self.approved(&ctx).await {
            return declined;
        }
        let peer = match self.server.peer() {
            Ok(peer) => peer,
            Err(message) => return ToolResult::err(message),
        };
        let mut params = CallToolRequestParams::new(self.tool.name.clone());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let request = rmcp::model::ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let _under_way = self.server.call_started(&ctx);
        let timeout = self.server.config.tool_timeout;
        let handle = match peer
            .send_cancellable_request(request, PeerRequestOptions::with_timeout(timeout))
            .await
        {
            Ok(handle) => handle,
            Err(e) => return ToolResult::err(transport_error(&self.server, &e, timeout)),
        };
        let token = handle.progress_token.clone();
        let (progress_tx, mut progress_rx) = mpsc::unbounded_channel();
        self.server
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token.clone(), progress_tx);
        let _unregister = Unregister {
            server: &self.server,
            token,
        };
        let id = handle.id.clone();
        let response = handle.await_response();
        tokio::pin!(response);
        let result = loop {
            tokio::select! {
                result = &mut response => break result,
                Some(p) = progress_rx.recv() => ctx.output_delta(progress_line(&p)),
                () = ctx.cancel.cancelled() => {
                    let notice = rmcp::model::CancelledNotification::new(
                        rmcp::model::CancelledNotificationParam::new(
                            Some(id),
                            Some("the turn was interrupted".into()),
                        ),
                    );
                    let _ = peer.send_notification(notice.into()).await;
                    return ToolResult::err("the MCP tool call was cancelled");
                }
            }
        };
        // Progress the server sent before its answer may still be on its way (rmcp hands
        // each notification to a task of its own): give those a turn, then take them.
        tokio::task::yield_now().await;
        while let Ok(p) = progress_rx.try_recv() {
            ctx.output_delta(progress_line(&p));
        }
        match result {
            Ok(ServerResult::CallToolResult(result)) => to_tool_result(result),
            Ok(_) => ToolResult::err(format!(
                "MCP server '{}' answered tools/call with something else than a tool result",
                self.server.name
            )),
            Err(e) => ToolResult::err(transport_error(&self.server, &e, timeout)),
        }
    }
}

/// A call that got no tool result, as the model or the client reads it.
pub(crate) fn transport_error(server: &Shared, e: &ServiceError, timeout: Duration) -> String {
    match e {
        ServiceError::Timeout { .. } => format!(
            "tool call error: timed out awaiting tools/call after {}s (tool_timeout_sec of MCP server '{}')",
            timeout.as_secs_f64(),
            server.name
        ),
        ServiceError::TransportClosed => match server.broken.get() {
            Some(why) => format!("tool call error: {why}"),
            None => format!(
                "tool call error: MCP server '{}' closed the connection during the call",
                server.name
            ),
        },
        ServiceError::TransportSend(e) => {
            // An HTTP server that went away is only seen when something is sent to it:
            // the supervisor connects again.
            server.lost.notify_one();
            format!(
                "tool call error: the call could not be sent to MCP server '{}': {}",
                server.name,
                crate::http::root_cause(e)
            )
        }
        ServiceError::McpError(e) => format!("tool call error: {}", e.message),
        other => format!("tool call error: {other}"),
    }
}

struct Unregister<'a> {
    server: &'a Shared,
    token: rmcp::model::ProgressToken,
}

impl Drop for Unregister<'_> {
    fn drop(&mut self) {
        self.server
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.token);
    }
}

fn progress_line(p: &rmcp::model::ProgressNotificationParam) -> String {
    let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
    let message = p
        .message
        .as_ref()
        .map(|m| format!(" {m}"))
        .unwrap_or_default();
    format!("progress {}{total}{message}\n", p.progress)
}

/// The model's text of a result (see [`crate::content`]), the structured content when
/// there is nothing else, cut in the middle past [`OUTPUT_CAP`]; the blocks themselves are
/// kept for front ends.
fn to_tool_result(result: CallToolResult) -> ToolResult {
    let blocks: Vec<Value> = result
        .content
        .iter()
        .map(|block| serde_json::to_value(block).unwrap_or(Value::Null))
        .collect();
    let mut text = crate::content::model_text(&blocks);
    if blocks.is_empty() {
        if let Some(structured) = &result.structured_content {
            text = structured.to_string();
        }
    }
    let mut buffer = HeadTailBuffer::new(OUTPUT_CAP);
    buffer.push(text.as_bytes());
    let text = buffer.render();
    if result.is_error == Some(true) {
        return ToolResult::err(text);
    }
    ToolResult::new(
        text.clone(),
        true,
        ToolOutcome::Returned {
            text,
            structured: result.structured_content,
            content: crate::content::shown_blocks(blocks),
        },
    )
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.model_name.clone(),
            description: self
                .tool
                .description
                .as_deref()
                .or(self.tool.title.as_deref())
                .unwrap_or_default()
                .to_owned(),
            parameters: Value::Object((*self.tool.input_schema).clone()),
        }
    }

    fn describe(&self, call: &ToolCall, _ctx: &ToolContext) -> ToolAction {
        ToolAction::Mcp {
            server: self.server.name.clone(),
            tool: self.tool.name.to_string(),
            arguments: serde_json::from_str(&call.arguments).unwrap_or(Value::Null),
        }
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.call(call, ctx))
    }
}
