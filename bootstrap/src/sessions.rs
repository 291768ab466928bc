//! Threads that outlive the process: start one with a record in the session store, resume
//! one from it, fork one into a new record. The glue between the [`ThreadManager`] and the
//! [`SessionStore`] it owns; front ends (`rein exec`, the app-server) go through here.
//! Everything is async and does no I/O on the caller's thread.
//!
//! [`ThreadManager`]: rein_core::manager::ThreadManager

use std::path::PathBuf;
use std::sync::Arc;

use rein_protocol::{SessionId, Strategy, ThreadId, ThreadSettings};

use crate::Kernel;
use rein_core::error::KernelError;
use rein_core::manager::{NewThread, ThreadOptions, ThreadOrigin};
use rein_core::store::{Diagnostic, ListQuery, SessionMeta, ThreadEntry};
use rein_core::store::{ForkSource, SessionStore};
use rein_core::tools::StaticTools;
use rein_rollout::writer::Durability;

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
    /// What the listing knows of it; `None` for a thread that was already loaded here.
    pub entry: Option<ThreadEntry>,
    /// Whether it was loaded already (nothing was read).
    pub already_loaded: bool,
}

impl Kernel {
    /// The session store every persisted thread of this kernel lives in.
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.store
    }

    /// A new thread; with `Persistence::Rollout` every event goes to its rollout.
    pub async fn start_thread(
        &self,
        settings: ThreadSettings,
        persistence: Persistence,
    ) -> Result<NewThread, KernelError> {
        self.start_thread_as(settings, persistence, None).await
    }

    /// A new thread working by `strategy` (`None`: the configuration's), fixed for its life.
    pub async fn start_thread_as(
        &self,
        settings: ThreadSettings,
        persistence: Persistence,
        strategy: Option<Strategy>,
    ) -> Result<NewThread, KernelError> {
        // Checked before anything is written, so a bad request leaves no file behind.
        self.manager.services().models.client(&settings.model)?;
        self.manager.check_strategy(strategy)?;
        let thread_id = ThreadId::new();
        // Read now, once: the thread keeps what it was told even when the files change.
        let context = self.context_config();
        let cwd = settings.cwd.clone();
        let window = self.models.context_window(&settings.model);
        let assembled =
            tokio::task::spawn_blocking(move || rein_context::assemble(&context, &cwd, window))
                .await
                .unwrap_or_else(|e| rein_context::Assembled {
                    warnings: vec![format!("could not read the project's instructions: {e}")],
                    ..Default::default()
                });
        let search = (assembled.unlisted_skills > 0)
            .then(|| crate::skills_tool::SearchSkills::new(assembled.skills.skills));
        let mut warnings = assembled.warnings;
        if let Some(hooks) = &self.hooks {
            warnings.extend(hooks.warnings(&settings.cwd).await);
        }
        let mut options = ThreadOptions::new(settings.clone())
            .with_context(assembled.context, warnings)
            .with_strategy(strategy);
        options.thread_id = Some(thread_id);
        let mut path = None;
        if persistence == Persistence::Rollout {
            let meta = SessionMeta::new(
                thread_id,
                SessionId::from(thread_id),
                settings.cwd.clone(),
                settings.model.clone(),
                self.provider.clone(),
            );
            let created = self.store.create(meta).await?;
            self.note_transcript(thread_id, created.path.as_ref());
            path = created.path;
            options = options.with_recorder(created.recorder);
        }
        let mut thread = self.manager.create_thread(options)?;
        thread.path = path;
        if let Some(search) = search {
            // Offered from the thread's first step: added before any input can reach it.
            thread
                .handle
                .add_tool_source(Arc::new(StaticTools::new(vec![Arc::new(search)])));
        }
        Ok(thread)
    }

    /// Continue a thread from its rollout. A thread already loaded in this process is
    /// returned as it is, with a fresh subscription.
    pub async fn resume_thread(&self, thread: ThreadId) -> Result<Resumed, KernelError> {
        if let Some(handle) = self.manager.get(thread) {
            let events = handle.subscribe();
            return Ok(Resumed {
                thread: NewThread {
                    handle,
                    events,
                    path: None,
                },
                diagnostics: Vec::new(),
                entry: None,
                already_loaded: true,
            });
        }
        let resumed = self.store.resume(thread).await?;
        let mut new = self
            .manager
            .create_thread(ThreadOptions::resume(resumed.events, resumed.recorder))?;
        new.path = resumed.entry.as_ref().map(|e| e.path.clone());
        self.note_transcript(thread, new.path.as_ref());
        // The open sub-agents of the tree come back with it.
        if let Some(agents) = self.manager.agents() {
            agents.restore(&new.handle).await;
        }
        Ok(Resumed {
            thread: new,
            diagnostics: resumed.diagnostics,
            entry: resumed.entry,
            already_loaded: false,
        })
    }

    /// Branch `parent` after its turn `at_turn` (0-based; default: the last) into a new
    /// thread. The parent is untouched; a running parent is forked as if interrupted.
    pub async fn fork_thread(
        &self,
        parent: ThreadId,
        at_turn: Option<usize>,
    ) -> Result<NewThread, KernelError> {
        let forked = self.store.fork(ForkSource::Stored(parent), at_turn).await?;
        let mut new = self.manager.create_thread(
            ThreadOptions::resume(forked.events, forked.recorder)
                .with_origin(ThreadOrigin::Forked { parent }),
        )?;
        new.path = forked.path;
        self.note_transcript(new.handle.id(), new.path.as_ref());
        Ok(new)
    }

    /// Tell the hooks where `thread`'s rollout is (their input's `transcript_path`).
    fn note_transcript(&self, thread: ThreadId, path: Option<&PathBuf>) {
        if let (Some(hooks), Some(path)) = (&self.hooks, path) {
            hooks.note_transcript(thread, path.clone());
        }
    }

    /// The most recently updated thread started in `cwd`.
    pub async fn most_recent_in(
        &self,
        cwd: &std::path::Path,
    ) -> Result<Option<ThreadId>, KernelError> {
        let page = self
            .store
            .list(ListQuery {
                limit: 1,
                cwd: Some(cwd.to_path_buf()),
                ..Default::default()
            })
            .await?;
        Ok(page.threads.first().map(|t| t.thread_id))
    }

    /// How durable rollouts are (`turn` unless configured otherwise).
    pub fn durability(&self) -> Durability {
        self.durability
    }
}
