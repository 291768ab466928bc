//! Runs the tool calls of one reply. Each call is described by its tool (`ToolCallBegin`
//! carries the action), runs concurrently with the others (each in its own task, with a
//! child cancellation token), and reports its outcome (`ToolCallEnd`); results come back in
//! the order the model issued the calls, whatever order they finish in. Dropping the runner
//! aborts every call still running. User hooks (`tool_hooks.rs`) run before a call is
//! announced and after it ended.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::stream::{FuturesOrdered, StreamExt};
use futures::FutureExt;
use rein_protocol::{Decliner, EventMsg, Item, ThreadId, ToolAction, ToolFacts};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::advisor::Review;
use super::hook_input;
use super::permission_hooks::{ask_first, HookGate};
use super::sink::TurnSink;
use super::step::StepContext;
use super::tool_hooks::{HookScope, PreDecision};
use crate::tools::{Tool, ToolCall, ToolContext, ToolResult};

pub(crate) struct Finished {
    pub call: ToolCall,
    pub result: ToolResult,
    pub facts: ToolFacts,
}

type Running = BoxFuture<'static, (ToolResult, Duration)>;

/// How a call goes once it is announced: its tool runs, or it fails at once.
enum Launch {
    Run(Arc<dyn Tool>, ToolContext),
    Fail(ToolResult),
}

/// Describe `call` (what `ToolCallBegin` announces) and make ready to run it.
fn prepare(
    step: &StepContext,
    thread_id: ThreadId,
    call: &ToolCall,
    sink: &TurnSink,
    cancel: &CancellationToken,
) -> (ToolAction, Launch) {
    let Some(tool) = step.tools.get(&call.name) else {
        let known: Vec<String> = step.tools.specs().iter().map(|s| s.name.clone()).collect();
        let result = ToolResult::err(format!(
            "unknown tool `{}`; available tools: {}",
            call.name,
            known.join(", ")
        ));
        return (
            ToolAction::other(&call.name, &call.arguments),
            Launch::Fail(result),
        );
    };
    let mut ctx = ToolContext::new(
        (thread_id, sink.turn_id, call.call_id.clone()),
        Arc::clone(&step.settings),
        cancel.child_token(),
        sink.as_host(),
    )
    .with_thread(Arc::clone(&step.thread_tools));
    if step.review {
        ctx = ctx.without_session_grants();
    }
    let action = tool.describe(call, &ctx);
    if let Some(scope) = &step.hooks {
        let gate = HookGate::new(
            scope.clone(),
            call,
            &action,
            sink.clone(),
            ctx.cancel.clone(),
        );
        ctx = ctx.with_approval_gate(Arc::new(gate));
    }
    (action, Launch::Run(tool, ctx))
}

/// Run the `PreToolUse` hooks of every call that would run, in parallel: a block turns
/// the call into a declined one, a rewritten input is described again by its tool (so
/// what is announced, judged and run is the rewritten call).
/// Returns, per call, why a hook wants the user asked before it runs.
async fn pre_hooks(
    scope: &HookScope,
    batch: &mut [(ToolCall, ToolAction, Launch)],
    sink: &TurnSink,
    cancel: &CancellationToken,
) -> Vec<Option<String>> {
    let decisions = futures::future::join_all(batch.iter().map(|(call, action, launch)| async {
        match launch {
            Launch::Run(..) => Some(scope.pre_tool_use(call, action, sink, cancel).await),
            Launch::Fail(_) => None,
        }
    }))
    .await;
    let mut asks = Vec::with_capacity(batch.len());
    for ((call, action, launch), decision) in batch.iter_mut().zip(decisions) {
        match decision {
            None => asks.push(None),
            Some(PreDecision::Block(result)) => {
                *launch = Launch::Fail(result);
                asks.push(None);
            }
            Some(PreDecision::Proceed { arguments, ask }) => {
                if let (Some(arguments), Launch::Run(tool, _)) = (&arguments, &*launch) {
                    if let Some(problem) = rewrite_misfit(tool.as_ref(), arguments) {
                        *launch = Launch::Fail(ToolResult::declined(
                            Decliner::Hook,
                            format!("a PreToolUse hook rewrote this call's input into one the tool does not take: {problem}"),
                        ));
                        asks.push(None);
                        continue;
                    }
                }
                if let Some(arguments) = arguments {
                    call.arguments = arguments;
                    if let Launch::Run(tool, ctx) = launch {
                        *action = tool.describe(call, ctx);
                        // What a PermissionRequest hook judges is the rewritten call.
                        let gate = HookGate::new(
                            scope.clone(),
                            call,
                            action,
                            sink.clone(),
                            ctx.cancel.clone(),
                        );
                        *ctx = ctx.clone().with_approval_gate(Arc::new(gate));
                    }
                }
                asks.push(ask);
            }
        }
    }
    asks
}

/// Where a hook's rewritten arguments (JSON text) do not fit `tool`'s parameters.
fn rewrite_misfit(tool: &dyn Tool, arguments: &str) -> Option<String> {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(arguments) else {
        // A string `updatedInput` is the tool's raw arguments; the tool parses them.
        return None;
    };
    hook_input::misfit(&tool.spec().parameters, &value)
}

/// What runs a call's `PostToolUse` hooks once it ended.
struct After {
    scope: HookScope,
    sink: TurnSink,
    action: ToolAction,
    /// A `PreToolUse` hook said `ask`: the user approves the call before it runs.
    ask: Option<String>,
}

/// Start an announced call in its own task.
fn start(call: &ToolCall, launch: Launch, after: Option<After>) -> Running {
    let (tool, ctx) = match launch {
        Launch::Run(tool, ctx) => (tool, ctx),
        Launch::Fail(result) => return futures::future::ready((result, Duration::ZERO)).boxed(),
    };
    let call = call.clone();
    let handle = AbortOnDropHandle::new(tokio::spawn(async move {
        let started = Instant::now();
        let cancel = ctx.cancel.clone();
        if let Some((reason, after)) = after.as_ref().and_then(|a| Some((a.ask.clone()?, a))) {
            if let Err(declined) = ask_first(&call, &after.action, reason, &ctx).await {
                return (declined, started.elapsed());
            }
        }
        let mut result = tool.run(call.clone(), ctx).await;
        let took = started.elapsed();
        if let Some(after) = after {
            after
                .scope
                .post_tool_use(&call, &after.action, &mut result, &after.sink, &cancel)
                .await;
        }
        (result, took)
    }));
    async move {
        handle.await.unwrap_or_else(|e| {
            (
                ToolResult::err(format!("the tool failed unexpectedly: {e}")),
                Duration::ZERO,
            )
        })
    }
    .boxed()
}

/// Run `calls` and report each as it finishes, in call order, through `on_finished`.
/// Every call is described first, so that the advisor (when the turn has one) reviews the
/// whole batch before any of it is announced; a rejected batch is announced and declined.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_calls(
    step: &StepContext,
    thread_id: ThreadId,
    calls: Vec<ToolCall>,
    history: &[Arc<Item>],
    sink: &TurnSink,
    cancel: &CancellationToken,
    mut on_finished: impl FnMut(Finished),
) {
    type Done = (ToolCall, ToolAction, ToolResult, Duration);
    let mut batch: Vec<(ToolCall, ToolAction, Launch)> = calls
        .into_iter()
        .map(|call| {
            let (action, launch) = prepare(step, thread_id, &call, sink, cancel);
            (call, action, launch)
        })
        .collect();
    let mut asks = match &step.hooks {
        Some(scope) => pre_hooks(scope, &mut batch, sink, cancel).await,
        None => Vec::new(),
    }
    .into_iter();
    if let Some(advisor) = &step.advisor {
        let reviewed: Vec<(&ToolCall, &ToolAction)> =
            batch.iter().map(|(c, a, _)| (c, a)).collect();
        match advisor
            .review(&reviewed, &step.settings, history, sink, cancel)
            .await
        {
            Review::Proceed => {}
            Review::Cancelled => return,
            Review::Reject(reason) => {
                for (_, _, launch) in &mut batch {
                    *launch = Launch::Fail(ToolResult::declined(Decliner::Advisor, reason.clone()));
                }
            }
        }
    }
    let mut running: FuturesOrdered<BoxFuture<'static, Done>> = FuturesOrdered::new();
    for (call, action, launch) in batch {
        // Write-ahead: the call is in the rollout before it can have any effect, so a
        // crash never hides a command that ran.
        let begun = sink
            .emit_written(EventMsg::ToolCallBegin {
                call_id: call.call_id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                action: action.clone(),
            })
            .await;
        if !begun {
            // The loop closed this run (an abort): nothing may start any more.
            return;
        }
        let ask = asks.next().flatten();
        let after = step.hooks.clone().map(|scope| After {
            scope,
            sink: sink.clone(),
            action: action.clone(),
            ask,
        });
        let fut = start(&call, launch, after);
        if !step.parallel_tool_calls {
            let (result, took) = fut.await;
            on_finished(report(step, sink, call, action, result, took));
            continue;
        }
        running.push_back(
            async move {
                let (result, took) = fut.await;
                (call, action, result, took)
            }
            .boxed(),
        );
    }
    while let Some((call, action, result, took)) = running.next().await {
        on_finished(report(step, sink, call, action, result, took));
    }
}

fn report(
    step: &StepContext,
    sink: &TurnSink,
    call: ToolCall,
    action: ToolAction,
    result: ToolResult,
    took: Duration,
) -> Finished {
    let duration_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
    sink.emit(EventMsg::ToolCallEnd {
        call_id: call.call_id.clone(),
        success: result.success,
        duration_ms,
        outcome: result.outcome.clone(),
    });
    // The model opened skills' SKILL.md itself: those skills are in use (implicitly).
    if result.success {
        for skill in rein_protocol::skill_reads(&step.skills, &action) {
            sink.emit(EventMsg::SkillActivated {
                call_id: call.call_id.clone(),
                skill: rein_protocol::SkillActivation {
                    name: skill.name.clone(),
                    path: skill.path.clone(),
                    sha256: skill.sha256.clone(),
                    implicit: true,
                },
            });
        }
    }
    Finished {
        facts: ToolFacts {
            action,
            outcome: result.outcome.clone(),
            duration_ms,
        },
        call,
        result,
    }
}
