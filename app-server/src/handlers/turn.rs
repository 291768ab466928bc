//! `turn/*` methods (and compaction, rollback). Each goes to the thread's pump, which
//! answers it in order with the thread's notifications (see [`crate::deferred`]).

use std::path::PathBuf;

use rein_app_server_protocol::{
    ReviewStartParams, ReviewTarget as WireTarget, ThreadIdParams, ThreadRollbackParams,
    TurnInterruptParams, TurnStartParams, TurnSteerParams, UserInput,
};
use rein_bootstrap::skills::attach::NamedSkill;
use rein_protocol::{ReviewTarget, SettingsChange, TurnId};
use serde_json::Value;
use tokio::sync::mpsc::error::TrySendError;

use super::loaded;
use crate::convert::{
    approval_policy_from_wire, effort_from_wire, input_from_wire, sandbox_from_wire,
};
use crate::deferred::{self, Responder};
use crate::dispatch::{bounded, params, ServerState, MAX_MODEL_BYTES, MAX_PATH_BYTES};
use crate::error::RpcError;
use crate::loaded::LoadedThread;
use crate::pump::{PumpCmd, PumpRequest};

pub async fn start(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    let p: TurnStartParams = params(raw)?;
    if let Some(model) = &p.model {
        bounded("model", model, MAX_MODEL_BYTES)?;
    }
    if let Some(cwd) = &p.cwd {
        bounded("cwd", cwd, MAX_PATH_BYTES)?;
    }
    // A JSON Schema for the final answer is an object (providers take nothing else).
    if p.output_schema.as_ref().is_some_and(|s| !s.is_object()) {
        return Err(RpcError::invalid_params(
            "outputSchema: must be a JSON object",
            Some("outputSchema".into()),
        ));
    }
    let thread = loaded(state, &p.thread_id)?;
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
        let (policy, options) = sandbox_from_wire(policy)?;
        settings.sandbox_policy = Some(policy);
        settings.sandbox_options = Some(Box::new(options));
    }
    if let Some(effort) = &p.effort {
        settings.reasoning_effort = Some(effort_from_wire(effort)?);
    }
    let items = with_skills(state, &thread, p.cwd.as_deref(), &p.input).await?;
    ask_pump(state, &thread, |reply| PumpCmd::StartTurn {
        reply,
        items,
        settings,
        output_schema: p.output_schema,
    })
    .await
}

/// The kernel's input parts of `input`: its `skill` items and its `$name` mentions attach
/// those skills of the turn's directory; a `skill` item naming none is refused.
async fn with_skills(
    state: &ServerState,
    thread: &crate::loaded::LoadedThread,
    cwd: Option<&str>,
    input: &[UserInput],
) -> Result<Vec<rein_protocol::InputPart>, RpcError> {
    let (named, rest): (Vec<&UserInput>, Vec<&UserInput>) = input
        .iter()
        .partition(|part| matches!(part, UserInput::Skill { .. }));
    let named = named
        .into_iter()
        .filter_map(|part| match part {
            UserInput::Skill { name, path } => Some(NamedSkill {
                name: name.clone(),
                path: (!path.is_empty()).then(|| PathBuf::from(path)),
            }),
            _ => None,
        })
        .collect();
    let rest: Vec<UserInput> = rest.into_iter().cloned().collect();
    let mut items = input_from_wire(&rest)?;
    let cwd = match cwd {
        Some(cwd) => PathBuf::from(cwd),
        None => thread.meta().settings.cwd.clone(),
    };
    state
        .kernel
        .attach_skills(cwd, &mut items, named)
        .await
        .map_err(|e| RpcError::invalid_params(e.to_string(), Some("input".into())))?;
    Ok(items)
}

pub async fn steer(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    let p: TurnSteerParams = params(raw)?;
    let expected = turn_id(&p.expected_turn_id, "expectedTurnId")?;
    let thread = loaded(state, &p.thread_id)?;
    // A skill item or a mention attaches its skill mid-turn too.
    let items = with_skills(state, &thread, None, &p.input).await?;
    ask_pump(state, &thread, |reply| PumpCmd::Steer {
        reply,
        items,
        expected,
    })
    .await
}

pub async fn interrupt(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    let p: TurnInterruptParams = params(raw)?;
    let turn_id = turn_id(&p.turn_id, "turnId")?;
    let thread = loaded(state, &p.thread_id)?;
    ask_pump(state, &thread, |reply| PumpCmd::Interrupt {
        reply,
        turn_id,
    })
    .await
}

/// `review/start`: a review turn on the thread itself (the only delivery there is); the
/// answer names the turn, whose notifications follow.
pub async fn review(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    let p: ReviewStartParams = params(raw)?;
    let thread = loaded(state, &p.thread_id)?;
    let target = match p.target {
        WireTarget::UncommittedChanges => ReviewTarget::UncommittedChanges,
        WireTarget::BaseBranch { branch } => ReviewTarget::BaseBranch { branch },
        WireTarget::Commit { sha, title } => ReviewTarget::Commit { sha, title },
        WireTarget::Custom { instructions } => ReviewTarget::Custom { instructions },
    };
    let required = match &target {
        ReviewTarget::BaseBranch { branch } => Some(("target.branch", branch)),
        ReviewTarget::Commit { sha, .. } => Some(("target.sha", sha)),
        ReviewTarget::Custom { instructions } => Some(("target.instructions", instructions)),
        ReviewTarget::UncommittedChanges => None,
    };
    if let Some((field, _)) = required.filter(|(_, value)| value.trim().is_empty()) {
        return Err(RpcError::invalid_params(
            format!("{field}: must not be empty"),
            Some(field.into()),
        ));
    }
    ask_pump(state, &thread, |reply| PumpCmd::Review { reply, target }).await
}

/// `thread/compact/start`: a compaction turn on the thread (its notifications follow).
pub async fn compact(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    let p: ThreadIdParams = params(raw)?;
    let thread = loaded(state, &p.thread_id)?;
    ask_pump(state, &thread, |reply| PumpCmd::Compact { reply }).await
}

/// `thread/rollback`: drop the last `numTurns` turns; answers the thread with its turns.
pub async fn rollback(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    let p: ThreadRollbackParams = params(raw)?;
    let thread = loaded(state, &p.thread_id)?;
    ask_pump(state, &thread, |reply| PumpCmd::Rollback {
        reply,
        turns: p.num_turns,
    })
    .await
}

fn turn_id(text: &str, field: &str) -> Result<TurnId, RpcError> {
    crate::dispatch::wire_id(text, field, "turn")
}

/// Hand a request to the thread's pump without waiting for room (a full pump queue is
/// "overloaded"), and wait for its answer; the pump goes on once the answer is queued.
pub async fn ask_pump(
    state: &ServerState,
    thread: &LoadedThread,
    cmd: impl FnOnce(Responder) -> PumpCmd,
) -> Result<Value, RpcError> {
    let (responder, pending) = deferred::channel();
    let request = PumpRequest {
        from: state.subscriber(),
        cmd: cmd(responder),
    };
    let shut_down =
        || RpcError::invalid_request(format!("thread {} has shut down", thread.handle.id()));
    match thread.pump.try_send(request) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => return Err(RpcError::overloaded()),
        Err(TrySendError::Closed(_)) => return Err(shut_down()),
    }
    let (outcome, release) = pending.wait().await.ok_or_else(shut_down)?;
    state.release_after_answer(release);
    outcome
}
