//! The only channel from spawned work (tasks, tools) back to the thread's loop. Every
//! message carries the run it belongs to, so the loop can ignore stragglers from a run it
//! already closed (a recovered turn reuses its turn id, so the id alone is not enough).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rein_protocol::{ClientResponse, EventMsg, TokenUsage, TurnId};
use tokio::sync::{mpsc, oneshot, Notify};

use super::TaskOutcome;
use crate::tools::{Ask, ToolEvent, ToolHost};

/// Identifies one spawned run of a task.
pub(crate) type RunId = u64;

pub(crate) struct TaskMsg {
    pub run: RunId,
    pub kind: TaskMsgKind,
    /// A streamed delta's share of the run's delta budget, given back once the loop has
    /// handled (or dropped) the message.
    _charge: Option<DeltaCharge>,
}

/// Bytes of streamed deltas a run may have sent that the loop has not handled yet. A model
/// stream is read only while the run is under it, so a loop that falls behind pushes back
/// on the stream (and through TCP on the provider) instead of queueing without bound.
pub(crate) const DELTA_BUDGET_BYTES: usize = 256 * 1024;

#[derive(Default)]
pub(crate) struct DeltaBudget {
    queued: AtomicUsize,
    drained: Notify,
}

pub(crate) struct DeltaCharge {
    budget: Arc<DeltaBudget>,
    bytes: usize,
}

impl Drop for DeltaCharge {
    fn drop(&mut self) {
        self.budget.queued.fetch_sub(self.bytes, Ordering::AcqRel);
        self.budget.drained.notify_waiters();
    }
}

pub(crate) enum TaskMsgKind {
    Emit(EventMsg),
    /// An event whose sender waits until it is written (write-ahead of a side effect).
    EmitWritten {
        msg: EventMsg,
        written: oneshot::Sender<()>,
    },
    Usage(TokenUsage),
    /// A call claims mail still waiting in the thread's mailbox; `taken` says whether it
    /// was there (the loop records `MailTaken` for it).
    ClaimMail {
        id: rein_protocol::SubmissionId,
        taken: oneshot::Sender<bool>,
    },
    /// A call asks the client; `reply` takes the answer.
    Ask {
        call_id: String,
        ask: Ask,
        reply: oneshot::Sender<ClientResponse>,
    },
    /// A goal tool asks the loop, which owns the goal; `reply` takes the answer.
    Goal {
        request: crate::goal::GoalRequest,
        reply: oneshot::Sender<crate::goal::GoalAnswer>,
    },
    Finished(TaskOutcome),
}

#[derive(Clone)]
pub(crate) struct TurnSink {
    pub run: RunId,
    pub turn_id: TurnId,
    tx: mpsc::UnboundedSender<TaskMsg>,
    deltas: Arc<DeltaBudget>,
}

impl TurnSink {
    pub(crate) fn new(run: RunId, turn_id: TurnId, tx: mpsc::UnboundedSender<TaskMsg>) -> Self {
        Self {
            run,
            turn_id,
            tx,
            deltas: Arc::default(),
        }
    }

    fn send(&self, kind: TaskMsgKind) {
        self.send_charged(kind, None);
    }

    fn send_charged(&self, kind: TaskMsgKind, charge: Option<DeltaCharge>) {
        // The loop outlives every run it spawns; a failed send means it is gone and there
        // is nobody left to tell.
        let _ = self.tx.send(TaskMsg {
            run: self.run,
            kind,
            _charge: charge,
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

    /// Emit a streamed delta, charged to the run's delta budget (see [`Self::room`]).
    pub(crate) fn emit_delta(&self, msg: EventMsg, text_bytes: usize) {
        let bytes = text_bytes + 128;
        self.deltas.queued.fetch_add(bytes, Ordering::AcqRel);
        let charge = DeltaCharge {
            budget: Arc::clone(&self.deltas),
            bytes,
        };
        self.send_charged(TaskMsgKind::Emit(msg), Some(charge));
    }

    /// Wait until the loop has handled enough of this run's deltas to be under the budget.
    pub(crate) async fn room(&self) {
        loop {
            let drained = self.deltas.drained.notified();
            tokio::pin!(drained);
            // Registered before the check, so a drain in between is not missed.
            drained.as_mut().enable();
            if self.deltas.queued.load(Ordering::Acquire) <= DELTA_BUDGET_BYTES {
                return;
            }
            drained.await;
        }
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

    fn emit_written(
        &self,
        call_id: &str,
        event: ToolEvent,
    ) -> futures::future::BoxFuture<'static, bool> {
        let sink = self.clone();
        let msg = event.into_event(call_id);
        Box::pin(async move { TurnSink::emit_written(&sink, msg).await })
    }

    fn claim_mail(
        &self,
        id: rein_protocol::SubmissionId,
    ) -> futures::future::BoxFuture<'static, bool> {
        let (taken, ack) = oneshot::channel();
        self.send(TaskMsgKind::ClaimMail { id, taken });
        Box::pin(async move { ack.await.unwrap_or(false) })
    }

    fn goal(
        &self,
        request: crate::goal::GoalRequest,
    ) -> futures::future::BoxFuture<'static, Option<crate::goal::GoalAnswer>> {
        let (reply, answer) = oneshot::channel();
        self.send(TaskMsgKind::Goal { request, reply });
        Box::pin(async move { answer.await.ok() })
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

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;
    use rein_protocol::ItemId;

    #[tokio::test]
    async fn a_run_waits_while_the_loop_has_not_taken_its_deltas() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sink = TurnSink::new(1, TurnId::new(), tx);
        let delta = "x".repeat(64 * 1024);
        let item_id = ItemId::new();
        for _ in 0..(DELTA_BUDGET_BYTES / delta.len()) {
            let msg = EventMsg::AgentMessageDelta {
                item_id: item_id.clone(),
                delta: delta.clone(),
            };
            sink.emit_delta(msg, delta.len());
        }
        assert!(sink.room().now_or_never().is_none(), "over budget: wait");
        let room = tokio::spawn({
            let sink = sink.clone();
            async move { sink.room().await }
        });
        // The loop takes one message: the run is under budget again.
        drop(rx.recv().await.unwrap());
        room.await.unwrap();
        assert!(sink.room().now_or_never().is_some());
    }
}
