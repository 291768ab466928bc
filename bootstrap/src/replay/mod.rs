//! Deterministic replay of a recorded session: a fresh, in-memory kernel built from
//! today's configuration (with `-c` overrides) runs the session's user inputs; its model
//! answers each step with the reply recorded for it and its tools return the recorded
//! results. Step by step, the request each step sends (its fingerprint) and the tool calls
//! are compared with the recording, so a change to rein, its prompts or its configuration
//! shows where it would change what an agent does. Nothing is written: the replayed
//! thread has no session store, and the recording is only read.
//!
//! Live (`ReplayOptions::live`), the tools run for real instead, by default in a scratch
//! copy of the recorded workspace (the recorded workspace itself only when asked), under
//! today's policy, never a looser one read from the recording (`policy`); what each call
//! did is compared with what it did when recorded.
//!
//! Map: `recording` (events → turns and steps), `model` (the answering model), `tools`
//! (replayed or live tool sources), `workspace` (the scratch copy and the path rewrite),
//! `compare` (one step against its recording).

pub mod compare;
pub mod memory;
pub mod model;
pub mod policy;
pub mod recording;
mod skills;
pub mod tools;
pub mod workspace;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rein_config::{self as config, LoadOptions};
use rein_core::manager::{ThreadManager, ThreadOptions};
use rein_core::thread::{EventStream, ThreadHandle};
use rein_core::tools::ToolResult;
use rein_protocol::{
    ApprovalDecision, ApprovalOutcome, ClientResponse, EventMsg, InputMode, InputOutcome, Item, Op,
    OpResult, ReasoningEffort, SettingsChange, ThreadSettings, ToolOutcome,
};
use rein_tools::{builtin_tools, BuiltinConfig};
use serde::Serialize;

use crate::BootstrapError;
use compare::{compare_step, ObservedCall, ObservedStep, Part, TurnInputs};
use model::{ReplayCatalog, ReplayModel};
pub use policy::LivePolicy;
pub use recording::{NotReplayable, Recording};
use recording::{RecordedAnswer, RecordedTurn};
use tools::{RecordedOutputs, ReplayThreadSource};
pub use workspace::LiveWorkspace;
use workspace::{Rewrite, Scratch};

/// How long one replayed turn may take: its model and tools answer at once, so only a
/// replay that went wrong comes near this.
const TURN_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Clone, Debug, Default)]
pub struct ReplayOptions {
    /// `$REIN_HOME`, where the configuration is read.
    pub home: PathBuf,
    pub profile: Option<String>,
    /// `-c key=value` overrides, as `rein exec` takes them.
    pub overrides: Vec<String>,
    pub tools: BuiltinConfig,
    /// Run the tools for real, and where (`None`: they return their recorded results).
    pub live: Option<LiveWorkspace>,
    /// What live tools may do at most, whatever the recording says.
    pub live_policy: LivePolicy,
}

/// How a replay went.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub turns: usize,
    /// Steps replayed (all of them when identical; up to the differing one otherwise).
    pub steps: usize,
    /// Whether the recording has request fingerprints; without them only tool calls are
    /// compared.
    pub fingerprinted: bool,
    pub difference: Option<Difference>,
}

/// The first step that differs.
#[derive(Clone, Debug, Serialize)]
pub struct Difference {
    /// 1-based, in the session.
    pub step: usize,
    /// 1-based.
    pub turn: usize,
    /// 1-based, in its turn.
    pub step_in_turn: usize,
    pub part: Part,
    /// A readable diff of the part (`-` recorded, `+` replay).
    pub diff: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("the replay kernel: {0}")]
    Kernel(String),
    #[error("turn {turn} of the replay did not end within {TURN_TIMEOUT:?}")]
    Timeout { turn: usize },
    /// The workspace a live replay needs cannot be had.
    #[error("{0}")]
    Workspace(String),
}

/// What today's configuration changes in a recorded turn's settings: the model and the
/// reasoning effort when an override (or profile) changes them, the instructions when a
/// `model_instructions_file` is configured. The rest (cwd, policies) stays as recorded.
#[derive(Clone, Debug, Default)]
struct Adjust {
    model: Option<String>,
    reasoning_effort: Option<ReasoningEffort>,
    instructions: Option<String>,
}

impl Adjust {
    fn apply(&self, recorded: &ThreadSettings) -> ThreadSettings {
        let mut s = recorded.clone();
        if let Some(model) = &self.model {
            s.model.clone_from(model);
        }
        if let Some(effort) = &self.reasoning_effort {
            s.reasoning_effort = Some(effort.clone());
        }
        if let Some(instructions) = &self.instructions {
            s.instructions.clone_from(instructions);
        }
        s
    }
}

/// A kernel that replays sessions, one after another.
pub struct Replayer {
    manager: Arc<ThreadManager>,
    model: Arc<ReplayModel>,
    outputs: Arc<RecordedOutputs>,
    /// What each turn's memory step is given (memory on in today's configuration).
    memories: Arc<memory::RecordedMemories>,
    mcp: Option<Arc<rein_mcp::McpManager>>,
    adjust: Adjust,
    live: Option<LiveWorkspace>,
    live_policy: LivePolicy,
}

impl Replayer {
    pub fn new(
        options: ReplayOptions,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, BootstrapError> {
        let load = |profile: Option<String>, overrides: Vec<String>| {
            config::load(
                &LoadOptions {
                    home: options.home.clone(),
                    profile,
                    overrides,
                    model: None,
                },
                env,
            )
        };
        let base = load(None, Vec::new())?;
        let config = load(options.profile.clone(), options.overrides.clone())?;
        let adjust = Adjust {
            model: (config.model != base.model).then(|| config.model.clone()),
            reasoning_effort: config
                .reasoning_effort
                .clone()
                .filter(|_| config.reasoning_effort != base.reasoning_effort),
            instructions: config.instructions.clone(),
        };
        let model = Arc::new(ReplayModel::default());
        let outputs = Arc::new(match options.live {
            Some(_) => RecordedOutputs::live(),
            None => RecordedOutputs::default(),
        });
        let mut kernel_config = crate::kernel_config(Default::default(), Some(&config));
        // The advisor's verdicts are not replayed: its requests are not steps.
        kernel_config.advisor = Default::default();
        let mut builder = ThreadManager::builder(Arc::new(ReplayCatalog(Arc::clone(&model))))
            .tools(
                builtin_tools(options.tools)
                    .into_iter()
                    .map(|t| tools::wrap(t, &outputs)),
            )
            .config(kernel_config)
            .agents(crate::agents_config(Some(&config.agents)));
        let memories = Arc::new(memory::RecordedMemories::default());
        if config.memory.enabled {
            let policy = rein_core::memory::MemoryPolicy {
                consent: config.memory.consent,
                // The recorded item is given whole: it fitted the budget when recorded.
                max_tokens: u32::MAX,
                max_unused_days: None,
                // A replay drives the recorded inputs only; an extraction turn is the
                // kernel's own and is not replayed.
                extract_every: None,
                extract_model: None,
                consolidate: false,
            };
            builder =
                builder.memory_with_tool(memories.memory(policy), |t| tools::wrap(t, &outputs));
        }
        let manager = builder.build_shared();
        let mcp = Some(crate::mcp_manager(&config));
        if let Some(mcp) = &mcp {
            manager.add_thread_tool_source(Arc::new(ReplayThreadSource {
                inner: Arc::clone(mcp) as _,
                outputs: Arc::clone(&outputs),
            }));
        }
        Ok(Self {
            manager,
            model,
            outputs,
            memories,
            mcp,
            adjust,
            live: options.live,
            live_policy: LivePolicy {
                sandbox: config.sandbox_mode.unwrap_or(options.live_policy.sandbox),
                ..options.live_policy
            },
        })
    }

    /// Replay `recording`, stopping at the first step that differs.
    pub async fn replay(&self, recording: &Recording) -> Result<Report, ReplayError> {
        let scratch = match self.live {
            Some(LiveWorkspace::Scratch) => Some(scratch_for(recording).await?),
            _ => None,
        };
        let rewrite = scratch.as_ref().map(|s| s.rewrite.clone());
        self.outputs.set_rewrite(rewrite.clone());
        let mut thread: Option<(ThreadHandle, EventStream)> = None;
        let result = self
            .replay_turns(recording, &mut thread, rewrite.as_ref())
            .await;
        if let Some((handle, _)) = thread {
            let _ = handle.shutdown().await;
        }
        self.outputs.set_rewrite(None);
        if let Some(scratch) = scratch {
            // Removing the copy is blocking I/O.
            let _ = tokio::task::spawn_blocking(move || drop(scratch)).await;
        }
        result
    }

    async fn replay_turns(
        &self,
        recording: &Recording,
        thread: &mut Option<(ThreadHandle, EventStream)>,
        rewrite: Option<&Rewrite>,
    ) -> Result<Report, ReplayError> {
        let mut report = Report {
            turns: recording.turns.len(),
            steps: 0,
            fingerprinted: recording.fingerprinted(),
            difference: None,
        };
        for (t, turn) in recording.turns.iter().enumerate() {
            let settings = self.prepare_turn(recording, t, rewrite)?;
            let change = self.thread_for(recording, &settings, thread).await?;
            let Some((handle, events)) = thread.as_mut() else {
                return Err(ReplayError::Kernel("no thread".into()));
            };
            let outcome = handle
                .submit(Op::UserInput {
                    items: skills::reread(&turn.input).await,
                    mode: InputMode::StartIfIdle,
                    settings: change,
                    output_schema: turn.output_schema.clone(),
                })
                .await
                .map_err(|e| ReplayError::Kernel(e.to_string()))?;
            if !matches!(outcome, OpResult::Input(InputOutcome::Started { .. })) {
                return Err(ReplayError::Kernel(format!(
                    "turn {} was not started: {outcome:?}",
                    t + 1
                )));
            }
            let answers = recorded_answers(turn);
            let mut observed =
                tokio::time::timeout(TURN_TIMEOUT, observe_turn(handle, events, answers))
                    .await
                    .map_err(|_| ReplayError::Timeout { turn: t + 1 })?;
            for (step, request) in observed.iter_mut().zip(self.model.take_requests()) {
                step.request = Some(request);
            }
            if let Some((i, part, diff)) = self.compare_turn(recording, turn, &observed) {
                report.steps += i + 1;
                report.difference = Some(Difference {
                    step: report.steps,
                    turn: t + 1,
                    step_in_turn: i + 1,
                    part,
                    diff,
                });
                return Ok(report);
            }
            report.steps += turn.steps.len();
        }
        Ok(report)
    }

    /// Load turn `t`'s recorded answers, tool results and memories into the replay's model,
    /// tools and memory; the settings it runs with.
    fn prepare_turn(
        &self,
        recording: &Recording,
        t: usize,
        rewrite: Option<&Rewrite>,
    ) -> Result<ThreadSettings, ReplayError> {
        let turn = &recording.turns[t];
        self.model.load(turn.steps.iter().map(|s| s.answer.clone()));
        self.model.take_requests();
        self.outputs.load(
            turn.steps
                .iter()
                .flat_map(|s| &s.calls)
                .filter_map(|c| c.result.clone().map(|r| (c.call_id.clone(), r))),
        );
        self.memories.load(turn.memory.as_deref());
        let mut settings = self.adjust.apply(&turn.settings);
        if self.live.is_some() {
            settings = self
                .live_policy
                .confine(settings, &recording.turns[0].settings.cwd);
        }
        if let Some(rewrite) = rewrite {
            settings = in_scratch(settings, rewrite, t + 1)?;
        }
        Ok(settings)
    }

    /// The replay's thread, created for the first turn (the change is then none) or the
    /// settings change that takes it to the next turn's.
    async fn thread_for(
        &self,
        recording: &Recording,
        settings: &ThreadSettings,
        thread: &mut Option<(ThreadHandle, EventStream)>,
    ) -> Result<SettingsChange, ReplayError> {
        if thread.is_some() {
            return Ok(change_to(settings));
        }
        let new = self
            .manager
            .create_thread(
                ThreadOptions::new(settings.clone())
                    .with_context(recording.context.clone().unwrap_or_default(), Vec::new()),
            )
            .map_err(|e| ReplayError::Kernel(e.to_string()))?;
        if let Some(mcp) = &self.mcp {
            mcp.wait_required(&settings.cwd)
                .await
                .map_err(|e| ReplayError::Kernel(e.to_string()))?;
        }
        *thread = Some((new.handle, new.events));
        Ok(SettingsChange::default())
    }

    /// The first step where the replayed turn differs from the recorded one: its index in
    /// the turn, the part that differs and the diff.
    fn compare_turn(
        &self,
        recording: &Recording,
        turn: &RecordedTurn,
        observed: &[ObservedStep],
    ) -> Option<(usize, Part, String)> {
        let mut inputs = TurnInputs::default();
        let longest = turn.steps.len().max(observed.len());
        for i in 0..longest {
            let found = match (turn.steps.get(i), observed.get(i)) {
                (Some(recorded), Some(replayed)) => compare_step(
                    recording,
                    &turn.settings.instructions,
                    recorded,
                    replayed,
                    &mut inputs,
                    self.live.is_some(),
                ),
                (Some(_), None) => Some((
                    Part::Steps,
                    format!(
                        "- the recorded turn has {} steps\n+ the replayed turn ended after {}\n",
                        turn.steps.len(),
                        observed.len()
                    ),
                )),
                _ => Some((
                    Part::Steps,
                    format!(
                        "- the recorded turn ended after {} steps\n+ the replayed turn took step {}\n",
                        turn.steps.len(),
                        i + 1
                    ),
                )),
            };
            if let Some((part, diff)) = found {
                return Some((i, part, diff));
            }
        }
        None
    }

    /// Shut the replay kernel down (its threads, its MCP servers).
    pub async fn shutdown(&self) {
        self.manager.shutdown_all().await;
        if let Some(mcp) = &self.mcp {
            mcp.shutdown().await;
        }
    }
}

/// A later turn's recorded settings as a change (instructions are a thread's own and
/// cannot change between turns).
fn change_to(s: &ThreadSettings) -> SettingsChange {
    SettingsChange {
        model: Some(s.model.clone()),
        cwd: Some(s.cwd.clone()),
        approval_policy: Some(s.approval_policy),
        sandbox_policy: Some(s.sandbox_policy),
        sandbox_options: s.sandbox_options.clone().map(Box::new),
        reasoning_effort: s.reasoning_effort.clone(),
        budget: Some(s.budget),
    }
}

/// A scratch copy of the workspace the session started in.
async fn scratch_for(recording: &Recording) -> Result<Scratch, ReplayError> {
    let Some(first) = recording.turns.first() else {
        return Err(ReplayError::Workspace("the session has no turn".into()));
    };
    let workspace = first.settings.cwd.clone();
    tokio::task::spawn_blocking(move || Scratch::copy_of(&workspace))
        .await
        .map_err(|e| ReplayError::Kernel(e.to_string()))?
        .map_err(ReplayError::Workspace)
}

/// A turn's settings with its directories in the scratch copy.
fn in_scratch(
    mut settings: ThreadSettings,
    rewrite: &Rewrite,
    turn: usize,
) -> Result<ThreadSettings, ReplayError> {
    settings.cwd = rewrite.path_to_scratch(&settings.cwd).ok_or_else(|| {
        ReplayError::Workspace(format!(
            "turn {turn} ran in {}, outside the workspace the session started in (only that \
             one is copied)",
            settings.cwd.display()
        ))
    })?;
    if let Some(options) = settings.sandbox_options.as_mut() {
        for root in &mut options.writable_roots {
            if let Some(copy) = rewrite.path_to_scratch(root) {
                *root = copy;
            }
        }
    }
    Ok(settings)
}

/// How the client answered each call of the turn, by call id, in order.
fn recorded_answers(turn: &RecordedTurn) -> HashMap<String, VecDeque<RecordedAnswer>> {
    turn.steps
        .iter()
        .flat_map(|s| &s.calls)
        .filter(|c| !c.answers.is_empty())
        .map(|c| (c.call_id.clone(), c.answers.iter().cloned().collect()))
        .collect()
}

/// The recorded answer as the client's response: an approval that made a command-prefix
/// grant makes the same one (however the client asked for it), others as [`decision`].
fn response(answer: Option<RecordedAnswer>) -> ClientResponse {
    match answer {
        Some(RecordedAnswer {
            outcome: ApprovalOutcome::ApprovedForSession,
            command_rule: Some(prefix),
        }) => ClientResponse::CommandRule { prefix },
        answer => ClientResponse::Decision {
            decision: decision(answer.map(|a| a.outcome)),
        },
    }
}

/// The recorded answer as a decision; a question (whose answers a rollout does not keep)
/// or a request the recording never saw is denied.
fn decision(outcome: Option<ApprovalOutcome>) -> ApprovalDecision {
    match outcome {
        Some(ApprovalOutcome::Approved) => ApprovalDecision::Approve,
        Some(ApprovalOutcome::ApprovedForSession) => ApprovalDecision::ApproveForSession,
        Some(ApprovalOutcome::DeniedForSession) => ApprovalDecision::DenyForSession,
        Some(ApprovalOutcome::Aborted) => ApprovalDecision::Abort,
        Some(ApprovalOutcome::Denied | ApprovalOutcome::Cancelled | ApprovalOutcome::Answered)
        | None => ApprovalDecision::Deny,
    }
}

/// The steps of the turn just started, as its events tell them, until it ends. What a
/// live call asks is answered as recorded.
async fn observe_turn(
    handle: &ThreadHandle,
    events: &mut EventStream,
    mut answers: HashMap<String, VecDeque<RecordedAnswer>>,
) -> Vec<ObservedStep> {
    let mut steps: Vec<ObservedStep> = Vec::new();
    let mut calls: Vec<(usize, String)> = Vec::new();
    while let Some(event) = events.recv().await {
        match &event.msg {
            EventMsg::ClientRequested {
                request_id,
                call_id,
                ..
            } => {
                let answer = answers.get_mut(call_id).and_then(VecDeque::pop_front);
                // A refused answer leaves the call waiting, and the turn's timeout says so.
                let _ = handle
                    .submit(Op::Respond {
                        request_id: request_id.clone(),
                        response: response(answer),
                    })
                    .await;
            }
            EventMsg::StepRequested { fingerprint } => steps.push(ObservedStep {
                fingerprint: Some(fingerprint.clone()),
                ..ObservedStep::default()
            }),
            EventMsg::ItemCompleted {
                item:
                    Item::ToolCall {
                        call_id,
                        name,
                        arguments,
                        ..
                    },
            } => {
                let last = steps.len().saturating_sub(1);
                if let Some(step) = steps.last_mut() {
                    calls.push((last, call_id.clone()));
                    step.calls.push(ObservedCall {
                        name: name.clone(),
                        arguments: arguments.clone(),
                        success: false,
                        result: None,
                    });
                }
            }
            EventMsg::ItemCompleted {
                item:
                    Item::ToolOutput {
                        call_id,
                        output,
                        success,
                        facts,
                        ..
                    },
            } => {
                if let Some(at) = calls.iter().rposition(|(_, id)| id == call_id) {
                    let (step, _) = calls[at];
                    let index = calls[..at].iter().filter(|(s, _)| *s == step).count();
                    if let Some(call) = steps.get_mut(step).and_then(|s| s.calls.get_mut(index)) {
                        call.success = *success;
                        let outcome = match facts {
                            Some(facts) => facts.outcome.clone(),
                            None => ToolOutcome::failed(output.clone()),
                        };
                        call.result = Some(ToolResult::new(output.clone(), *success, outcome));
                    }
                }
            }
            EventMsg::TurnCompleted { .. }
            | EventMsg::TurnFailed { .. }
            | EventMsg::TurnAborted { .. } => break,
            _ => {}
        }
    }
    steps
}
