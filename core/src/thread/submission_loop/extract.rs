//! `[memory] extract`: after every N completed turns of a thread with memory on, the loop
//! starts a turn of its own that asks the model which memories the conversation so far is
//! worth keeping (Codex's phase one, done in the thread rather than on a finished
//! session). The turn is offered `remember` and nothing else, so every memory it
//! proposes takes the one consent path of `remember`: proposed, then accepted or
//! rejected as `[memory] consent` says, each a fact of the rollout, and the model hears
//! the answer. The count of turns is the loop's own (not folded): a resumed thread
//! counts again from zero, so an extraction never runs twice for the same turns by
//! surprise on load.

use rein_protocol::{EventMsg, Item, ItemId, ThreadGoal, ThreadMemoryMode, TurnId};

use super::SubmissionLoop;

/// What the model is asked in an extraction turn.
pub(crate) const EXTRACTION_TEXT: &str = "<memory_extraction>\nLook back over this \
conversation. If the user said something worth keeping for later work (a preference, a \
convention of this project, a fact about its setup), propose each as one memory with the \
`remember` tool: the narrowest scope that fits (thread, repo, user), the content short and \
self-contained, why it is worth keeping. Propose nothing already given to you as a memory, \
nothing secret, nothing that only mattered for this task. If there is nothing worth \
keeping, say so in one line.\n</memory_extraction>";

#[derive(Default)]
pub(super) struct Extraction {
    /// Regular turns completed since the last extraction (or since the thread loaded).
    completed: u32,
    /// An extraction turn is being opened: its first item is the request.
    opening: bool,
    /// The extraction turn running, which counts for nothing itself.
    turn: Option<TurnId>,
}

impl SubmissionLoop {
    /// After a completed turn: count it, and start an extraction once `extract_every`
    /// turns have completed, if the thread is idle (input waiting goes first; the count
    /// stays due and the next completed turn tries again) and no goal is being driven (an
    /// extraction never spends a goal's budget nor delays its next turn; it comes after
    /// the first completed turn once the goal has stopped).
    pub(super) fn extract_after_turn(&mut self, turn_id: TurnId) {
        let Some(every) = self
            .services
            .memory
            .as_ref()
            .and_then(|m| m.policy.extract_every)
        else {
            return;
        };
        if self.extraction.turn.take() == Some(turn_id) {
            return;
        }
        self.extraction.completed += 1;
        if self.extraction.completed < every
            || self.running.is_some()
            || self.read_only.is_some()
            || self.state.memory_mode == ThreadMemoryMode::Disabled
            || self.goal().is_some_and(ThreadGoal::driven)
        {
            return;
        }
        let turn_id = TurnId::new();
        self.extraction.opening = true;
        match self.start_turn(turn_id, Vec::new(), false, None) {
            Ok(()) => {
                self.extraction.completed = 0;
                self.extraction.turn = Some(turn_id);
            }
            Err(reason) => {
                self.extraction.opening = false;
                self.emit(
                    None,
                    EventMsg::Warning {
                        message: format!("the memory extraction could not start: {reason}"),
                    },
                );
            }
        }
    }

    /// Record the extraction's request in the turn just opened, if it is one. True when
    /// it is (the turn is then offered `remember` only).
    pub(super) fn open_extraction_turn(&mut self, turn_id: TurnId) -> bool {
        if !std::mem::take(&mut self.extraction.opening) {
            return false;
        }
        let item = Item::DeveloperMessage {
            id: ItemId::new(),
            text: EXTRACTION_TEXT.to_owned(),
        };
        self.emit(Some(turn_id), EventMsg::ItemCompleted { item });
        true
    }
}
