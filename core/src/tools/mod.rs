//! Tools the model can call: the [`Tool`] trait, the [`ToolSet`] a Step freezes, and the
//! [`ToolContext`] a running call gets (its cancellation token, the turn's settings, and a
//! way to emit events and ask for approval through the thread's loop).
//!
//! Architecture invariant: a Step offers the model exactly the specs of its frozen
//! `ToolSet`, and only that set runs the calls of that Step's reply.

pub mod apply_patch;
pub mod builtin;
pub mod files;
pub mod plan;
pub mod policy;
pub mod process;
pub mod sandbox;
pub mod shell;
pub mod shell_tool;
pub mod terminals;
pub mod testing;

pub use builtin::{builtin_tools, BuiltinConfig};

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use rein_protocol::{
    ApprovalDecision, ApprovalRequest, EventMsg, ThreadId, ThreadSettings, TurnId,
};
use serde::Serialize;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// What the model is told about a tool.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One call of a tool, as the model issued it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    pub call_id: String,
    pub name: String,
    /// The raw JSON text of the arguments.
    pub arguments: String,
}

/// What a call returns to the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResult {
    pub output: String,
    pub success: bool,
}

impl ToolResult {
    pub fn ok(output: impl Into<String>) -> Self {
        Self {
            output: output.into(),
            success: true,
        }
    }

    pub fn err(output: impl Into<String>) -> Self {
        Self {
            output: output.into(),
            success: false,
        }
    }
}

pub trait Tool: Send + Sync + 'static {
    fn spec(&self) -> ToolSpec;

    /// Run one call. Must return promptly once `ctx.cancel` fires; a call that does not
    /// is aborted after the interrupt grace period.
    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult>;

    /// The thread asked to kill the background processes it started.
    fn clean_background(&self, _thread: ThreadId) {}

    /// The thread is shutting down: release everything held for it.
    fn on_thread_shutdown(&self, _thread: ThreadId) {}
}

/// The approval request was not answered: the turn ended (interrupt or shutdown) first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the approval request was cancelled")]
pub struct ApprovalCancelled;

/// The side of the kernel a running tool talks to. The turn implements it by forwarding to
/// the thread's loop; tests implement it directly.
pub trait ToolHost: Send + Sync + 'static {
    fn emit(&self, msg: EventMsg);
    fn request_approval(
        &self,
        call_id: String,
        request: ApprovalRequest,
    ) -> oneshot::Receiver<ApprovalDecision>;
}

/// Everything a running call may use. Cheap to clone.
#[derive(Clone)]
pub struct ToolContext {
    pub thread_id: ThreadId,
    pub turn_id: TurnId,
    pub call_id: String,
    /// The settings the turn captured (cwd, approval and sandbox policy).
    pub settings: Arc<ThreadSettings>,
    pub cancel: CancellationToken,
    /// Whether what the user approved "for this session" counts. Not in a review turn,
    /// which must stay read-only whatever was granted to the conversation.
    pub session_grants: bool,
    host: Arc<dyn ToolHost>,
}

impl ToolContext {
    pub fn new(
        ids: (ThreadId, TurnId, String),
        settings: Arc<ThreadSettings>,
        cancel: CancellationToken,
        host: Arc<dyn ToolHost>,
    ) -> Self {
        let (thread_id, turn_id, call_id) = ids;
        Self {
            thread_id,
            turn_id,
            call_id,
            settings,
            cancel,
            session_grants: true,
            host,
        }
    }

    /// The same context, judged without the session's earlier approvals.
    pub fn without_session_grants(mut self) -> Self {
        self.session_grants = false;
        self
    }

    pub fn emit(&self, msg: EventMsg) {
        self.host.emit(msg);
    }

    /// Stream a piece of output (e.g. a command's stdout) to clients while the call runs.
    pub fn output_delta(&self, delta: impl Into<String>) {
        self.host.emit(EventMsg::ToolOutputDelta {
            call_id: self.call_id.clone(),
            delta: delta.into(),
        });
    }

    /// Ask the user and park until they answer, or until the turn is cancelled.
    pub async fn request_approval(
        &self,
        request: ApprovalRequest,
    ) -> Result<ApprovalDecision, ApprovalCancelled> {
        let answer = self.host.request_approval(self.call_id.clone(), request);
        tokio::select! {
            decision = answer => decision.map_err(|_| ApprovalCancelled),
            () = self.cancel.cancelled() => Err(ApprovalCancelled),
        }
    }
}

/// An immutable set of tools. A Step holds an `Arc` of the set it offered the model.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: Vec<Arc<dyn Tool>>,
    specs: Arc<[ToolSpec]>,
    by_name: HashMap<String, usize>,
}

impl ToolSet {
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        let specs: Vec<ToolSpec> = tools.iter().map(|t| t.spec()).collect();
        let by_name = specs
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.clone(), i))
            .collect();
        Self {
            tools,
            specs: specs.into(),
            by_name,
        }
    }

    pub fn empty() -> Self {
        Self::default()
    }

    /// This set without the tools named in `names`.
    pub fn without(&self, names: &[&str]) -> Self {
        Self::new(
            self.tools
                .iter()
                .zip(self.specs.iter())
                .filter(|(_, spec)| !names.contains(&spec.name.as_str()))
                .map(|(tool, _)| Arc::clone(tool))
                .collect(),
        )
    }

    pub fn specs(&self) -> Arc<[ToolSpec]> {
        Arc::clone(&self.specs)
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.by_name.get(name).map(|&i| Arc::clone(&self.tools[i]))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}
