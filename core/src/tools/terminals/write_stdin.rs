//! `write_stdin`: send input to a background terminal and read what it printed since the
//! last read (empty `chars` only reads).

use std::time::Duration;

use futures::future::BoxFuture;
use rein_protocol::ToolAction;
use serde::Deserialize;
use serde_json::json;

use super::BackgroundTerminals;
use crate::tools::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

const DEFAULT_WAIT_MS: u64 = 500;
const MAX_WAIT_MS: u64 = 30_000;

#[derive(Deserialize)]
struct Args {
    terminal_id: String,
    #[serde(default)]
    chars: String,
    #[serde(default)]
    wait_ms: Option<u64>,
}

/// Reaches the background terminals of the calling thread (`ctx.thread`).
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteStdinTool;

impl Tool for WriteStdinTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_stdin".to_owned(),
            description: "Write to a background terminal's stdin (started with shell \
                          `background: true`) and return its new output. Empty `chars` \
                          just reads."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "terminal_id": {"type": "string"},
                    "chars": {"type": "string", "description": "text to write, e.g. \"q\\n\""},
                    "wait_ms": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_MS,
                        "description": "how long to collect output (default 500)"}
                },
                "required": ["terminal_id"],
                "additionalProperties": false
            }),
        }
    }

    fn describe(&self, call: &ToolCall, ctx: &ToolContext) -> ToolAction {
        match serde_json::from_str::<Args>(&call.arguments) {
            Ok(args) => {
                let (command, cwd) = match ctx
                    .thread
                    .state::<BackgroundTerminals>()
                    .command_of(&args.terminal_id)
                {
                    Some((command, cwd)) => (Some(command), cwd),
                    None => (None, None),
                };
                ToolAction::Stdin {
                    terminal_id: args.terminal_id,
                    chars: args.chars,
                    command,
                    cwd,
                }
            }
            Err(_) => ToolAction::other(&call.name, &call.arguments),
        }
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match serde_json::from_str(&call.arguments) {
                Ok(a) => a,
                Err(e) => return ToolResult::err(format!("invalid write_stdin arguments: {e}")),
            };
            let terminals = ctx.thread.state::<BackgroundTerminals>();
            let wait =
                Duration::from_millis(args.wait_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS));
            // A command that does not read its stdin fills the pipe; the write must not
            // outlive the turn.
            let write = terminals.write(&args.terminal_id, &args.chars);
            tokio::select! {
                written = write => {
                    if let Err(e) = written {
                        return ToolResult::err(e.to_string());
                    }
                }
                () = ctx.cancel.cancelled() => {
                    return ToolResult::err("cancelled while writing to the terminal");
                }
            }
            match terminals.read(&args.terminal_id, wait, &ctx.cancel).await {
                Ok(snapshot) => {
                    ToolResult::new(snapshot.to_json().to_string(), true, snapshot.outcome())
                }
                Err(e) => ToolResult::err(e.to_string()),
            }
        })
    }
}
