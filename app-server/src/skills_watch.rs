//! `skills/changed` for one connection: the skill roots of the directories it last listed
//! (`skills/list`) are watched until it lists others or goes away, and each burst of
//! changes is one notification.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use rein_app_server_protocol::skills::SkillsChangedNotification;
use rein_app_server_protocol::ServerNotification;
use rein_bootstrap::skills::watch::SkillsWatch;
use tokio::sync::mpsc;

use crate::dispatch::ServerState;

/// How long changes are gathered into one notification: one save in an editor is several
/// events (a write, a rename, a mode change).
const SETTLE: Duration = Duration::from_millis(100);

/// The connection's watch; replaced by each `skills/list`, dropped with the connection.
/// Dropping the watch ends its forwarding task (its channel closes).
#[derive(Default)]
pub struct SkillsWatching(Mutex<Option<SkillsWatch>>);

impl SkillsWatching {
    fn set(&self, watch: SkillsWatch) {
        let mut slot = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *slot = Some(watch);
    }
}

/// Watch the skill roots of `cwds` for the connection `state`, instead of what it watched.
/// A watch that cannot be set up is logged: listing still works, only the signal is lost.
pub async fn watch(state: &ServerState, cwds: Vec<PathBuf>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<()>();
    let watch = match state
        .kernel
        .watch_skills(cwds, move || {
            let _ = tx.send(());
        })
        .await
    {
        Ok(watch) => watch,
        Err(e) => {
            tracing::warn!("skills/changed: {e}");
            return;
        }
    };
    let out = state.out.clone();
    tokio::spawn(async move {
        while rx.recv().await.is_some() {
            tokio::time::sleep(SETTLE).await;
            while rx.try_recv().is_ok() {}
            out.notify(ServerNotification::SkillsChanged(
                SkillsChangedNotification {},
            ))
            .await;
        }
    });
    state.skills_watch.set(watch);
}
