//! A recorded session read as a replay needs it: per turn, the user's input and the
//! settings it ran with; per step, the request fingerprint (when recorded), the model's
//! reply and the outcome of each tool call. Sessions a replay cannot reproduce say why.

use rein_core::thread::state::prefix_items;
use rein_core::tools::ToolResult;
use rein_protocol::{
    ApprovalOutcome, Event, EventMsg, InputPart, Item, RequestFingerprint, SessionGrant, TaskKind,
    ThreadContext, ThreadSettings, TokenUsage, ToolFacts, ToolOutcome, TurnAbortReason,
};

/// What a replay runs and compares against.
#[derive(Clone, Debug)]
pub struct Recording {
    pub turns: Vec<RecordedTurn>,
    /// Every history item in the order it was completed: a step's input is a prefix of it
    /// (a replayable session was never compacted or rolled back). Starts with the
    /// thread's fixed prefix, which every request sends first.
    pub history: Vec<Item>,
    /// What the thread was told before its history (`ContextLoaded`), given again to the
    /// replayed thread.
    pub context: Option<ThreadContext>,
}

impl Recording {
    /// Whether any step carries a request fingerprint (rein wrote them from when replay
    /// came in; imported Codex rollouts have none).
    pub fn fingerprinted(&self) -> bool {
        self.turns
            .iter()
            .flat_map(|t| &t.steps)
            .any(|s| s.fingerprint.is_some())
    }

    pub fn step_count(&self) -> usize {
        self.turns.iter().map(|t| t.steps.len()).sum()
    }
}

#[derive(Clone, Debug)]
pub struct RecordedTurn {
    pub input: Vec<InputPart>,
    /// The settings captured when the turn started.
    pub settings: ThreadSettings,
    pub output_schema: Option<serde_json::Value>,
    pub steps: Vec<RecordedStep>,
    /// The `<memory>` item the memory step gave this turn, if any.
    pub memory: Option<String>,
}

#[derive(Clone, Debug)]
pub struct RecordedStep {
    pub fingerprint: Option<RequestFingerprint>,
    /// How many history items the request sent (its input is `history[..input_len]`).
    pub input_len: usize,
    pub answer: Answer,
    pub calls: Vec<RecordedCall>,
}

impl RecordedStep {
    fn new(fingerprint: Option<RequestFingerprint>, input_len: usize) -> Self {
        Self {
            fingerprint,
            input_len,
            answer: Answer::Reply {
                items: Vec::new(),
                usage: TokenUsage::default(),
            },
            calls: Vec::new(),
        }
    }
}

/// How the model answered a step.
#[derive(Clone, Debug)]
pub enum Answer {
    /// The reply's items (reasoning, message, tool calls) and its usage.
    Reply { items: Vec<Item>, usage: TokenUsage },
    /// The request failed and the turn with it.
    Failed { message: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedCall {
    pub call_id: String,
    pub name: String,
    pub arguments: String,
    /// What the call returned (absent if it never ended, which a replayable session rules
    /// out).
    pub result: Option<ToolResult>,
    /// How the client answered what the call asked (approvals), in order: a live replay
    /// answers the same.
    pub answers: Vec<RecordedAnswer>,
}

/// One answer to a call's request: its outcome and, for an approval that made a
/// command-prefix grant, the prefix (a replay grants the same, whatever made it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedAnswer {
    pub outcome: ApprovalOutcome,
    pub command_rule: Option<Vec<String>>,
}

/// Why a session cannot be replayed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotReplayable(pub String);

fn refuse<T>(why: impl Into<String>) -> Result<T, NotReplayable> {
    Err(NotReplayable(why.into()))
}

impl Recording {
    /// Read a session's events (as loaded from its rollout).
    pub fn from_events(events: &[Event]) -> Result<Self, NotReplayable> {
        let mut reader = Reader {
            lenient: !events
                .iter()
                .any(|e| matches!(e.msg, EventMsg::StepRequested { .. })),
            ..Reader::default()
        };
        for event in events {
            reader.event(&event.msg)?;
        }
        if reader.turn.is_some() {
            return refuse(format!(
                "turn {} never ended (the process stopped during it)",
                reader.turn_no()
            ));
        }
        if reader.turns.is_empty() {
            return refuse("it has no turn");
        }
        Ok(Recording {
            turns: reader.turns,
            history: reader.history,
            context: reader.context,
        })
    }
}

#[derive(Default)]
struct Reader {
    turns: Vec<RecordedTurn>,
    turn: Option<RecordedTurn>,
    history: Vec<Item>,
    context: Option<ThreadContext>,
    /// The last step is still taking in its reply (no tool output or other item since).
    in_reply: bool,
    /// The call each open client request came from, by request id.
    asked: Vec<(String, String)>,
    /// No fingerprints, so only tool calls are compared: context a request carried
    /// besides the user's input (items before the first turn, and the extra user messages
    /// a Codex turn starts with, such as its environment context) need not be reproduced.
    lenient: bool,
}

impl Reader {
    fn turn_no(&self) -> usize {
        self.turns.len() + 1
    }

    fn event(&mut self, msg: &EventMsg) -> Result<(), NotReplayable> {
        let n = self.turn_no();
        match msg {
            EventMsg::TurnStarted {
                kind,
                settings,
                recovered,
                output_schema,
            } => self.turn_started(*kind, settings, *recovered, output_schema.as_ref())?,
            EventMsg::StepRequested { fingerprint } => {
                let input_len = self.history.len();
                let turn = self.open_turn()?;
                turn.steps
                    .push(RecordedStep::new(Some(fingerprint.clone()), input_len));
                self.in_reply = true;
            }
            EventMsg::ItemCompleted { item } => self.item(item)?,
            EventMsg::ContextLoaded { context } => {
                self.history
                    .extend(prefix_items(context).iter().map(|i| (**i).clone()));
                self.context = Some(context.clone());
            }
            EventMsg::ClientRequested {
                request_id,
                call_id,
                ..
            } => self.asked.push((request_id.clone(), call_id.clone())),
            EventMsg::ClientRequestResolved {
                request_id,
                outcome,
                grant,
            } => self.answered(request_id, *outcome, grant.as_ref()),
            EventMsg::TokenCount { last, .. } => self.usage(last),
            EventMsg::TurnCompleted { .. } => {
                let turn = self.close_turn()?;
                self.turns.push(turn);
            }
            EventMsg::TurnFailed { message, .. } => self.turn_failed(message)?,
            EventMsg::TurnAborted { reason } => {
                let why = match reason {
                    TurnAbortReason::Interrupted => "was interrupted",
                    TurnAbortReason::BudgetLimited => "ran out of budget",
                    TurnAbortReason::Replaced => "was replaced by another",
                    TurnAbortReason::ReviewEnded => "ended a review",
                };
                return refuse(format!("turn {n} {why}"));
            }
            EventMsg::AgentSpawned { .. } => return refuse("it spawned sub-agents"),
            EventMsg::CompactionStarted { .. } | EventMsg::Compacted { .. } => {
                return refuse("its history was compacted")
            }
            EventMsg::RolledBack { .. } => return refuse("turns of it were rolled back"),
            _ => {}
        }
        Ok(())
    }

    fn turn_started(
        &mut self,
        kind: TaskKind,
        settings: &ThreadSettings,
        recovered: bool,
        output_schema: Option<&serde_json::Value>,
    ) -> Result<(), NotReplayable> {
        let n = self.turn_no();
        if kind != TaskKind::Regular {
            return refuse(
                format!("turn {n} is a {kind:?} turn (only regular turns replay)").to_lowercase(),
            );
        }
        if recovered {
            return refuse(format!("turn {n} restarted an interrupted turn"));
        }
        self.turn = Some(RecordedTurn {
            input: Vec::new(),
            settings: settings.clone(),
            output_schema: output_schema.cloned(),
            steps: Vec::new(),
            memory: None,
        });
        self.in_reply = false;
        Ok(())
    }

    /// A client's answer, kept on the call that asked.
    fn answered(
        &mut self,
        request_id: &str,
        outcome: ApprovalOutcome,
        grant: Option<&SessionGrant>,
    ) {
        if let Some(at) = self.asked.iter().position(|(r, _)| r == request_id) {
            let (_, call_id) = self.asked.remove(at);
            let call = self
                .turn
                .as_mut()
                .into_iter()
                .flat_map(|t| t.steps.iter_mut().rev())
                .flat_map(|s| s.calls.iter_mut())
                .find(|c| c.call_id == call_id);
            if let Some(call) = call {
                call.answers.push(RecordedAnswer {
                    outcome,
                    command_rule: match grant {
                        Some(SessionGrant::CommandPrefix { argv }) => Some(argv.clone()),
                        _ => None,
                    },
                });
            }
        }
    }

    /// A reply's usage comes before its items: without a fingerprint, it is the first sign
    /// of the step.
    fn usage(&mut self, last: &TokenUsage) {
        if !self.in_reply {
            let input_len = self.history.len();
            if let Some(turn) = self.turn.as_mut() {
                turn.steps.push(RecordedStep::new(None, input_len));
            }
            self.in_reply = true;
        }
        if let Some(RecordedStep {
            answer: Answer::Reply { usage, .. },
            ..
        }) = self.turn.as_mut().and_then(|t| t.steps.last_mut())
        {
            *usage = *last;
        }
    }

    fn turn_failed(&mut self, message: &str) -> Result<(), NotReplayable> {
        let input_len = self.history.len();
        let mut turn = self.close_turn()?;
        // The request that failed is the last step, unless it failed before any
        // fingerprint was written (an older rollout): then it is one more step.
        match turn.steps.last_mut() {
            Some(step) if step_is_empty(step) => {
                step.answer = Answer::Failed {
                    message: message.to_owned(),
                };
            }
            _ => turn.steps.push(RecordedStep {
                fingerprint: None,
                input_len,
                answer: Answer::Failed {
                    message: message.to_owned(),
                },
                calls: Vec::new(),
            }),
        }
        self.turns.push(turn);
        Ok(())
    }

    fn item(&mut self, item: &Item) -> Result<(), NotReplayable> {
        let n = self.turn_no();
        self.history.push(item.clone());
        let input_len = self.history.len() - 1;
        let in_reply = self.in_reply;
        let lenient = self.lenient;
        let Some(turn) = self.turn.as_mut() else {
            if lenient {
                return Ok(());
            }
            return refuse("it has history from before its first turn (a fork)");
        };
        match item {
            Item::UserMessage { content, .. } => {
                let steered = !turn.steps.is_empty() || (!turn.input.is_empty() && !lenient);
                if steered {
                    return refuse(format!("turn {n} was steered while it ran"));
                }
                turn.input.clone_from(content);
                self.in_reply = false;
            }
            Item::Reasoning { .. } | Item::AgentMessage { .. } | Item::ToolCall { .. } => {
                model_item(turn, item, in_reply, input_len);
                self.in_reply = true;
            }
            Item::ToolOutput {
                call_id,
                output,
                success,
                facts,
                ..
            } => {
                self.in_reply = false;
                let call = turn
                    .steps
                    .iter_mut()
                    .rev()
                    .flat_map(|s| s.calls.iter_mut())
                    .find(|c| &c.call_id == call_id);
                let Some(call) = call else {
                    return refuse(format!(
                        "turn {n} has the output of a call it never made ({call_id})"
                    ));
                };
                let outcome = recorded_outcome(output, *success, facts.as_deref());
                call.result = Some(ToolResult::new(output.clone(), *success, outcome));
            }
            Item::DeveloperMessage { text, .. } => {
                // The memory step's item comes before the first request; the replay gives
                // it again (replay::memory).
                if turn.steps.is_empty() && text.starts_with(rein_core::memory::recall::MEMORY_OPEN)
                {
                    turn.memory = Some(text.clone());
                }
                self.in_reply = false;
            }
            Item::Interruption { .. } => return refuse(format!("turn {n} was interrupted")),
        }
        Ok(())
    }

    fn open_turn(&mut self) -> Result<&mut RecordedTurn, NotReplayable> {
        let n = self.turn_no();
        match self.turn.as_mut() {
            Some(turn) => Ok(turn),
            None => refuse(format!("a step of turn {n} has no turn start")),
        }
    }

    fn close_turn(&mut self) -> Result<RecordedTurn, NotReplayable> {
        let n = self.turn_no();
        self.in_reply = false;
        let Some(turn) = self.turn.take() else {
            return refuse(format!("turn {n} ends without having started"));
        };
        if turn.input.is_empty() {
            return refuse(format!("turn {n} has no user input"));
        }
        if let Some(call) = turn
            .steps
            .iter()
            .flat_map(|s| &s.calls)
            .find(|c| c.result.is_none())
        {
            return refuse(format!(
                "turn {n}: the call {} ({}) has no recorded output",
                call.call_id, call.name
            ));
        }
        Ok(turn)
    }
}

fn step_is_empty(step: &RecordedStep) -> bool {
    matches!(&step.answer, Answer::Reply { items, .. } if items.is_empty())
}

/// A model item of the turn's reply. Without fingerprints a step is told by its reply:
/// model items that follow the input or a tool output open one.
fn model_item(turn: &mut RecordedTurn, item: &Item, in_reply: bool, input_len: usize) {
    if !in_reply || turn.steps.is_empty() {
        turn.steps.push(RecordedStep::new(None, input_len));
    }
    let Some(step) = turn.steps.last_mut() else {
        return;
    };
    if let Item::ToolCall {
        call_id,
        name,
        arguments,
        ..
    } = item
    {
        step.calls.push(RecordedCall {
            call_id: call_id.clone(),
            name: name.clone(),
            arguments: arguments.clone(),
            result: None,
            answers: Vec::new(),
        });
    }
    if let Answer::Reply { items, .. } = &mut step.answer {
        items.push(item.clone());
    }
}

/// How a recorded call ended: its facts' outcome, else (a rollout older than facts) what
/// its output and success say.
fn recorded_outcome(output: &str, success: bool, facts: Option<&ToolFacts>) -> ToolOutcome {
    match facts {
        Some(facts) => facts.outcome.clone(),
        None if success => ToolOutcome::Returned {
            text: output.to_owned(),
            structured: None,
            content: Vec::new(),
        },
        None => ToolOutcome::failed(output.to_owned()),
    }
}
