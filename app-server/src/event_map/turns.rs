//! A turn as Codex shows it: started, its usage, plan, diff and compactions, then ended
//! (completed, interrupted or failed), with the thread's status following it.

use rein_app_server_protocol::{
    ItemCompletedNotification, ServerNotification, ThreadItem, ThreadStatus, ThreadTokenUsage,
    ThreadTokenUsageUpdatedNotification, TurnDiffUpdatedNotification, TurnError, TurnItemsView,
    TurnNotification, TurnPlanStep, TurnPlanUpdatedNotification, TurnStatus,
};
use rein_protocol::{Event, PlanStep, PlanStepStatus, TaskKind, TokenUsage, TurnId};

use super::shapes::{active, turn_object, TurnTrack};
use super::{event_ms, review, EventMapper, Outgoing};
use crate::convert::usage_to_wire;

impl EventMapper {
    pub(super) fn turn_started(&mut self, out: &mut Vec<Outgoing>, event: &Event, kind: TaskKind) {
        let Some(id) = event.turn_id else {
            return;
        };
        let track = TurnTrack {
            id,
            started_at_ms: event_ms(event),
            last_agent: None,
            error: None,
            review: kind == TaskKind::Review,
        };
        let turn = turn_object(&track, TurnStatus::InProgress, None);
        self.turn = Some(track);
        self.set_status(out, active(false));
        out.push(Outgoing::Notify(ServerNotification::TurnStarted(
            TurnNotification {
                thread_id: self.thread_id.clone(),
                turn,
            },
        )));
    }

    pub(super) fn end_turn(
        &mut self,
        out: &mut Vec<Outgoing>,
        event: &Event,
        status: TurnStatus,
        error: Option<TurnError>,
    ) {
        let Some(mut track) = self.turn.take() else {
            return;
        };
        if event.turn_id != Some(track.id) {
            self.turn = Some(track);
            return;
        }
        if error.is_some() {
            track.error = error;
        }
        self.approvals.clear();
        self.tools.retain(|_, t| t.turn_id != track.id);
        let aborted = self
            .reviews
            .end_turn(&self.thread_id, track.id, event_ms(event));
        out.extend(aborted.into_iter().map(Outgoing::Notify));
        if track.review {
            let at = event_ms(event);
            let done = review::exited(track.last_agent.as_ref());
            out.extend(self.item_started(Some(track.id), done.clone(), at));
            out.push(Outgoing::Notify(ServerNotification::ItemCompleted(
                ItemCompletedNotification {
                    thread_id: self.thread_id.clone(),
                    turn_id: track.id.to_string(),
                    item: done,
                    completed_at_ms: at,
                },
            )));
        }
        let mut turn = turn_object(&track, status, Some(event_ms(event)));
        if status == TurnStatus::Interrupted {
            turn.items.clear();
            turn.items_view = TurnItemsView::NotLoaded;
            turn.error = None;
        }
        self.set_status(out, ThreadStatus::Idle);
        out.push(Outgoing::Notify(ServerNotification::TurnCompleted(
            TurnNotification {
                thread_id: self.thread_id.clone(),
                turn,
            },
        )));
    }

    /// Held until the reply's items are out (see `held_usage`).
    pub(super) fn token_count(
        &mut self,
        turn_id: Option<TurnId>,
        last: &TokenUsage,
        total: &TokenUsage,
        context_window: Option<u64>,
    ) {
        if let Some(window) = context_window.and_then(|w| i64::try_from(w).ok()) {
            self.context_window = Some(window);
        }
        if let Some(turn_id) = turn_id {
            self.held_usage = Some(ServerNotification::ThreadTokenUsageUpdated(
                ThreadTokenUsageUpdatedNotification {
                    thread_id: self.thread_id.clone(),
                    turn_id: turn_id.to_string(),
                    token_usage: ThreadTokenUsage {
                        total: usage_to_wire(total),
                        last: usage_to_wire(last),
                        model_context_window: self.context_window,
                    },
                },
            ));
        }
    }

    pub(super) fn plan_updated(
        &self,
        out: &mut Vec<Outgoing>,
        turn_id: Option<TurnId>,
        plan: &[PlanStep],
    ) {
        let Some(turn_id) = turn_id else {
            return;
        };
        let step = |s: &PlanStep| TurnPlanStep {
            step: s.step.clone(),
            status: match s.status {
                PlanStepStatus::Pending => "pending",
                PlanStepStatus::InProgress => "inProgress",
                PlanStepStatus::Completed => "completed",
            }
            .into(),
        };
        out.push(Outgoing::Notify(ServerNotification::TurnPlanUpdated(
            TurnPlanUpdatedNotification {
                thread_id: self.thread_id.clone(),
                turn_id: turn_id.to_string(),
                explanation: None,
                plan: plan.iter().map(step).collect(),
            },
        )));
    }

    pub(super) fn turn_diff(&self, out: &mut Vec<Outgoing>, turn_id: Option<TurnId>, diff: &str) {
        if let Some(turn_id) = turn_id {
            out.push(Outgoing::Notify(ServerNotification::TurnDiffUpdated(
                TurnDiffUpdatedNotification {
                    thread_id: self.thread_id.clone(),
                    turn_id: turn_id.to_string(),
                    diff: diff.to_owned(),
                },
            )));
        }
    }

    pub(super) fn compaction_started(&mut self, out: &mut Vec<Outgoing>, event: &Event) {
        let id = format!("compaction-{}", event.seq);
        let item = ThreadItem::ContextCompaction { id: id.clone() };
        self.compaction = Some(id);
        out.extend(self.item_started(event.turn_id, item, event_ms(event)));
    }

    pub(super) fn compacted(&mut self, out: &mut Vec<Outgoing>, event: &Event) {
        let id = self
            .compaction
            .take()
            .unwrap_or_else(|| format!("compaction-{}", event.seq));
        if let Some(turn_id) = event.turn_id {
            out.push(Outgoing::Notify(ServerNotification::ItemCompleted(
                ItemCompletedNotification {
                    thread_id: self.thread_id.clone(),
                    turn_id: turn_id.to_string(),
                    item: ThreadItem::ContextCompaction { id },
                    completed_at_ms: event_ms(event),
                },
            )));
        }
    }
}
