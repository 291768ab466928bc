//! `[memory] extract`: after every N completed turns of a thread with memory on, the loop
//! starts a turn of its own that asks the model which memories the conversation so far is
//! worth keeping (Codex's phase one, done in the thread rather than on a finished
//! session). The turn is offered `remember` and nothing else, so every memory it
//! proposes takes the one consent path of `remember`: proposed, then accepted or
//! rejected as `[memory] consent` says, each a fact of the rollout, and the model hears
//! the answer. The count of turns is the loop's own (not folded): a resumed thread
//! counts again from zero, so an extraction never runs twice for the same turns by
//! surprise on load.
//!
//! At the thread's end (`Op::Shutdown`: `rein exec` after its turn, an archive, an
//! unload, the process ending), turns completed since the last extraction get one more
//! (Codex extracts from finished sessions): the shutdown waits for it, bounded by
//! [`END_EXTRACTION_DEADLINE`], so the thread is reported done only once what it kept is
//! in the rollout. An extraction already running at that moment covers those turns; it
//! is waited for, and no second one starts.

use std::time::Duration;

use rein_protocol::{
    EventMsg, Item, ItemId, Op, OpResult, RejectReason, ThreadGoal, ThreadMemoryMode,
    TurnAbortReason, TurnId,
};
use tokio::sync::oneshot;
use tokio::time::Instant;

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
    /// Set once a shutdown was asked: who waits for it (answered once it is done). While
    /// set, only the end's extraction runs.
    closing: Option<Vec<oneshot::Sender<OpResult>>>,
    /// An extraction completed and `[memory] consolidate` asks for the files.
    consolidate: bool,
}

/// How long the extraction at a thread's end may run (a model request per proposal, and
/// a consent question, which at a thread's end may have nobody left to answer it) before
/// it is aborted and the thread shuts down anyway.
pub(super) const END_EXTRACTION_DEADLINE: Duration = Duration::from_secs(60);

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
            self.extraction.consolidate = self
                .services
                .memory
                .as_ref()
                .is_some_and(|m| m.policy.consolidate);
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
        self.start_extraction();
    }

    /// Start an extraction turn now; false (and a warning) when it cannot start.
    fn start_extraction(&mut self) -> bool {
        let turn_id = TurnId::new();
        self.extraction.opening = true;
        match self.start_turn(turn_id, Vec::new(), false, None) {
            Ok(()) => {
                self.extraction.completed = 0;
                self.extraction.turn = Some(turn_id);
                true
            }
            Err(reason) => {
                self.extraction.opening = false;
                self.emit(
                    None,
                    EventMsg::Warning {
                        message: format!("the memory extraction could not start: {reason}"),
                    },
                );
                false
            }
        }
    }

    /// `Op::Shutdown`: stop what runs (an extraction is let finish) and, when turns
    /// completed since the last extraction, extract from them first. The shutdown itself
    /// happens once nothing runs ([`Self::ready_to_shut_down`]); a second shutdown asked
    /// meanwhile waits with the first.
    pub(super) async fn begin_shutdown(&mut self, reply: Option<oneshot::Sender<OpResult>>) {
        let first = self.extraction.closing.is_none();
        self.extraction
            .closing
            .get_or_insert_with(Vec::new)
            .extend(reply);
        if !first {
            return;
        }
        // Input still queued would start a turn after the extraction, or be drained into
        // it as the user's words; the thread ends without running it (as a shutdown always
        // did; queued mail stays in the thread's state for its next load).
        drop(self.pending.take_all());
        let extracting = self
            .running
            .as_ref()
            .is_some_and(|t| Some(t.id) == self.extraction.turn);
        if extracting {
            self.bound_extraction();
            return;
        }
        self.abort_turn(TurnAbortReason::Interrupted).await;
        if !self.end_extraction_due() {
            return;
        }
        if self.start_extraction() {
            self.bound_extraction();
        }
    }

    /// The end's extraction gets [`END_EXTRACTION_DEADLINE`] at most.
    fn bound_extraction(&mut self) {
        if let Some(turn) = self.running.as_mut() {
            let end = Instant::now() + END_EXTRACTION_DEADLINE;
            turn.deadline = Some(turn.deadline.map_or(end, |d| d.min(end)));
        }
    }

    /// Turns completed since the last extraction, in a thread that extracts: memory and
    /// `extract` on, not disabled for the thread, not a sub-agent (Codex extracts from
    /// root sessions only), not driving a goal (it would spend the goal's budget), and
    /// able to record it.
    fn end_extraction_due(&self) -> bool {
        let extracts = self
            .services
            .memory
            .as_ref()
            .is_some_and(|m| m.policy.extract_every.is_some());
        extracts
            && self.extraction.completed > 0
            && self.read_only.is_none()
            && self.state.memory_mode == ThreadMemoryMode::Enabled
            && self.state.agent.is_none()
            && !self.goal().is_some_and(ThreadGoal::driven)
    }

    /// After each message the loop handled: consolidate the memories once an extraction
    /// completed (`[memory] consolidate`), then shut down if a shutdown was asked and
    /// nothing runs any more. True when the thread shut down.
    pub(super) async fn after_extraction(&mut self) -> bool {
        if std::mem::take(&mut self.extraction.consolidate) {
            self.consolidate_memories().await;
        }
        if self.extraction.closing.is_none() || self.running.is_some() {
            return false;
        }
        self.shut_down().await;
        true
    }

    /// Write the accepted memories of the user and of the thread's repository into their
    /// `MEMORY.md` files, before the thread is reported done at its end. A projection: a
    /// failure is a warning, and the store keeps every memory anyway.
    async fn consolidate_memories(&mut self) {
        let Some(memory) = self.services.memory.clone() else {
            return;
        };
        let Some(cwd) = self.state.settings.as_ref().map(|s| s.cwd.clone()) else {
            return;
        };
        if let Err(e) = memory.store.consolidate(&cwd).await {
            self.emit(
                None,
                EventMsg::Warning {
                    message: format!("the memories could not be consolidated: {e}"),
                },
            );
        }
    }

    /// While the thread is closing: no new work (`None` for what may still come: an
    /// interrupt stops the extraction, an answer decides its proposal, another shutdown
    /// waits with the first).
    pub(super) fn refuse_while_closing(&self, op: &Op) -> Option<OpResult> {
        self.extraction.closing.as_ref()?;
        match op {
            Op::Interrupt
            | Op::InterruptTurn { .. }
            | Op::BudgetStop
            | Op::Shutdown
            | Op::ApprovalAnswer { .. }
            | Op::Respond { .. } => None,
            _ => Some(OpResult::Refused {
                message: RejectReason::ShuttingDown.to_string(),
            }),
        }
    }

    /// Answer everyone who waited for the shutdown.
    pub(super) fn answer_closing(&mut self) {
        for reply in self.extraction.closing.take().into_iter().flatten() {
            let _ = reply.send(OpResult::Accepted);
        }
    }

    /// The model of the extraction turn being opened, when `[memory]` names one.
    pub(super) fn extraction_model(&self) -> Option<String> {
        if !self.extraction.opening {
            return None;
        }
        self.services.memory.as_ref()?.policy.extract_model.clone()
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
