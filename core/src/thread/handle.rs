//! What clients hold: a [`ThreadHandle`] sends Ops into the thread's bounded queue and
//! subscribes to its events. Dropping every handle ends the thread (its loop sees the
//! queue close and shuts down cleanly).

use std::sync::Arc;

use rein_protocol::{Op, OpResult, Submission, SubmissionId, ThreadId};
use tokio::sync::oneshot;

use super::bus::{EventBus, EventStream};
use super::state::ThreadState;
use crate::error::ThreadError;
use crate::tools::{ClientCapabilities, ThreadTools, ToolSource};

/// What travels through a thread's queue. Submissions are by far the common message, so
/// boxing them to shrink the rare snapshot request would only add an allocation per Op.
#[allow(clippy::large_enum_variant)]
pub(crate) enum LoopMsg {
    Submit {
        submission: Submission,
        reply: Option<oneshot::Sender<OpResult>>,
    },
    /// A read of the current state; changes nothing.
    Snapshot(oneshot::Sender<ThreadState>),
}

pub(crate) struct HandleInner {
    pub(crate) thread_id: ThreadId,
    pub(crate) inbox: async_channel::Sender<LoopMsg>,
    pub(crate) bus: Arc<EventBus>,
    pub(crate) tools: Arc<ThreadTools>,
}

#[derive(Clone)]
pub struct ThreadHandle {
    pub(crate) inner: Arc<HandleInner>,
}

impl ThreadHandle {
    pub fn id(&self) -> ThreadId {
        self.inner.thread_id
    }

    /// Offer this thread the tools of `source` too, from its next step on (a step that is
    /// already running keeps the tools it froze).
    pub fn add_tool_source(&self, source: Arc<dyn ToolSource>) {
        self.inner.tools.sources.add(source);
    }

    /// What this thread's front end can do for its tools (read and write files through an
    /// editor, run terminals); calls that start afterwards may use it. A front end that
    /// declares a capability must answer the requests it brings.
    pub fn set_client_capabilities(&self, capabilities: ClientCapabilities) {
        self.inner.tools.set_client(capabilities);
    }

    /// Events from now on.
    pub fn subscribe(&self) -> EventStream {
        self.inner.bus.subscribe()
    }

    /// Submit an op and wait for the loop's immediate answer (where the input went, whether
    /// an interrupt found a turn, ...). Waits for queue space when the queue is full.
    pub async fn submit(&self, op: Op) -> Result<OpResult, ThreadError> {
        self.submit_with_id(SubmissionId::new(), op).await
    }

    pub async fn submit_with_id(&self, id: SubmissionId, op: Op) -> Result<OpResult, ThreadError> {
        let (tx, rx) = oneshot::channel();
        self.send(LoopMsg::Submit {
            submission: Submission { id, op },
            reply: Some(tx),
        })
        .await?;
        rx.await.map_err(|_| self.closed())
    }

    /// Put an op in the queue without waiting for its answer. Returns once the queue
    /// accepted it (waiting while the queue is full).
    pub async fn enqueue(&self, op: Op) -> Result<SubmissionId, ThreadError> {
        let id = SubmissionId::new();
        self.enqueue_with_id(id, op).await?;
        Ok(id)
    }

    /// [`enqueue`](Self::enqueue) under a chosen id (a turn the op starts takes this id).
    pub async fn enqueue_with_id(&self, id: SubmissionId, op: Op) -> Result<(), ThreadError> {
        self.send(LoopMsg::Submit {
            submission: Submission { id, op },
            reply: None,
        })
        .await
    }

    /// A copy of the thread's state as the loop sees it now.
    pub async fn state(&self) -> Result<ThreadState, ThreadError> {
        let (tx, rx) = oneshot::channel();
        self.send(LoopMsg::Snapshot(tx)).await?;
        rx.await.map_err(|_| self.closed())
    }

    /// Shut the thread down and wait until it has (after `ShutdownComplete`).
    pub async fn shutdown(&self) -> Result<(), ThreadError> {
        self.submit(Op::Shutdown).await.map(|_| ())
    }

    /// Ops waiting in the queue.
    pub fn queued(&self) -> usize {
        self.inner.inbox.len()
    }

    pub fn is_closed(&self) -> bool {
        self.inner.inbox.is_closed()
    }

    async fn send(&self, msg: LoopMsg) -> Result<(), ThreadError> {
        self.inner.inbox.send(msg).await.map_err(|_| self.closed())
    }

    fn closed(&self) -> ThreadError {
        ThreadError::Closed(self.inner.thread_id)
    }
}
