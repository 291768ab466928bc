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
    #[error("{path} is {what}, not a rollout file")]
    NotRegular { path: PathBuf, what: &'static str },
    #[error("{path} is named for thread {named} but its session_meta is thread {meta}'s")]
    MetaMismatch {
        path: PathBuf,
        named: ThreadId,
        meta: ThreadId,
    },
    #[error("the rollout of thread {thread} cannot be used: {why}")]
    Damaged { thread: ThreadId, why: String },
    #[error("the rollout index is unavailable: {0}")]
    IndexUnavailable(String),
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
    /// The error as a caller asking about `thread` should see it: a problem with the
    /// thread's file becomes [`RolloutError::Damaged`], naming the thread and the file by
    /// its name only (absolute paths stay in the logs).
    pub fn for_thread(self, thread: ThreadId) -> Self {
        let file = |path: &std::path::Path| {
            path.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        };
        let why = match &self {
            RolloutError::Io {
                action,
                path,
                source,
            } => {
                format!("{action} {}: {}", file(path), source.kind())
            }
            RolloutError::MissingMeta { path } => {
                format!("{} has no session_meta line", file(path))
            }
            RolloutError::NotRegular { path, what } => format!("{} is {what}", file(path)),
            RolloutError::MetaMismatch { path, meta, .. } => {
                format!("{} holds the session_meta of thread {meta}", file(path))
            }
            RolloutError::UnsupportedVersion {
                found, supported, ..
            } => {
                format!("written by rollout format {found}; this build reads up to {supported}")
            }
            RolloutError::Recorder(RecorderError::Io { path, source }) => {
                format!("writing {}: {}", file(path), source.kind())
            }
            _ => return self,
        };
        tracing::warn!(%thread, "rollout problem: {self}");
        RolloutError::Damaged { thread, why }
    }

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
