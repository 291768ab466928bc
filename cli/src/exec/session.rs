//! Which thread a run works on: a new one (persisted unless `--ephemeral`), an earlier
//! one resumed from its rollout (by id, or the most recent with `--last`), or a fork of
//! an earlier one. The kernel's session API does the work; `--ephemeral` on a resume or
//! fork loads the history and writes nothing back.

use std::path::Path;

use anyhow::{bail, Context};
use rein_bootstrap::sessions::Persistence;
use rein_bootstrap::Kernel;
use rein_core::recorder::NullRecorder;
use rein_core::store::ListQuery;
use rein_core::{NewThread, ThreadOptions};
use rein_protocol::{ThreadId, ThreadSettings};
use rein_rollout::{fork_events, repair_for_resume};

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

/// Opens the thread. A resumed or forked thread's history is folded, not replayed to
/// clients, so the caller announces it.
pub async fn open(
    kernel: &Kernel,
    start: &SessionStart,
    settings: ThreadSettings,
    ephemeral: bool,
) -> anyhow::Result<NewThread> {
    let persistence = if ephemeral {
        Persistence::Ephemeral
    } else {
        Persistence::Rollout
    };
    match start {
        SessionStart::New => Ok(kernel.start_thread(settings, persistence).await?),
        SessionStart::Resume(target) => {
            let id = match target {
                ResumeTarget::Id(id) => *id,
                ResumeTarget::Last { all } => last_session(kernel, &settings.cwd, *all).await?,
            };
            if ephemeral {
                let loaded = kernel
                    .store()
                    .read(id)
                    .await
                    .with_context(|| format!("loading session {id}"))?;
                let events = repair_for_resume(loaded.events);
                return Ok(kernel
                    .manager
                    .create_thread(ThreadOptions::resume(events, Box::new(NullRecorder)))?);
            }
            let resumed = kernel
                .resume_thread(id)
                .await
                .with_context(|| format!("resuming session {id}"))?;
            for d in &resumed.diagnostics {
                eprintln!(
                    "warning: session {id}, line {}: skipped ({:?})",
                    d.line, d.kind
                );
            }
            Ok(resumed.thread)
        }
        SessionStart::Fork { parent, at_turn } => {
            if ephemeral {
                let loaded = kernel
                    .store()
                    .read(*parent)
                    .await
                    .with_context(|| format!("loading session {parent}"))?;
                let events = fork_events(&loaded.events, *at_turn, ThreadId::new())
                    .with_context(|| format!("forking session {parent}"))?;
                return Ok(kernel
                    .manager
                    .create_thread(ThreadOptions::resume(events, Box::new(NullRecorder)))?);
            }
            Ok(kernel
                .fork_thread(*parent, *at_turn)
                .await
                .with_context(|| format!("forking session {parent}"))?)
        }
    }
}

async fn last_session(kernel: &Kernel, cwd: &Path, all: bool) -> anyhow::Result<ThreadId> {
    let found = if all {
        kernel
            .store()
            .list(ListQuery {
                limit: 1,
                ..ListQuery::default()
            })
            .await
            .context("listing sessions")?
            .threads
            .first()
            .map(|t| t.thread_id)
    } else {
        kernel
            .most_recent_in(cwd)
            .await
            .context("listing sessions")?
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
