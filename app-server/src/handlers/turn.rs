//! `turn/*` methods. Each goes to the thread's pump, which answers it in order with the
//! thread's notifications.

use std::path::PathBuf;

use rein_protocol::app_server::{
    RequestId, ThreadIdParams, ThreadRollbackParams, TurnInterruptParams, TurnStartParams,
    TurnSteerParams,
};
use rein_protocol::{SettingsChange, TurnId};
use serde_json::Value;
use tokio::sync::mpsc::error::TrySendError;

use super::loaded;
use crate::convert::{
    approval_policy_from_wire, effort_from_wire, input_from_wire, sandbox_from_wire,
};
use crate::dispatch::{params, Reply, ServerState};
use crate::error::RpcError;
use crate::loaded::LoadedThread;
use crate::pump::{PumpCmd, PumpRequest};

pub async fn start(state: &ServerState, id: RequestId, raw: Value) -> Reply {
    let prepared = (|| {
        let p: TurnStartParams = params(raw)?;
        let thread = loaded(state, &p.thread_id)?;
        let items = input_from_wire(&p.input)?;
        let mut settings = SettingsChange {
            model: p.model.clone(),
            ..SettingsChange::default()
        };
        if let Some(cwd) = &p.cwd {
            let cwd = PathBuf::from(cwd);
            if !cwd.is_absolute() {
                return Err(RpcError::invalid_params(
                    "cwd: must be an absolute path",
                    Some("cwd".into()),
                ));
            }
            settings.cwd = Some(cwd);
        }
        if let Some(policy) = &p.approval_policy {
            settings.approval_policy = Some(approval_policy_from_wire(policy)?);
        }
        if let Some(policy) = &p.sandbox_policy {
            settings.sandbox_policy = Some(sandbox_from_wire(policy));
        }
        if let Some(effort) = &p.effort {
            settings.reasoning_effort = effort_from_wire(effort)?;
        }
        Ok((thread, items, settings, p.output_schema))
    })();
    match prepared {
        Ok((thread, items, settings, output_schema)) => send(
            state,
            &thread,
            PumpCmd::StartTurn {
                id,
                items,
                settings,
                output_schema,
            },
        ),
        Err(e) => Reply::Now(Err(e)),
    }
}

pub async fn steer(state: &ServerState, id: RequestId, raw: Value) -> Reply {
    let prepared = (|| {
        let p: TurnSteerParams = params(raw)?;
        let expected = turn_id(&p.expected_turn_id, "expectedTurnId")?;
        let thread = loaded(state, &p.thread_id)?;
        Ok((thread, input_from_wire(&p.input)?, expected))
    })();
    match prepared {
        Ok((thread, items, expected)) => send(
            state,
            &thread,
            PumpCmd::Steer {
                id,
                items,
                expected,
            },
        ),
        Err(e) => Reply::Now(Err(e)),
    }
}

pub async fn interrupt(state: &ServerState, id: RequestId, raw: Value) -> Reply {
    let prepared = (|| {
        let p: TurnInterruptParams = params(raw)?;
        let turn_id = turn_id(&p.turn_id, "turnId")?;
        Ok((loaded(state, &p.thread_id)?, turn_id))
    })();
    match prepared {
        Ok((thread, turn_id)) => send(state, &thread, PumpCmd::Interrupt { id, turn_id }),
        Err(e) => Reply::Now(Err(e)),
    }
}

/// `thread/compact/start`: a compaction turn on the thread (its notifications follow).
pub async fn compact(state: &ServerState, id: RequestId, raw: Value) -> Reply {
    let prepared = (|| {
        let p: ThreadIdParams = params(raw)?;
        loaded(state, &p.thread_id)
    })();
    match prepared {
        Ok(thread) => send(state, &thread, PumpCmd::Compact { id }),
        Err(e) => Reply::Now(Err(e)),
    }
}

/// `thread/rollback`: drop the last `numTurns` turns; answers the thread with its turns.
pub async fn rollback(state: &ServerState, id: RequestId, raw: Value) -> Reply {
    let prepared = (|| {
        let p: ThreadRollbackParams = params(raw)?;
        Ok((loaded(state, &p.thread_id)?, p.num_turns))
    })();
    match prepared {
        Ok((thread, turns)) => send(state, &thread, PumpCmd::Rollback { id, turns }),
        Err(e) => Reply::Now(Err(e)),
    }
}

fn turn_id(text: &str, field: &str) -> Result<TurnId, RpcError> {
    text.parse().map_err(|_| {
        RpcError::invalid_params(
            format!("{field}: not a turn id: {text:?}"),
            Some(field.into()),
        )
    })
}

/// Hand a request to the thread's pump without waiting: a full pump queue is "overloaded".
fn send(state: &ServerState, thread: &LoadedThread, cmd: PumpCmd) -> Reply {
    let request = PumpRequest {
        from: state.subscriber(),
        cmd,
    };
    match thread.pump.try_send(request) {
        Ok(()) => Reply::Deferred,
        Err(TrySendError::Full(_)) => Reply::Now(Err(RpcError::overloaded())),
        Err(TrySendError::Closed(_)) => Reply::Now(Err(RpcError::invalid_request(format!(
            "thread {} has shut down",
            thread.handle.id()
        )))),
    }
}
