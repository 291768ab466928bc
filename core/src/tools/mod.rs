//! Tools the model can call: the [`Tool`] trait, the [`ToolSet`] a Step freezes from the
//! thread's [`ToolSources`], and the [`ToolContext`] a running call gets (its cancellation
//! token, the turn's settings, its thread's tool state, and a way to report tool events and
//! ask the client through the thread's loop). A tool describes each call before it runs
//! ([`Tool::describe`]) and reports what it did with its result ([`ToolResult::outcome`]).
//!
//! Architecture invariant: a Step offers the model exactly the specs of its frozen
//! `ToolSet`, and only that set runs the calls of that Step's reply.

pub mod capture;
pub mod client;
pub mod grants;
pub mod sources;
pub mod testing;
pub mod thread_tools;

pub use capture::HeadTailBuffer;
pub use client::{ClientCapabilities, ClientWorkError, TerminalCommand, TerminalExit};
pub use grants::{SessionApprovals, SessionDenials};
pub use sources::{StaticTools, ThreadToolSource, ToolSlot, ToolSource, ToolSources};
pub use thread_tools::{ThreadToolState, ThreadTools};

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use rein_protocol::{
    ApprovalDecision, ClientRequest, ClientResponse, Decliner, PlanStep, SessionGrant,
    SubmissionId, ThreadId, ThreadSettings, ToolAction, ToolOutcome, TurnId,
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

/// What a call returns: the text the model reads (`output`, `success`) and what the call
/// did (`outcome`), which clients are shown. The two are produced together by the tool, so
/// no front end ever reads the output to learn what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResult {
    pub output: String,
    pub success: bool,
    pub outcome: ToolOutcome,
}

impl ToolResult {
    /// Content returned to the model, shown as is.
    pub fn ok(output: impl Into<String>) -> Self {
        let output = output.into();
        Self {
            outcome: ToolOutcome::Returned {
                text: output.clone(),
                structured: None,
                content: Vec::new(),
            },
            output,
            success: true,
        }
    }

    /// The call failed; the message is what the model reads.
    pub fn err(message: impl Into<String>) -> Self {
        let output = message.into();
        Self {
            outcome: ToolOutcome::failed(output.clone()),
            output,
            success: false,
        }
    }

    /// The user or the policy said no; the reason is what the model reads.
    pub fn declined(by: Decliner, reason: impl Into<String>) -> Self {
        let output = reason.into();
        Self {
            outcome: ToolOutcome::Declined {
                by,
                reason: output.clone(),
            },
            output,
            success: false,
        }
    }

    /// `output` for the model, `outcome` for clients.
    pub fn new(output: impl Into<String>, success: bool, outcome: ToolOutcome) -> Self {
        Self {
            output: output.into(),
            success,
            outcome,
        }
    }
}

/// A tool the model can call. Adding one means implementing this and registering it with
/// a [`ToolSource`] (the built-ins: `rein_tools::builtin_tools`).
pub trait Tool: Send + Sync + 'static {
    fn spec(&self) -> ToolSpec;

    /// What `call` is about to do, said before it runs (clients show it while it runs, and
    /// it stays in history with the outcome). Pure: no I/O, no waiting.
    fn describe(&self, call: &ToolCall, _ctx: &ToolContext) -> ToolAction {
        ToolAction::other(&call.name, &call.arguments)
    }

    /// Run one call. Must return promptly once `ctx.cancel` fires; a call that does not
    /// is aborted after the interrupt grace period.
    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult>;
}

/// The approval request was not answered: the turn ended (interrupt or shutdown) first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the approval request was cancelled")]
pub struct ApprovalCancelled;

/// What a running call may tell clients: only things about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolEvent {
    /// Output produced so far (e.g. a command's stdout).
    OutputDelta(String),
    /// The agent's plan changed.
    PlanUpdated(Vec<PlanStep>),
    /// The call changed the thread's sub-agent tree (`AgentSpawned`, `AgentTasked`,
    /// `AgentClosed`): an edge the thread's rollout must keep.
    Agents(AgentEdge),
    /// A `remember` call's proposal and its answer (`MemoryProposed`, `MemoryAccepted`,
    /// `MemoryRejected`): facts the thread's rollout keeps.
    Memory(crate::memory::tool::MemoryFact),
}

/// A change to a thread's sub-agents, as its rollout records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentEdge {
    Spawned {
        thread_id: ThreadId,
        nickname: Option<String>,
        role: Option<String>,
        task: String,
    },
    Tasked {
        thread_id: ThreadId,
        task: String,
    },
    Closed {
        thread_id: ThreadId,
    },
}

impl ToolEvent {
    /// The event clients see for it.
    pub fn into_event(self, call_id: &str) -> rein_protocol::EventMsg {
        match self {
            ToolEvent::OutputDelta(delta) => rein_protocol::EventMsg::ToolOutputDelta {
                call_id: call_id.to_owned(),
                delta,
            },
            ToolEvent::PlanUpdated(plan) => rein_protocol::EventMsg::PlanUpdated { plan },
            ToolEvent::Agents(AgentEdge::Spawned {
                thread_id,
                nickname,
                role,
                task,
            }) => rein_protocol::EventMsg::AgentSpawned {
                thread_id,
                nickname,
                role,
                task,
            },
            ToolEvent::Agents(AgentEdge::Tasked { thread_id, task }) => {
                rein_protocol::EventMsg::AgentTasked { thread_id, task }
            }
            ToolEvent::Agents(AgentEdge::Closed { thread_id }) => {
                rein_protocol::EventMsg::AgentClosed { thread_id }
            }
            ToolEvent::Memory(fact) => fact.into_event(call_id),
        }
    }
}

/// A question for the client, and what answering an approval "for the session" grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ask {
    pub request: ClientRequest,
    pub session_grant: Option<SessionGrant>,
}

/// The side of the kernel a running tool talks to. The turn implements it by forwarding to
/// the thread's loop; tests implement it directly.
pub trait ToolHost: Send + Sync + 'static {
    fn emit(&self, call_id: &str, event: ToolEvent);
    /// Emit `event` and resolve once it is written (write-ahead of what the call does
    /// next); `false` if the turn is gone. Hosts without a store resolve at once.
    fn emit_written(&self, call_id: &str, event: ToolEvent) -> BoxFuture<'static, bool> {
        self.emit(call_id, event);
        Box::pin(std::future::ready(true))
    }
    /// Take the mail `id` out of the thread's mailbox if it still waits there (it then
    /// never becomes a message of the history); `false` if it is not there. Hosts without
    /// a mailbox have none to take.
    fn claim_mail(&self, _id: SubmissionId) -> BoxFuture<'static, bool> {
        Box::pin(std::future::ready(false))
    }
    /// Ask the thread's loop about its goal (the goal tools); `None`: this host has no
    /// goal (a test host, a turn that is gone).
    fn goal(
        &self,
        _request: crate::goal::GoalRequest,
    ) -> BoxFuture<'static, Option<crate::goal::GoalAnswer>> {
        Box::pin(std::future::ready(None))
    }
    /// Put a request to the client; the receiver yields its answer, or closes when the
    /// turn ends first.
    fn ask(&self, call_id: String, ask: Ask) -> oneshot::Receiver<ClientResponse>;
}

/// Answers a call's approval requests before the user is asked (the user's
/// `PermissionRequest` hooks): `Some` is the answer, `None` asks the user.
pub trait ApprovalGate: Send + Sync + 'static {
    fn decide(&self, request: &ClientRequest) -> BoxFuture<'_, Option<ApprovalDecision>>;
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
    /// What the tools keep for this thread (session grants, each tool's per-thread state).
    pub thread: Arc<ThreadTools>,
    host: Arc<dyn ToolHost>,
    gate: Option<Arc<dyn ApprovalGate>>,
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
            thread: Arc::new(ThreadTools::default()),
            host,
            gate: None,
        }
    }

    /// The same context, whose approval requests `gate` may answer first.
    pub fn with_approval_gate(mut self, gate: Arc<dyn ApprovalGate>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// The same context, for a call of the thread whose tool state is `thread`.
    pub fn with_thread(mut self, thread: Arc<ThreadTools>) -> Self {
        self.thread = thread;
        self
    }

    /// The same context, judged without the session's earlier approvals.
    pub fn without_session_grants(mut self) -> Self {
        self.session_grants = false;
        self
    }

    /// What the user approved for this session, as far as this call may use it.
    pub fn grants(&self) -> Arc<SessionApprovals> {
        if self.session_grants {
            self.thread.grants()
        } else {
            Arc::default()
        }
    }

    /// Stream a piece of output (e.g. a command's stdout) to clients while the call runs.
    pub fn output_delta(&self, delta: impl Into<String>) {
        self.host
            .emit(&self.call_id, ToolEvent::OutputDelta(delta.into()));
    }

    /// Record a change to the thread's sub-agents and wait until it is written.
    pub async fn record_agents(&self, edge: AgentEdge) -> bool {
        self.host
            .emit_written(&self.call_id, ToolEvent::Agents(edge))
            .await
    }

    /// Record a memory proposal or its answer and wait until it is written.
    pub async fn record_memory(&self, fact: crate::memory::tool::MemoryFact) -> bool {
        self.host
            .emit_written(&self.call_id, ToolEvent::Memory(fact))
            .await
    }

    /// Claim mail still waiting in this thread's mailbox (see [`ToolHost::claim_mail`]).
    pub async fn claim_mail(&self, id: SubmissionId) -> bool {
        self.host.claim_mail(id).await
    }

    /// Ask the thread's loop about its goal (see [`ToolHost::goal`]).
    pub async fn goal(&self, request: crate::goal::GoalRequest) -> Option<crate::goal::GoalAnswer> {
        self.host.goal(request).await
    }

    /// Tell clients the agent's plan changed.
    pub fn plan_updated(&self, plan: Vec<PlanStep>) {
        self.host.emit(&self.call_id, ToolEvent::PlanUpdated(plan));
    }

    /// Ask the client and park until it answers, or until the turn is cancelled.
    pub async fn ask(&self, ask: Ask) -> Result<ClientResponse, ApprovalCancelled> {
        let answer = self.host.ask(self.call_id.clone(), ask);
        tokio::select! {
            response = answer => response.map_err(|_| ApprovalCancelled),
            () = self.cancel.cancelled() => Err(ApprovalCancelled),
        }
    }

    /// Ask for an approval; `session_grant` is what "approve for this session" lets
    /// through from then on. An answer that is not a decision counts as a denial.
    pub async fn request_approval(
        &self,
        request: ClientRequest,
        session_grant: Option<SessionGrant>,
    ) -> Result<ApprovalDecision, ApprovalCancelled> {
        if let Some(gate) = &self.gate {
            let decided = tokio::select! {
                decided = gate.decide(&request) => decided,
                () = self.cancel.cancelled() => return Err(ApprovalCancelled),
            };
            if let Some(decision) = decided {
                return Ok(decision);
            }
        }
        let response = self
            .ask(Ask {
                request,
                session_grant,
            })
            .await?;
        Ok(match response {
            ClientResponse::Decision { decision } => decision,
            _ => ApprovalDecision::Deny,
        })
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

    /// The tools of `sets` in order; a name already taken by an earlier set is skipped.
    pub fn merged<'a>(sets: impl IntoIterator<Item = &'a ToolSet>) -> Self {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for set in sets {
            for (tool, spec) in set.tools.iter().zip(set.specs.iter()) {
                if seen.insert(spec.name.clone()) {
                    tools.push(Arc::clone(tool));
                } else {
                    tracing::warn!(tool = %spec.name, "two tool sources offer this tool; the first one wins");
                }
            }
        }
        Self::new(tools)
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

    /// This set with only the tools named in `names`.
    pub fn only(&self, names: &[String]) -> Self {
        Self::new(
            self.tools
                .iter()
                .zip(self.specs.iter())
                .filter(|(_, spec)| names.contains(&spec.name))
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
