//! A [`ToolHost`] that records what tools emit and answers approval requests from a
//! script. Used by unit and integration tests, and handy for embedding tools without a
//! thread loop.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use rein_protocol::{
    ApprovalDecision, ApprovalRequest, EventMsg, ThreadId, ThreadSettings, TurnId,
};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{ToolCall, ToolContext, ToolHost};

/// How the host answers the next approval request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptedAnswer {
    Decide(ApprovalDecision),
    /// Never answer (the sender is kept alive): the request stays parked.
    Park,
    /// Drop the sender: the request resolves as cancelled.
    Drop,
}

#[derive(Default)]
struct Inner {
    events: Vec<EventMsg>,
    requests: Vec<ApprovalRequest>,
    answers: VecDeque<ScriptedAnswer>,
    /// Parked requests by request index, until answered.
    parked: Vec<(usize, oneshot::Sender<ApprovalDecision>)>,
    /// Woken whenever a request arrives.
    arrived: Arc<tokio::sync::Notify>,
}

/// Records events; answers approvals in order from a queue (denies when it runs out).
#[derive(Default, Clone)]
pub struct RecordingHost {
    inner: Arc<Mutex<Inner>>,
}

impl RecordingHost {
    pub fn new() -> Self {
        Self::default()
    }

    /// Queue answers for the next approval requests.
    pub fn answering(self, answers: impl IntoIterator<Item = ScriptedAnswer>) -> Self {
        self.lock().answers.extend(answers);
        self
    }

    pub fn events(&self) -> Vec<EventMsg> {
        self.lock().events.clone()
    }

    pub fn approval_requests(&self) -> Vec<ApprovalRequest> {
        self.lock().requests.clone()
    }

    /// Wait until at least `n` approval requests have arrived.
    pub async fn wait_for_requests(&self, n: usize) {
        loop {
            let arrived = Arc::clone(&self.lock().arrived);
            let notified = arrived.notified();
            if self.lock().requests.len() >= n {
                return;
            }
            notified.await;
        }
    }

    /// Answer the parked request that arrived `index`-th (0-based). Returns whether such a
    /// request was still parked.
    pub fn answer_parked(&self, index: usize, decision: ApprovalDecision) -> bool {
        let mut inner = self.lock();
        match inner.parked.iter().position(|(i, _)| *i == index) {
            Some(pos) => {
                let (_, tx) = inner.parked.remove(pos);
                tx.send(decision).is_ok()
            }
            None => false,
        }
    }

    /// The concatenated output deltas of one call.
    pub fn output_of(&self, call_id: &str) -> String {
        self.lock()
            .events
            .iter()
            .filter_map(|e| match e {
                EventMsg::ToolOutputDelta { call_id: c, delta } if c == call_id => {
                    Some(delta.as_str())
                }
                _ => None,
            })
            .collect()
    }

    /// A context for one call of a thread/turn using this host.
    pub fn context(
        &self,
        thread_id: ThreadId,
        settings: ThreadSettings,
        cancel: CancellationToken,
    ) -> ToolContext {
        ToolContext::new(
            (thread_id, TurnId::new(), "call-1".to_owned()),
            Arc::new(settings),
            cancel,
            Arc::new(self.clone()),
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ToolHost for RecordingHost {
    fn emit(&self, msg: EventMsg) {
        self.lock().events.push(msg);
    }

    fn request_approval(
        &self,
        _call_id: String,
        request: ApprovalRequest,
    ) -> oneshot::Receiver<ApprovalDecision> {
        let (tx, rx) = oneshot::channel();
        let mut inner = self.lock();
        let index = inner.requests.len();
        inner.requests.push(request);
        inner.arrived.notify_waiters();
        match inner
            .answers
            .pop_front()
            .unwrap_or(ScriptedAnswer::Decide(ApprovalDecision::Deny))
        {
            ScriptedAnswer::Decide(d) => {
                let _ = tx.send(d);
            }
            ScriptedAnswer::Park => inner.parked.push((index, tx)),
            ScriptedAnswer::Drop => drop(tx),
        }
        rx
    }
}

/// A call of `name` with the given JSON arguments.
pub fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        call_id: "call-1".to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_string(),
    }
}

/// Settings for a thread working in `cwd`.
pub fn settings(
    cwd: &std::path::Path,
    approval: rein_protocol::ApprovalPolicy,
    sandbox: rein_protocol::SandboxPolicy,
) -> ThreadSettings {
    ThreadSettings {
        model: "test".to_owned(),
        cwd: cwd.to_path_buf(),
        approval_policy: approval,
        sandbox_policy: sandbox,
        sandbox_options: None,
        reasoning_effort: None,
        budget: rein_protocol::TurnBudget::default(),
        instructions: String::new(),
    }
}

/// The first of `candidates` that exists and lies outside the temp dir and `/tmp`
/// (which workspace-write leaves writable), for tests that need a place the sandbox
/// must not let a command write to. Links are resolved before comparing.
pub fn base_outside_temp<'a>(
    candidates: impl IntoIterator<Item = &'a std::path::Path>,
) -> Option<std::path::PathBuf> {
    let temp_roots: Vec<std::path::PathBuf> = [std::env::temp_dir(), "/tmp".into()]
        .into_iter()
        .filter_map(|t| t.canonicalize().ok())
        .collect();
    candidates
        .into_iter()
        .filter_map(|c| c.canonicalize().ok())
        .find(|c| !temp_roots.iter().any(|t| c.starts_with(t)))
}
