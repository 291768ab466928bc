//! User input reaching the loop: routed (start a turn, queue behind the running one, or
//! steer it), its settings checked and recorded, and a cut-off turn recovered.

use std::sync::Arc;

use rein_protocol::{
    EventMsg, InputMode, InputOutcome, InputPart, RejectReason, SettingsChange, SubmissionId,
    ThreadSettings, TurnId,
};

use super::SubmissionLoop;
use crate::thread::router::{self, Input, Route};
use crate::turn::pending::PendingEntry;

impl SubmissionLoop {
    fn validate(&self, settings: &ThreadSettings) -> Result<(), String> {
        self.services
            .models
            .client(&settings.model)
            .map(|_| ())
            .map_err(|e| e.to_string())?;
        if let Some(effort) = &settings.reasoning_effort {
            self.services
                .models
                .check_effort(&settings.model, effort)
                .map_err(|e| e.to_string())?;
        }
        if !settings.cwd.is_absolute() {
            return Err(format!(
                "cwd must be an absolute path: {}",
                settings.cwd.display()
            ));
        }
        Ok(())
    }

    pub(super) fn on_input(
        &mut self,
        id: SubmissionId,
        items: Vec<InputPart>,
        mode: InputMode,
        change: &SettingsChange,
        output_schema: Option<serde_json::Value>,
    ) -> InputOutcome {
        let route = router::route(
            &self.state,
            Input {
                items: &items,
                mode,
                change,
            },
            |s| self.validate(s),
        );
        if !matches!(route, Route::Reject(_)) {
            self.goal_saw_input();
        }
        match route {
            Route::Reject(reason) => InputOutcome::Rejected { reason },
            Route::Start { settings } => {
                self.apply_settings(settings);
                let turn_id = TurnId::from(id);
                let mut inputs = self.pending.take_all();
                inputs.push(PendingEntry {
                    submission: id,
                    items,
                    mail: false,
                });
                match self.start_turn(turn_id, inputs, false, output_schema.map(Arc::new)) {
                    Ok(()) => InputOutcome::Started { turn_id },
                    Err(reason) => InputOutcome::Rejected { reason },
                }
            }
            Route::Queue { behind, settings } => {
                self.apply_settings(settings);
                self.pending.push(PendingEntry {
                    submission: id,
                    items,
                    mail: false,
                });
                InputOutcome::Queued { behind }
            }
            Route::Steer { turn_id, settings } => {
                self.apply_settings(settings);
                self.pending.push(PendingEntry {
                    submission: id,
                    items,
                    mail: false,
                });
                InputOutcome::Steered { turn_id }
            }
        }
    }

    fn apply_settings(&mut self, settings: Option<ThreadSettings>) {
        if let Some(settings) = settings {
            if self.state.settings.as_ref() != Some(&settings) {
                self.emit(None, EventMsg::SettingsChanged { settings });
            }
        }
    }

    pub(super) fn on_recover(&mut self) -> InputOutcome {
        let Some(turn) = self
            .state
            .recoverable_turn
            .clone()
            .filter(|_| self.state.is_idle())
        else {
            return InputOutcome::Rejected {
                reason: RejectReason::NothingToRecover,
            };
        };
        let turn_id = turn.id;
        let inputs = self.pending.take_all();
        match self.start_turn(turn_id, inputs, true, turn.output_schema) {
            Ok(()) => InputOutcome::Started { turn_id },
            Err(reason) => InputOutcome::Rejected { reason },
        }
    }
}
