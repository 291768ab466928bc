//! The thread's end: what runs is aborted, its `SessionEnd` hooks run, everything is
//! released, and Ops still queued get a clear refusal. The hooks run outside any turn, so
//! their `HookStarted` / `HookCompleted` events are collected and emitted once the runs
//! are over (in the order they happened), and they get a short deadline: a hook cannot
//! hold a shutdown hostage.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rein_protocol::{EventMsg, OpResult, RejectReason, TurnAbortReason};
use tokio_util::sync::CancellationToken;

use super::{LoopMsg, SubmissionLoop};
use crate::turn::tool_hooks::HookEvents;

/// How long `SessionEnd` hooks may run before they are killed.
const SESSION_END_DEADLINE: Duration = Duration::from_secs(10);

/// Events of hook runs, kept until the loop can emit them.
#[derive(Default)]
struct Collected(Mutex<Vec<EventMsg>>);

impl HookEvents for Collected {
    fn emit(&self, msg: EventMsg) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(msg);
    }
}

impl SubmissionLoop {
    /// From any state: abort what runs, release everything, say goodbye, stop taking Ops.
    pub(super) async fn shut_down(&mut self) {
        self.abort_turn(TurnAbortReason::Interrupted).await;
        self.run_session_end_hooks().await;
        // The thread's processes end with it (calls still holding its tool state find it
        // empty).
        self.tools.shutdown();
        self.emit(None, EventMsg::ShutdownComplete);
        self.emitter.close().await;
        self.emitter.bus().close();
        self.inbox.close();
        self.answer_closing();
        for (_, reply) in self.deferred.drain(..) {
            if let Some(reply) = reply {
                let _ = reply.send(OpResult::Refused {
                    message: RejectReason::ShuttingDown.to_string(),
                });
            }
        }
        // Ops that were queued behind the shutdown get a clear answer instead of silence.
        while let Ok(msg) = self.inbox.try_recv() {
            if let LoopMsg::Submit {
                reply: Some(reply), ..
            } = msg
            {
                let _ = reply.send(OpResult::Refused {
                    message: RejectReason::ShuttingDown.to_string(),
                });
            }
        }
    }

    /// Run `SessionEnd` for a thread whose session started in this process (a thread only
    /// loaded to be read has no session to end).
    pub(super) async fn run_session_end_hooks(&mut self) {
        let Some(scope) = self.session_hooks.take() else {
            return;
        };
        let collected = Collected::default();
        let cancel = CancellationToken::new();
        let deadline = cancel.clone();
        let timer = tokio::spawn(async move {
            tokio::time::sleep(SESSION_END_DEADLINE).await;
            deadline.cancel();
        });
        scope.session_end("shutdown", &collected, &cancel).await;
        timer.abort();
        let events = collected
            .0
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        for msg in events {
            self.emit(None, msg);
        }
    }
}
