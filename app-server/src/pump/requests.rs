//! What a pump is asked to do: the requests that must be ordered with the thread's
//! notifications, and the table that routes a client's answers to the pump that asked.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use rein_app_server_protocol::{
    EmptyResponse, RequestId, ReviewStartResponse, ThreadResponse, ThreadStartResponse,
    TurnStartResponse, TurnSteerResponse,
};
use rein_protocol::{InputPart, Op, OpResult, SettingsChange, TurnId};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::deferred::Responder;
use crate::subscribers::Subscriber;

/// A request for a pump, from the connection `from` (which gets the answer).
pub struct PumpRequest {
    pub from: Subscriber,
    pub cmd: PumpCmd,
}

/// Requests a pump carries out, each answering through its `reply`.
pub enum PumpCmd {
    StartTurn {
        reply: Responder<TurnStartResponse>,
        items: Vec<InputPart>,
        settings: SettingsChange,
        /// `outputSchema`: structured output for this turn.
        output_schema: Option<serde_json::Value>,
    },
    Steer {
        reply: Responder<TurnSteerResponse>,
        items: Vec<InputPart>,
        expected: TurnId,
    },
    Interrupt {
        reply: Responder<EmptyResponse>,
        turn_id: TurnId,
    },
    /// The client answered the server → client request `request_id`.
    Answer {
        request_id: RequestId,
        outcome: Result<Value, Value>,
    },
    /// The connection asks to subscribe (`thread/resume` of the loaded thread). The pump
    /// takes the thread's state and subscribes it between two events, so nothing is shown
    /// twice or missed: it answers `response` (with the turns of that state unless
    /// `exclude_turns`), then puts the questions still open to it too, and has its
    /// sub-agents' pumps do the same ([`PumpCmd::Reask`]).
    Join {
        reply: Responder<ThreadStartResponse>,
        response: Box<ThreadStartResponse>,
        exclude_turns: bool,
    },
    /// The connection subscribed to this sub-agent's root (whose `thread/resume` is
    /// answered): put the questions still open here to it too.
    Reask,
    /// The connection stopped listening (unsubscribed or went away); `last` if nobody
    /// listens any more, which starts the idle-unload countdown.
    Left { last: bool },
    /// Summarise the history now (`thread/compact/start`).
    Compact { reply: Responder<EmptyResponse> },
    /// Run the user's command in the thread (`thread/shellCommand`): queued behind a
    /// running turn, like compaction.
    Shell {
        reply: Responder<EmptyResponse>,
        command: String,
        timeout_ms: Option<u64>,
    },
    /// Review code in a review turn (`review/start`).
    Review {
        reply: Responder<ReviewStartResponse>,
        target: rein_protocol::ReviewTarget,
    },
    /// Drop the last `turns` turns from the model-visible history (`thread/rollback`).
    Rollback {
        reply: Responder<ThreadResponse>,
        turns: u32,
    },
    /// A goal op (`thread/goal/set`, `thread/goal/clear`): answered after its goal event
    /// (`thread/goal/updated` before the answer, as Codex orders them) and before what
    /// follows it (the goal's turn).
    Goal { reply: Responder<OpResult>, op: Op },
    /// Name the thread (`thread/name/set`); `thread/name/updated` follows the answer, to
    /// every subscriber, when the thread records the name.
    SetName {
        reply: Responder<EmptyResponse>,
        name: String,
    },
    /// Record the thread's memory mode (`thread/memoryMode/set`).
    SetMemoryMode {
        reply: Responder<EmptyResponse>,
        mode: rein_protocol::ThreadMemoryMode,
    },
}

/// Server → client requests one connection is waiting to have answered: request id → the
/// pump that asked.
#[derive(Default)]
pub struct PendingRequests {
    inner: Mutex<HashMap<RequestId, mpsc::Sender<PumpRequest>>>,
}

impl PendingRequests {
    fn lock(&self) -> MutexGuard<'_, HashMap<RequestId, mpsc::Sender<PumpRequest>>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn take(&self, id: &RequestId) -> Option<mpsc::Sender<PumpRequest>> {
        self.lock().remove(id)
    }

    pub(super) fn insert(&self, id: RequestId, pump: mpsc::Sender<PumpRequest>) {
        self.lock().insert(id, pump);
    }
}
