//! The only channel from spawned work (tasks, tools) back to the thread's loop. Every
//! message carries the run it belongs to, so the loop can ignore stragglers from a run it
//! already closed (a recovered turn reuses its turn id, so the id alone is not enough).

use std::sync::Arc;

use rein_protocol::{ApprovalDecision, ApprovalRequest, EventMsg, TokenUsage, TurnId};
use tokio::sync::{mpsc, oneshot};

use super::TaskOutcome;
use crate::tools::ToolHost;

/// Identifies one spawned run of a task.
pub(crate) type RunId = u64;

pub(crate) struct TaskMsg {
    pub run: RunId,
    pub kind: TaskMsgKind,
}

pub(crate) enum TaskMsgKind {
    Emit(EventMsg),
    /// An event whose sender waits until it is written (write-ahead of a side effect).
    EmitWritten {
        msg: EventMsg,
        written: oneshot::Sender<()>,
    },
    Usage(TokenUsage),
    Approval {
        call_id: String,
        request: ApprovalRequest,
        reply: oneshot::Sender<ApprovalDecision>,
    },
    Finished(TaskOutcome),
}

#[derive(Clone)]
pub(crate) struct TurnSink {
    pub run: RunId,
    pub turn_id: TurnId,
    tx: mpsc::UnboundedSender<TaskMsg>,
}

impl TurnSink {
    pub(crate) fn new(run: RunId, turn_id: TurnId, tx: mpsc::UnboundedSender<TaskMsg>) -> Self {
        Self { run, turn_id, tx }
    }

    fn send(&self, kind: TaskMsgKind) {
        // The loop outlives every run it spawns; a failed send means it is gone and there
        // is nobody left to tell.
        let _ = self.tx.send(TaskMsg {
            run: self.run,
            kind,
        });
    }

    pub(crate) fn emit(&self, msg: EventMsg) {
        self.send(TaskMsgKind::Emit(msg));
    }

    /// Emit `msg` and wait until the store has written it (or the run is gone): what a
    /// side effect is announced with before it happens. `false` if the loop dropped it.
    pub(crate) async fn emit_written(&self, msg: EventMsg) -> bool {
        let (written, ack) = oneshot::channel();
        self.send(TaskMsgKind::EmitWritten { msg, written });
        ack.await.is_ok()
    }

    pub(crate) fn usage(&self, usage: TokenUsage) {
        self.send(TaskMsgKind::Usage(usage));
    }

    pub(crate) fn finished(&self, outcome: TaskOutcome) {
        self.send(TaskMsgKind::Finished(outcome));
    }

    pub(crate) fn as_host(&self) -> Arc<dyn ToolHost> {
        Arc::new(self.clone())
    }
}

impl ToolHost for TurnSink {
    fn emit(&self, msg: EventMsg) {
        TurnSink::emit(self, msg);
    }

    fn request_approval(
        &self,
        call_id: String,
        request: ApprovalRequest,
    ) -> oneshot::Receiver<ApprovalDecision> {
        let (reply, rx) = oneshot::channel();
        self.send(TaskMsgKind::Approval {
            call_id,
            request,
            reply,
        });
        rx
    }
}
