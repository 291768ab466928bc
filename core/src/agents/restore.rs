//! Restoring a tree after a resume: the open children come back from their rollouts, and
//! what a crash left undelivered is sent again.

use std::sync::Arc;

use rein_protocol::{InputPart, SubmissionId, ThreadId};

use super::registry::Mail;
use super::AgentControl;
use crate::manager::ThreadOptions;
use crate::thread::state::ThreadState;
use crate::thread::ThreadHandle;

impl AgentControl {
    /// Bring back the open sub-agents of a thread just resumed from its rollout, and
    /// theirs, each with the status its own events fold to (a completed child stays
    /// completed). Children whose rollout cannot be resumed are skipped with a warning.
    pub async fn restore(self: &Arc<Self>, handle: &ThreadHandle) {
        let Ok(manager) = self.manager() else {
            return;
        };
        let mut todo = vec![(handle.clone(), None)];
        while let Some((handle, last_task)) = todo.pop() {
            let Ok(state) = handle.state().await else {
                continue;
            };
            self.register_restored(handle.id(), &state, last_task.clone(), handle.subscribe());
            if state.agent.is_none() {
                self.restore_graph(handle.id(), &state).await;
            }
            self.redeliver(handle.id(), &state, last_task);
            let Some(store) = manager.store() else {
                continue;
            };
            for child in state.children.iter().filter(|c| c.open) {
                if manager.get(child.thread_id).is_some() {
                    continue;
                }
                let resumed = match store.resume(child.thread_id).await {
                    Ok(resumed) => resumed,
                    Err(e) => {
                        tracing::warn!(child = %child.thread_id, "sub-agent not restored: {e}");
                        continue;
                    }
                };
                match manager.create_thread(ThreadOptions::resume(resumed.events, resumed.recorder))
                {
                    Ok(new) => todo.push((new.handle, Some(child.last_task.clone()))),
                    Err(e) => {
                        tracing::warn!(child = %child.thread_id, "sub-agent not restored: {e}")
                    }
                }
            }
        }
    }

    /// What a crash left undelivered to a thread just restored: the mail its mailbox had
    /// recorded, or, for a sub-agent that never started a turn, the task it was spawned
    /// with (which may have waited for capacity in memory only).
    pub(super) fn redeliver(
        self: &Arc<Self>,
        id: ThreadId,
        state: &ThreadState,
        task: Option<String>,
    ) {
        for mail in &state.pending_mail {
            self.send(Mail {
                id: mail.submission_id,
                from: mail.from,
                to: id,
                items: mail.items.clone(),
            });
        }
        let never_ran = state.turns.is_empty() && state.pending_mail.is_empty();
        if let (true, Some(parent), Some(task)) = (
            never_ran,
            state.agent.as_ref().map(|a| a.parent_thread_id),
            task.filter(|t| !t.trim().is_empty()),
        ) {
            self.send(Mail {
                id: SubmissionId::new(),
                from: parent,
                to: id,
                items: vec![InputPart::text(task)],
            });
        }
    }
}
