//! The pending-input queue (the mailbox) of a thread: steers wait here until the running
//! task drains them at its next step boundary. The loop owns it and shares it with the
//! task, so a task that is hard-aborted cannot take accepted input down with it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use rein_protocol::{InputPart, SubmissionId};

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PendingEntry {
    pub submission: SubmissionId,
    pub items: Vec<InputPart>,
    /// Mail from another thread of the tree rather than the user's own input: after the
    /// turn's final answer it waits for the next turn instead of reviving this one.
    pub mail: bool,
}

/// The mail among `entries`: what leaves the mailbox (`MailTaken`) when they become
/// history.
pub(crate) fn mail_ids(entries: &[PendingEntry]) -> Vec<SubmissionId> {
    entries
        .iter()
        .filter(|e| e.mail)
        .map(|e| e.submission)
        .collect()
}

#[derive(Clone, Default)]
pub(crate) struct PendingInput(Arc<Mutex<VecDeque<PendingEntry>>>);

impl PendingInput {
    fn lock(&self) -> MutexGuard<'_, VecDeque<PendingEntry>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn push(&self, entry: PendingEntry) {
        self.lock().push_back(entry);
    }

    /// Take the mail `id` out of the mailbox, if it still waits there (not yet history):
    /// what a `wait_agent` claims for its answer instead of letting it become a message.
    pub(crate) fn take_mail(&self, id: SubmissionId) -> bool {
        let mut queue = self.lock();
        let before = queue.len();
        queue.retain(|e| !(e.mail && e.submission == id));
        queue.len() != before
    }

    /// Whether the mail `id` waits in the mailbox.
    pub(crate) fn has_mail(&self, id: SubmissionId) -> bool {
        self.lock().iter().any(|e| e.mail && e.submission == id)
    }

    pub(crate) fn take_all(&self) -> Vec<PendingEntry> {
        self.lock().drain(..).collect()
    }

    /// Whether user input (not mail) waits: what still deserves an answer in this turn.
    pub(crate) fn has_steers(&self) -> bool {
        self.lock().iter().any(|e| !e.mail)
    }
}
