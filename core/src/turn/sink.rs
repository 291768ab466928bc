//! The only channel from spawned work (tasks, tools) back to the thread's loop. Every
//! message carries the run it belongs to, so the loop can ignore stragglers from a run it
//! already closed (a recovered turn reuses its turn id, so the id alone is not enough).

use std::sync::Arc;

use rein_protocol::{ClientResponse, EventMsg, TokenUsage, TurnId};
use tokio::sync::{mpsc, oneshot};

use super::TaskOutcome;
use crate::tools::{Ask, ToolEvent, ToolHost};

/// Identifies one spawned run of a task.
pub(crate) type RunId = u64;

pub(crate) struct TaskMsg {
    pub run: RunId,
    pub kind: TaskMsgKind,
}

pub(crate) enum TaskMsgKind {
    Emit(EventMsg),
    Usage(TokenUsage),
    /// A call asks the client; `reply` takes the answer.
    Ask {
        call_id: String,
        ask: Ask,
        reply: oneshot::Sender<ClientResponse>,
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

/// What a tool can do through the turn: report events about its own call, and ask.
impl ToolHost for TurnSink {
    fn emit(&self, call_id: &str, event: ToolEvent) {
        TurnSink::emit(self, event.into_event(call_id));
    }

    fn ask(&self, call_id: String, ask: Ask) -> oneshot::Receiver<ClientResponse> {
        let (reply, rx) = oneshot::channel();
        self.send(TaskMsgKind::Ask {
            call_id,
            ask,
            reply,
        });
        rx
    }
}
