//! What the thread tells clients outside items: its name, status, goal, warnings and
//! errors, and that it closed.

use rein_app_server_protocol::{
    ErrorNotification, ServerNotification, ThreadGoalClearedNotification,
    ThreadGoalUpdatedNotification, ThreadIdNotification, ThreadNameUpdatedNotification,
    ThreadStatus, ThreadStatusChangedNotification, TurnError, WarningNotification,
};
use rein_protocol::{ErrorCode, ThreadGoal, TurnId};

use super::shapes::turn_error;
use super::{EventMapper, Outgoing};

impl EventMapper {
    pub(super) fn thread_named(&self, out: &mut Vec<Outgoing>, name: &str) {
        out.push(Outgoing::Notify(ServerNotification::ThreadNameUpdated(
            ThreadNameUpdatedNotification {
                thread_id: self.thread_id.clone(),
                thread_name: Some(name.to_owned()),
            },
        )));
    }

    pub(super) fn set_status(&mut self, out: &mut Vec<Outgoing>, status: ThreadStatus) {
        if self.status == status {
            return;
        }
        self.status = status.clone();
        out.push(Outgoing::Notify(ServerNotification::ThreadStatusChanged(
            ThreadStatusChangedNotification {
                thread_id: self.thread_id.clone(),
                status,
            },
        )));
    }

    pub(super) fn warning(&self, out: &mut Vec<Outgoing>, message: String) {
        out.push(Outgoing::Notify(ServerNotification::Warning(
            WarningNotification {
                thread_id: Some(self.thread_id.clone()),
                message,
            },
        )));
    }

    /// An error event: the running turn's error (shown when it ends) and an `error`
    /// notification now.
    pub(super) fn error(
        &mut self,
        out: &mut Vec<Outgoing>,
        turn_id: Option<TurnId>,
        code: ErrorCode,
        message: &str,
    ) {
        if let Some(turn) = &mut self.turn {
            turn.error = Some(turn_error(code, message));
        }
        out.push(self.error_or_warning(turn_id, turn_error(code, message), false));
    }

    /// An `error` notification inside a turn; outside one, Codex clients have only
    /// warnings.
    pub(super) fn error_or_warning(
        &self,
        turn_id: Option<TurnId>,
        error: TurnError,
        will_retry: bool,
    ) -> Outgoing {
        Outgoing::Notify(match turn_id {
            Some(turn_id) => ServerNotification::Error(ErrorNotification {
                thread_id: self.thread_id.clone(),
                turn_id: turn_id.to_string(),
                error,
                will_retry,
            }),
            None => ServerNotification::Warning(WarningNotification {
                thread_id: Some(self.thread_id.clone()),
                message: error.message,
            }),
        })
    }

    pub(super) fn goal_updated(
        &self,
        out: &mut Vec<Outgoing>,
        turn_id: Option<TurnId>,
        goal: &ThreadGoal,
    ) {
        out.push(Outgoing::Notify(ServerNotification::ThreadGoalUpdated(
            Box::new(ThreadGoalUpdatedNotification {
                thread_id: self.thread_id.clone(),
                turn_id: turn_id.map(|t| t.to_string()),
                goal: crate::handlers::goal::wire_goal(&self.thread_id, goal),
            }),
        )));
    }

    pub(super) fn goal_cleared(&self, out: &mut Vec<Outgoing>) {
        out.push(Outgoing::Notify(ServerNotification::ThreadGoalCleared(
            ThreadGoalClearedNotification {
                thread_id: self.thread_id.clone(),
            },
        )));
    }

    pub(super) fn shut_down(&mut self, out: &mut Vec<Outgoing>) {
        self.status = ThreadStatus::NotLoaded;
        out.push(Outgoing::Notify(ServerNotification::ThreadClosed(
            ThreadIdNotification {
                thread_id: self.thread_id.clone(),
            },
        )));
        out.push(Outgoing::Closed);
    }
}
