//! Which thread a run works on: a new one (persisted unless `--ephemeral`), an earlier
//! one resumed from its rollout (by id, or the most recent with `--last`), or a fork of
//! an earlier one. Persistence goes through `$REIN_HOME/sessions` ([`RolloutStore`]).

use std::path::Path;

use anyhow::{bail, Context};
use rein_core::bootstrap::Kernel;
use rein_core::recorder::{EventRecorder, NullRecorder, RecorderError};
use rein_core::rollout::index::ListQuery;
use rein_core::rollout::{fork_events, repair_for_resume, Durability, RolloutStore, SessionMeta};
use rein_core::{NewThread, ThreadOptions, ThreadStart};
use rein_protocol::{Event, EventMsg, ThreadId, ThreadSettings};

/// Where the run's thread comes from.
#[derive(Debug)]
pub enum SessionStart {
    New,
    Resume(ResumeTarget),
    Fork {
        parent: ThreadId,
        /// 0-based index of the last turn kept; `None` keeps them all.
        at_turn: Option<usize>,
    },
}

#[derive(Debug)]
pub enum ResumeTarget {
    Id(ThreadId),
    /// The most recently updated session, of this cwd unless `all`.
    Last {
        all: bool,
    },
}

/// Opens the thread. For a resumed or forked thread, its history is folded, not replayed
/// to clients, so the caller announces it.
pub fn open(
    kernel: &Kernel,
    start: &SessionStart,
    settings: ThreadSettings,
    ephemeral: bool,
) -> anyhow::Result<NewThread> {
    let store = RolloutStore::new(&kernel.home);
    let (thread_start, recorder): (ThreadStart, Box<dyn EventRecorder>) = match start {
        SessionStart::New => {
            let recorder: Box<dyn EventRecorder> = if ephemeral {
                Box::new(NullRecorder)
            } else {
                Box::new(NewRollout {
                    store,
                    provider: kernel.provider.clone(),
                    writer: None,
                })
            };
            (ThreadStart::New { settings }, recorder)
        }
        SessionStart::Resume(target) => {
            let id = match target {
                ResumeTarget::Id(id) => *id,
                ResumeTarget::Last { all } => last_session(&store, &settings.cwd, *all)?,
            };
            if ephemeral {
                let loaded = store
                    .load(id)
                    .with_context(|| format!("loading session {id}"))?;
                (
                    ThreadStart::Resume {
                        events: repair_for_resume(loaded.events),
                    },
                    Box::new(NullRecorder),
                )
            } else {
                let resumed = store
                    .resume(id, Durability::Turn)
                    .with_context(|| format!("resuming session {id}"))?;
                (
                    ThreadStart::Resume {
                        events: resumed.events,
                    },
                    Box::new(resumed.writer),
                )
            }
        }
        SessionStart::Fork { parent, at_turn } => {
            // The fork's events are already rewritten to the new thread; they are folded
            // as a resume, because the writer that holds them has recorded them already.
            if ephemeral {
                let loaded = store
                    .load(*parent)
                    .with_context(|| format!("loading session {parent}"))?;
                let events = fork_events(&loaded.events, *at_turn, ThreadId::new())
                    .with_context(|| format!("forking session {parent}"))?;
                (ThreadStart::Resume { events }, Box::new(NullRecorder))
            } else {
                let forked = store
                    .fork(*parent, *at_turn, Durability::Turn)
                    .with_context(|| format!("forking session {parent}"))?;
                (
                    ThreadStart::Resume {
                        events: forked.events,
                    },
                    Box::new(forked.writer),
                )
            }
        }
    };
    Ok(kernel.manager.create_thread(ThreadOptions {
        start: thread_start,
        recorder,
    })?)
}

fn last_session(store: &RolloutStore, cwd: &Path, all: bool) -> anyhow::Result<ThreadId> {
    let found = if all {
        store
            .list(&ListQuery {
                limit: 1,
                ..ListQuery::default()
            })
            .context("listing sessions")?
            .threads
            .first()
            .map(|t| t.thread_id)
    } else {
        store.most_recent_in_cwd(cwd).context("listing sessions")?
    };
    match found {
        Some(id) => Ok(id),
        None if all => bail!("there is no session to resume"),
        None => bail!(
            "there is no session in {} to resume (`--all` looks in every directory)",
            cwd.display()
        ),
    }
}

/// The rollout of a new thread, created when its first event (`ThreadConfigured`, which
/// names the thread, its cwd and model) arrives: the kernel picks the thread id.
struct NewRollout {
    store: RolloutStore,
    provider: String,
    writer: Option<rein_core::rollout::RolloutWriter>,
}

impl EventRecorder for NewRollout {
    fn record(&mut self, event: &Event) -> Result<(), RecorderError> {
        if self.writer.is_none() {
            let EventMsg::ThreadConfigured {
                session_id,
                settings,
                ..
            } = &event.msg
            else {
                // Nothing can be recorded before the thread says who it is.
                return Ok(());
            };
            let meta = SessionMeta::new(
                event.thread_id,
                *session_id,
                settings.cwd.clone(),
                settings.model.clone(),
                self.provider.clone(),
            );
            let writer =
                self.store
                    .create(&meta, Durability::Turn)
                    .map_err(|e| RecorderError::Io {
                        path: self.store.home().join("sessions"),
                        source: std::io::Error::other(e),
                    })?;
            self.writer = Some(writer);
        }
        match &mut self.writer {
            Some(writer) => writer.record(event),
            None => Ok(()),
        }
    }

    fn sync(&mut self) -> Result<(), RecorderError> {
        match &mut self.writer {
            Some(writer) => writer.sync(),
            None => Ok(()),
        }
    }

    fn path(&self) -> Option<std::path::PathBuf> {
        self.writer.as_ref().and_then(EventRecorder::path)
    }
}
