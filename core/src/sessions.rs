//! Threads that outlive the process: start one with a rollout, resume one from its
//! rollout, fork one into a new rollout. The glue between the [`ThreadManager`] and the
//! [`RolloutStore`]; front ends (`rein exec`, the app-server) go through here.

use rein_protocol::{SessionId, ThreadId, ThreadSettings};

use crate::bootstrap::Kernel;
use crate::error::KernelError;
use crate::manager::{NewThread, ThreadOptions};
use crate::recorder::NullRecorder;
use crate::rollout::format::SessionMeta;
use crate::rollout::reader::Diagnostic;
use crate::rollout::writer::Durability;
use crate::rollout::RolloutStore;

/// Whether a thread is written to a rollout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Persistence {
    #[default]
    Rollout,
    /// Nothing is written; the thread cannot be resumed (`--ephemeral`).
    Ephemeral,
}

/// A thread brought back from its rollout.
pub struct Resumed {
    pub thread: NewThread,
    /// Lines the reader skipped, with their line numbers.
    pub diagnostics: Vec<Diagnostic>,
}

impl Kernel {
    pub fn store(&self) -> RolloutStore {
        RolloutStore::new(self.home.clone())
    }

    /// A new thread; with `Persistence::Rollout` every event goes to its rollout.
    pub fn start_thread(
        &self,
        settings: ThreadSettings,
        persistence: Persistence,
    ) -> Result<NewThread, KernelError> {
        let thread_id = ThreadId::new();
        let recorder: Box<dyn crate::recorder::EventRecorder> = match persistence {
            Persistence::Ephemeral => Box::new(NullRecorder),
            Persistence::Rollout => {
                let meta = SessionMeta::new(
                    thread_id,
                    SessionId::from(thread_id),
                    settings.cwd.clone(),
                    settings.model.clone(),
                    self.provider.clone(),
                );
                Box::new(self.store().create(&meta, self.durability)?)
            }
        };
        let mut options = ThreadOptions::new(settings).with_recorder(recorder);
        options.thread_id = Some(thread_id);
        self.manager.create_thread(options)
    }

    /// Continue a thread from its rollout. A thread already loaded in this process is
    /// returned as it is, with a fresh subscription.
    pub fn resume_thread(&self, thread: ThreadId) -> Result<Resumed, KernelError> {
        if let Some(handle) = self.manager.get(thread) {
            let events = handle.subscribe();
            return Ok(Resumed {
                thread: NewThread { handle, events },
                diagnostics: Vec::new(),
            });
        }
        let resumed = self.store().resume(thread, self.durability)?;
        let thread = self.manager.create_thread(ThreadOptions::resume(
            resumed.events,
            Box::new(resumed.writer),
        ))?;
        Ok(Resumed {
            thread,
            diagnostics: resumed.diagnostics,
        })
    }

    /// Branch `parent` after its turn `at_turn` (0-based; default: the last) into a new
    /// thread. The parent is untouched; a running parent is forked as if interrupted.
    pub fn fork_thread(
        &self,
        parent: ThreadId,
        at_turn: Option<usize>,
    ) -> Result<NewThread, KernelError> {
        let forked = self.store().fork(parent, at_turn, self.durability)?;
        self.manager.create_thread(ThreadOptions::resume(
            forked.events,
            Box::new(forked.writer),
        ))
    }

    /// The most recently updated thread started in `cwd`.
    pub fn most_recent_in(&self, cwd: &std::path::Path) -> Result<Option<ThreadId>, KernelError> {
        Ok(self.store().most_recent_in_cwd(cwd)?)
    }
}

impl Kernel {
    /// How durable rollouts are (`turn` unless configured otherwise).
    pub fn durability(&self) -> Durability {
        self.durability
    }
}
