//! Errors of the kernel's public API.

use rein_protocol::ThreadId;

use crate::model::UnknownModel;
use crate::recorder::RecorderError;

#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error(transparent)]
    UnknownModel(#[from] UnknownModel),
    #[error("invalid settings: {0}")]
    InvalidSettings(String),
    #[error("thread {0} is already loaded")]
    AlreadyLoaded(ThreadId),
    #[error("cannot start from these events: {0}")]
    InvalidHistory(String),
    #[error(transparent)]
    Recorder(#[from] RecorderError),
    #[error(transparent)]
    Rollout(#[from] crate::store::RolloutError),
}

/// A handle's request could not be delivered or answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ThreadError {
    #[error("thread {0} has shut down")]
    Closed(ThreadId),
}
