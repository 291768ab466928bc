//! The error type of session-store operations other than recording (which uses
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
        /// The database's own error (the store's index is its business, not the kernel's).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("invalid list cursor {0:?}")]
    BadCursor(String),
    #[error("forking: {0}")]
    Fork(#[from] ForkError),
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

    pub fn io(
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

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ForkError {
    #[error("turn {requested} does not exist; the thread has {available} turns")]
    NoSuchTurn { requested: usize, available: usize },
    #[error("the thread has no completed turn to fork at")]
    NoCompletedTurn,
    #[error("the events do not start with ThreadConfigured")]
    NotConfigured,
}
