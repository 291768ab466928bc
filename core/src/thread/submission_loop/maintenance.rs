//! Maintenance ops (compact, switch model, review, a user's shell command) and the work an idle thread picks up by itself:
//! a model switch waiting on its compaction, maintenance ops deferred behind a turn, and
//! input queued during a turn that took no steers.

use rein_protocol::{AgentStatus, CompactionTrigger, EventMsg, Op, OpResult, SubmissionId, TurnId};

use super::SubmissionLoop;

impl SubmissionLoop {
    /// Handle a maintenance op on an idle thread.
    pub(super) fn on_maintenance(&mut self, id: SubmissionId, op: Op) -> OpResult {
        match op {
            Op::Compact => self.start_compaction(id, CompactionTrigger::Manual),
            Op::SwitchModel { model } => self.on_switch_model(id, model),
            Op::Review { target } => match self.start_review_turn(TurnId::from(id), &target) {
                Ok(()) => OpResult::Accepted,
                Err(reason) => OpResult::Refused {
                    message: reason.to_string(),
                },
            },
            Op::UserShell {
                command,
                timeout_ms,
            } => match self.start_user_shell_turn(TurnId::from(id), command, timeout_ms) {
                Ok(()) => OpResult::Accepted,
                Err(reason) => OpResult::Refused {
                    message: reason.to_string(),
                },
            },
            _ => OpResult::Refused {
                message: "not a maintenance op".into(),
            },
        }
    }

    fn start_compaction(&mut self, id: SubmissionId, trigger: CompactionTrigger) -> OpResult {
        match self.start_compact_turn(TurnId::from(id), trigger) {
            Ok(()) => OpResult::Accepted,
            Err(reason) => OpResult::Refused {
                message: reason.to_string(),
            },
        }
    }

    fn on_switch_model(&mut self, id: SubmissionId, model: String) -> OpResult {
        if let Err(e) = self.services.models.client(&model) {
            return OpResult::Refused {
                message: e.to_string(),
            };
        }
        let Some(current) = self.state.settings.as_ref().map(|s| s.model.clone()) else {
            return OpResult::Refused {
                message: "the thread has no settings".into(),
            };
        };
        if current == model {
            return OpResult::Accepted;
        }
        let window = self.services.models.context_window(&model);
        let limit = self.services.config.compaction_limit(window);
        if matches!(limit, Some(limit) if self.context_tokens() > limit) {
            // Compact with the model that can still read the whole conversation.
            self.switch_after_compaction = Some(model);
            return self.start_compaction(id, CompactionTrigger::ModelSwitch);
        }
        self.emit(
            None,
            EventMsg::ModelSwitched {
                from: current,
                to: model,
            },
        );
        OpResult::Accepted
    }

    /// Run what waits for the thread to be idle, until a turn starts or nothing is left.
    pub(super) async fn resume_idle_work(&mut self) {
        if let Some(model) = self.switch_after_compaction.take() {
            let from = self
                .state
                .settings
                .as_ref()
                .map(|s| s.model.clone())
                .unwrap_or_default();
            if self.state.status == AgentStatus::Completed {
                self.emit(None, EventMsg::ModelSwitched { from, to: model });
            } else {
                self.emit(
                    None,
                    EventMsg::Warning {
                        message: format!(
                            "the switch to {model} was cancelled: the compaction before it did not complete"
                        ),
                    },
                );
            }
        }
        while self.running.is_none() {
            let Some((submission, reply)) = self.deferred.pop_front() else {
                break;
            };
            let result = self.on_maintenance(submission.id, submission.op);
            self.answer_maintenance(reply, result);
        }
        if self.running.is_none() && self.state.status == AgentStatus::Completed {
            self.start_leftover_turn();
        }
    }
}
