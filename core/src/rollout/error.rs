//! The error type of rollout operations other than recording (which uses
//! [`RecorderError`](crate::recorder::RecorderError), the recorder trait's error).

use std::path::PathBuf;

use rein_protocol::ThreadId;

use crate::recorder::RecorderError;

#[derive(Debug, thiserror::Error)]
pub enum RolloutError {
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} has no session_meta line; it is not a rein rollout")]
    MissingMeta { path: PathBuf },
    #[error("{path} was written by rollout format {found}; this build reads up to {supported}")]
    UnsupportedVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("no rollout for thread {0}")]
    ThreadNotFound(ThreadId),
    #[error("thread {0} is already archived")]
    AlreadyArchived(ThreadId),
    #[error("thread {0} is not archived")]
    NotArchived(ThreadId),
    #[error("the rollout index {path}: {source}")]
    Index {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("invalid list cursor {0:?}")]
    BadCursor(String),
    #[error("forking: {0}")]
    Fork(#[from] crate::rollout::resume::ForkError),
    #[error("{path} is not a Codex rollout: it has no session_meta line")]
    NotCodex { path: PathBuf },
    #[error(transparent)]
    Recorder(#[from] RecorderError),
}

impl RolloutError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| RolloutError::Io {
            action,
            path,
            source,
        }
    }
}
