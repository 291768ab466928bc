//! Input routing, the only place that decides whether an input starts a turn, steers the
//! running one, or is rejected. A pure function of the state: a rejection changes nothing.

use rein_protocol::{
    InputMode, InputPart, RejectReason, SettingsChange, TaskKind, ThreadSettings, TurnId,
};

use super::state::ThreadState;

#[derive(Debug, PartialEq)]
pub(crate) enum Route {
    Start {
        /// The settings after the input's change, when it carried one.
        settings: Option<ThreadSettings>,
    },
    Steer {
        turn_id: TurnId,
        settings: Option<ThreadSettings>,
    },
    /// The running turn takes no steers (a compaction); keep the input for the next turn.
    Queue {
        behind: TurnId,
        settings: Option<ThreadSettings>,
    },
    Reject(RejectReason),
}

pub(crate) struct Input<'a> {
    pub items: &'a [InputPart],
    pub mode: InputMode,
    pub change: &'a SettingsChange,
}

pub(crate) fn route(
    state: &ThreadState,
    input: Input<'_>,
    validate: impl FnOnce(&ThreadSettings) -> Result<(), String>,
) -> Route {
    if input.items.iter().all(InputPart::is_blank) {
        return Route::Reject(RejectReason::EmptyInput);
    }
    let settings = if input.change.is_empty() {
        None
    } else {
        let Some(current) = &state.settings else {
            return Route::Reject(RejectReason::InvalidSettings {
                message: "the thread has no settings yet".into(),
            });
        };
        let next = input.change.applied_to(current);
        if let Err(message) = validate(&next) {
            return Route::Reject(RejectReason::InvalidSettings { message });
        }
        Some(next)
    };
    let active = state.active_turn.as_ref();
    match (input.mode, active) {
        (InputMode::StartIfIdle | InputMode::StartOrSteer, None) => Route::Start { settings },
        (InputMode::StartIfIdle, Some(turn)) => Route::Reject(RejectReason::Busy {
            active_turn: turn.id,
        }),
        (InputMode::StartOrSteer, Some(turn)) if turn.kind != TaskKind::Regular => Route::Queue {
            behind: turn.id,
            settings,
        },
        (InputMode::StartOrSteer, Some(turn)) => steer(turn.id, turn.kind, settings),
        (InputMode::Steer(expected), Some(turn)) if turn.id == expected => {
            steer(turn.id, turn.kind, settings)
        }
        (InputMode::Steer(expected), active) => Route::Reject(RejectReason::TurnMismatch {
            expected,
            active: active.map(|t| t.id),
        }),
    }
}

fn steer(turn_id: TurnId, kind: TaskKind, settings: Option<ThreadSettings>) -> Route {
    if kind == TaskKind::Regular {
        Route::Steer { turn_id, settings }
    } else {
        Route::Reject(RejectReason::NotSteerable {
            active_turn: turn_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thread::state::ActiveTurn;
    use rein_protocol::{ApprovalPolicy, SandboxPolicy, TurnBudget};

    fn settings() -> ThreadSettings {
        ThreadSettings {
            model: "m".into(),
            cwd: "/".into(),
            approval_policy: ApprovalPolicy::Never,
            sandbox_policy: SandboxPolicy::ReadOnly,
            sandbox_options: None,
            reasoning_effort: None,
            budget: TurnBudget::default(),
            instructions: String::new(),
        }
    }

    fn state(active: Option<(TurnId, TaskKind)>) -> ThreadState {
        let mut s = ThreadState::new();
        s.settings = Some(settings());
        s.active_turn = active.map(|(id, kind)| ActiveTurn {
            id,
            kind,
            settings: settings(),
            output_schema: None,
        });
        s
    }

    fn go(state: &ThreadState, mode: InputMode, text: &str, change: &SettingsChange) -> Route {
        let items = [InputPart::text(text)];
        route(
            state,
            Input {
                items: &items,
                mode,
                change,
            },
            |s| {
                if s.model == "bad" {
                    Err("unknown model".into())
                } else {
                    Ok(())
                }
            },
        )
    }

    #[test]
    fn blank_input_is_rejected() {
        let r = go(
            &state(None),
            InputMode::StartOrSteer,
            "  \n",
            &SettingsChange::default(),
        );
        assert_eq!(r, Route::Reject(RejectReason::EmptyInput));
    }

    #[test]
    fn review_turns_reject_an_explicit_steer() {
        let t = TurnId::new();
        let r = go(
            &state(Some((t, TaskKind::Review))),
            InputMode::Steer(t),
            "x",
            &SettingsChange::default(),
        );
        assert_eq!(
            r,
            Route::Reject(RejectReason::NotSteerable { active_turn: t })
        );
    }

    #[test]
    fn input_during_a_compaction_is_queued_for_the_next_turn() {
        let t = TurnId::new();
        let s = state(Some((t, TaskKind::Compact)));
        let r = go(&s, InputMode::StartOrSteer, "x", &SettingsChange::default());
        assert_eq!(
            r,
            Route::Queue {
                behind: t,
                settings: None
            }
        );
    }

    #[test]
    fn invalid_settings_reject_before_routing() {
        let change = SettingsChange {
            model: Some("bad".into()),
            ..SettingsChange::default()
        };
        let r = go(&state(None), InputMode::StartOrSteer, "x", &change);
        assert!(matches!(
            r,
            Route::Reject(RejectReason::InvalidSettings { .. })
        ));
    }

    #[test]
    fn steer_with_matching_id_is_accepted() {
        let t = TurnId::new();
        let r = go(
            &state(Some((t, TaskKind::Regular))),
            InputMode::Steer(t),
            "x",
            &SettingsChange::default(),
        );
        assert_eq!(
            r,
            Route::Steer {
                turn_id: t,
                settings: None
            }
        );
    }
}
