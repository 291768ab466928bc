//! `write_stdin`: send input to a background terminal and read what it printed since the
//! last read (empty `chars` only reads).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rein_protocol::ThreadId;
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

pub struct WriteStdinTool {
    terminals: Arc<BackgroundTerminals>,
}

impl WriteStdinTool {
    pub fn new(terminals: Arc<BackgroundTerminals>) -> Self {
        Self { terminals }
    }
}

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

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match serde_json::from_str(&call.arguments) {
                Ok(a) => a,
                Err(e) => return ToolResult::err(format!("invalid write_stdin arguments: {e}")),
            };
            let wait =
                Duration::from_millis(args.wait_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS));
            // A command that does not read its stdin fills the pipe; the write must not
            // outlive the turn.
            let write = self
                .terminals
                .write(ctx.thread_id, &args.terminal_id, &args.chars);
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
            match self
                .terminals
                .read(ctx.thread_id, &args.terminal_id, wait, &ctx.cancel)
                .await
            {
                Ok(snapshot) => ToolResult::ok(snapshot.to_json().to_string()),
                Err(e) => ToolResult::err(e.to_string()),
            }
        })
    }

    fn clean_background(&self, thread: ThreadId) {
        self.terminals.kill_all(thread);
    }

    fn on_thread_shutdown(&self, thread: ThreadId) {
        self.terminals.kill_all(thread);
    }
}
