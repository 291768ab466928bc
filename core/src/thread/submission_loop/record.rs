//! Ops that edit the thread's record without running a turn: naming the thread, setting its
//! memory mode and rolling back its last turns. Each is one event, judged against the state
//! the reducer folded.

use rein_protocol::{EventMsg, OpResult};

use super::SubmissionLoop;

impl SubmissionLoop {
    pub(super) fn on_set_name(&mut self, name: String) -> OpResult {
        let name = name.trim();
        if name.is_empty() {
            return OpResult::Refused {
                message: "a thread name must not be blank".into(),
            };
        }
        let turn = self.state.active_turn.as_ref().map(|t| t.id);
        self.emit(
            turn,
            EventMsg::ThreadNamed {
                name: name.to_owned(),
            },
        );
        OpResult::Accepted
    }

    /// Record the thread's memory mode; the next turn opens with it (the running one keeps
    /// what it was given).
    pub(super) fn on_set_memory_mode(&mut self, mode: rein_protocol::ThreadMemoryMode) -> OpResult {
        let turn = self.state.active_turn.as_ref().map(|t| t.id);
        self.emit(turn, EventMsg::MemoryModeSet { mode });
        OpResult::Accepted
    }

    pub(super) fn on_rollback(&mut self, turns: u32) -> OpResult {
        if let Some(turn) = &self.running {
            return OpResult::Refused {
                message: format!(
                    "turn {} is running; interrupt it before rolling back",
                    turn.id
                ),
            };
        }
        let available = self.state.rollbackable_turns();
        if turns == 0 || turns as usize > available {
            let why = if available < self.state.turns.len() {
                " since its last compaction (earlier turns are summarised)"
            } else {
                ""
            };
            return OpResult::Refused {
                message: format!("cannot roll back {turns} turns; the thread has {available}{why}"),
            };
        }
        self.emit(None, EventMsg::RolledBack { turns });
        OpResult::Accepted
    }
}
