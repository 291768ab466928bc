//! Ending a turn early — "turn the page, never roll back": cancel, give the work a grace
//! period, abort what is left, keep partial output, close open tool calls, append the
//! interruption marker, and only then emit `TurnAborted`.

use rein_protocol::{EventMsg, Item, ItemId, TurnAbortReason, INTERRUPTION_MARKER};
use tokio::time::Instant;

use super::{RunningTurn, SubmissionLoop};
use crate::turn::sink::TaskMsgKind;

impl SubmissionLoop {
    /// Turn the page: cancel, give the work a grace period, abort what is left, keep
    /// partial output, close open tool calls, append the marker, then `TurnAborted`.
    pub(super) async fn abort_turn(&mut self, reason: TurnAbortReason) {
        if let Some(turn) = self.stop_running().await {
            self.close_aborted(turn, reason);
        }
    }

    /// Cancel the running turn's work, wait out the grace period (folding in what it
    /// still reports), abort what is left, and hand the turn back to be closed.
    pub(super) async fn stop_running(&mut self) -> Option<RunningTurn> {
        let run = self.running.as_ref().map(|t| t.run)?;
        if let Some(turn) = &self.running {
            turn.cancel.cancel();
        }
        let grace = Instant::now() + self.services.config.interrupt_grace;
        let finished_in_grace = loop {
            match tokio::time::timeout_at(grace, self.task_rx.recv()).await {
                Ok(Some(msg)) => {
                    if msg.run == run && matches!(msg.kind, TaskMsgKind::Finished(_)) {
                        break true;
                    }
                    self.absorb(msg);
                }
                Ok(None) | Err(_) => break false,
            }
        };
        let mut turn = self.running.take()?;
        if !finished_in_grace {
            turn.handle.abort();
            // Wait (briefly) for the abort to land so nothing of this run is still sending.
            let _ =
                tokio::time::timeout(self.services.config.interrupt_grace, &mut turn.handle).await;
            while let Ok(msg) = self.task_rx.try_recv() {
                if msg.run == run {
                    if let TaskMsgKind::Emit(m) | TaskMsgKind::EmitWritten { msg: m, .. } =
                        &msg.kind
                    {
                        turn.open.observe(m);
                        self.emit(Some(turn.id), m.clone());
                    }
                }
            }
        }
        Some(turn)
    }

    /// Keep partial output, close open tool calls, append the marker, emit `TurnAborted`.
    pub(super) fn close_aborted(&mut self, turn: RunningTurn, reason: TurnAbortReason) {
        let turn_id = turn.id;
        self.cancel_requests(turn.run, turn_id);
        for msg in turn.open.closing_events() {
            self.emit(Some(turn_id), msg);
        }
        self.emit(
            Some(turn_id),
            EventMsg::ItemCompleted {
                item: Item::Interruption {
                    id: ItemId::new(),
                    text: INTERRUPTION_MARKER.into(),
                },
            },
        );
        self.goal_before_turn_end(turn_id);
        self.emit(Some(turn_id), EventMsg::TurnAborted { reason });
        let end = match reason {
            TurnAbortReason::BudgetLimited => super::goal::TurnEnd::Budget,
            _ => super::goal::TurnEnd::Interrupted,
        };
        self.goal_after_turn(turn_id, end);
    }
}
