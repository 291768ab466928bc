//! The pump's requests that drive the thread: each submits its op to the kernel and answers
//! the client from the kernel's answer (the question broker's requests — answers, a
//! subscriber leaving, asking again — are in `questions.rs`).

use rein_app_server_protocol::{
    EmptyResponse, ReviewStartResponse, ThreadResponse, ThreadStartResponse, TurnStartResponse,
    TurnSteerResponse,
};
use rein_protocol::{
    EventMsg, InputMode, InputOutcome, InputPart, Op, OpResult, ReviewTarget, SettingsChange,
    SubmissionId, ThreadMemoryMode, TurnId,
};
use serde_json::Value;
use tokio::sync::mpsc;

use super::questions::Asked;
use super::{pending_turn, refusal, Pump, PumpCmd, PumpRequest};
use crate::deferred::Responder;
use crate::error::RpcError;
use crate::subscribers::Subscriber;
use crate::turns::turns_from_state;

impl Pump {
    pub(super) async fn start_turn(
        &self,
        reply: Responder<TurnStartResponse>,
        items: Vec<InputPart>,
        settings: SettingsChange,
        output_schema: Option<Value>,
    ) {
        let op = Op::UserInput {
            items,
            mode: InputMode::StartIfIdle,
            settings,
            output_schema,
        };
        let submission = SubmissionId::new();
        let result = match self.submit(submission, op).await {
            Ok(OpResult::Input(InputOutcome::Started { turn_id })) => Ok(TurnStartResponse {
                turn: pending_turn(turn_id),
            }),
            // Behind a compaction: it starts, under the submission's id, right after.
            Ok(OpResult::Input(InputOutcome::Queued { .. })) => Ok(TurnStartResponse {
                turn: pending_turn(TurnId::from(submission)),
            }),
            other => Err(refusal(other)),
        };
        reply.answer(result).await;
    }

    pub(super) async fn steer(
        &self,
        reply: Responder<TurnSteerResponse>,
        items: Vec<InputPart>,
        expected: TurnId,
    ) {
        let op = Op::UserInput {
            items,
            mode: InputMode::Steer(expected),
            settings: SettingsChange::default(),
            output_schema: None,
        };
        let submission = SubmissionId::new();
        let result = match self.submit(submission, op).await {
            Ok(OpResult::Input(InputOutcome::Steered { turn_id })) => Ok(TurnSteerResponse {
                turn_id: turn_id.to_string(),
            }),
            // The running turn takes no steers; the input starts the next one.
            Ok(OpResult::Input(InputOutcome::Queued { .. })) => Ok(TurnSteerResponse {
                turn_id: TurnId::from(submission).to_string(),
            }),
            other => Err(refusal(other)),
        };
        reply.answer(result).await;
    }

    /// Interrupt only the turn the client named (the loop checks, so a turn that started
    /// since is never hit); an ended or unknown turn is answered at once with nothing to do.
    pub(super) async fn interrupt(&self, reply: Responder<EmptyResponse>, turn_id: TurnId) {
        if let Err(e) = self
            .thread
            .handle
            .submit(Op::InterruptTurn { turn_id })
            .await
        {
            tracing::debug!("interrupt: {e}");
        }
        reply.answer(Ok(EmptyResponse {})).await;
    }

    /// Subscribe `from` between two events (see [`PumpCmd::Join`]).
    pub(super) async fn join(
        &self,
        from: Subscriber,
        reply: Responder<ThreadStartResponse>,
        mut response: Box<ThreadStartResponse>,
        exclude_turns: bool,
        asked: &mut Asked,
    ) {
        let folded = match self.thread.handle.state().await {
            Ok(folded) => folded,
            Err(e) => {
                reply
                    .answer(Err(RpcError::invalid_request(e.to_string())))
                    .await;
                return;
            }
        };
        let joining = Subscriber {
            seen_through: folded.last_seq,
            ..from.clone()
        };
        if !self.thread.subscribers.join(joining) {
            let refusal = RpcError::invalid_request(format!(
                "thread {} is being unloaded; resume it again once it has closed",
                self.thread.handle.id()
            ));
            reply.answer(Err(refusal)).await;
            return;
        }
        if !exclude_turns {
            response.thread.turns = turns_from_state(&folded);
        }
        reply.answer(Ok(*response)).await;
        self.send_graph(std::slice::from_ref(&from)).await;
        self.reask(&from, asked).await;
        // The sub-agents' open questions are the root's subscribers' to answer too.
        if !self.sub_agent {
            for child in self.threads.sub_agents_of(&self.thread) {
                let request = PumpRequest {
                    from: from.clone(),
                    cmd: PumpCmd::Reask,
                };
                // Never wait on a busy child's pump: it may be waiting on this one.
                if let Err(mpsc::error::TrySendError::Full(request)) = child.pump.try_send(request)
                {
                    tokio::spawn(async move { child.pump.send(request).await });
                }
            }
        }
    }

    /// Compaction and a user shell command wait behind a running turn; the pump must not
    /// wait with them (it forwards that turn's approvals), so they are queued, not awaited.
    pub(super) async fn enqueue(&self, reply: Responder<EmptyResponse>, op: Op) {
        let result = match self
            .thread
            .handle
            .enqueue_with_id(SubmissionId::new(), op)
            .await
        {
            Ok(()) => Ok(EmptyResponse {}),
            Err(e) => Err(RpcError::invalid_request(e.to_string())),
        };
        reply.answer(result).await;
    }

    /// Queued like [`Pump::enqueue`]; the review turn takes the submission's id, which the
    /// answer can name at once.
    pub(super) async fn review(&self, reply: Responder<ReviewStartResponse>, target: ReviewTarget) {
        let submission = SubmissionId::new();
        let result = match self
            .thread
            .handle
            .enqueue_with_id(submission, Op::Review { target })
            .await
        {
            Ok(()) => Ok(ReviewStartResponse {
                turn: pending_turn(TurnId::from(submission)),
                review_thread_id: self.thread.handle.id().to_string(),
            }),
            Err(e) => Err(RpcError::invalid_request(e.to_string())),
        };
        reply.answer(result).await;
    }

    /// The kernel queued the op's events before answering it: its goal event goes out
    /// before the answer (`thread/goal/updated`, `…/cleared`, as Codex orders them), what
    /// follows it (a goal turn starting) after the answer.
    pub(super) async fn goal(&mut self, reply: Responder<OpResult>, op: Op, asked: &mut Asked) {
        let result = self
            .thread
            .handle
            .submit(op)
            .await
            .map_err(RpcError::internal);
        let mut after = Vec::new();
        let mut goal_seen = false;
        while let Some(event) = self.events.try_recv() {
            if goal_seen {
                after.push(event);
                continue;
            }
            goal_seen = matches!(
                event.msg,
                EventMsg::GoalUpdated { .. } | EventMsg::GoalCleared
            );
            self.on_event(&event, asked).await;
        }
        reply.answer(result).await;
        for event in after {
            self.on_event(&event, asked).await;
        }
    }

    pub(super) async fn set_name(&self, reply: Responder<EmptyResponse>, name: String) {
        let result = match self.submit(SubmissionId::new(), Op::SetName { name }).await {
            Ok(OpResult::Accepted) => Ok(EmptyResponse {}),
            other => Err(refusal(other)),
        };
        reply.answer(result).await;
    }

    pub(super) async fn set_memory_mode(
        &self,
        reply: Responder<EmptyResponse>,
        mode: ThreadMemoryMode,
    ) {
        let op = Op::SetMemoryMode { mode };
        let result = match self.submit(SubmissionId::new(), op).await {
            Ok(OpResult::Accepted) => Ok(EmptyResponse {}),
            other => Err(refusal(other)),
        };
        reply.answer(result).await;
    }

    /// Answered with the thread as it is after the rollback.
    pub(super) async fn rollback(&self, reply: Responder<ThreadResponse>, turns: u32) {
        let result = match self
            .submit(SubmissionId::new(), Op::Rollback { turns })
            .await
        {
            Ok(OpResult::Accepted) => match self.thread.handle.state().await {
                Ok(folded) => {
                    let mut thread = self.thread.meta().to_wire();
                    thread.turns = turns_from_state(&folded);
                    Ok(ThreadResponse::new(thread))
                }
                Err(e) => Err(RpcError::invalid_request(e.to_string())),
            },
            other => Err(refusal(other)),
        };
        reply.answer(result).await;
    }
}
