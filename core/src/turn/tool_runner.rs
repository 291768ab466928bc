//! Runs the tool calls of one reply. Calls run concurrently (each in its own task, with a
//! child cancellation token); results come back in the order the model issued the calls,
//! whatever order they finish in. Dropping the runner aborts every call still running.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::stream::{FuturesOrdered, StreamExt};
use futures::FutureExt;
use rein_protocol::{EventMsg, ThreadId};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::sink::TurnSink;
use super::step::StepContext;
use crate::tools::{ToolCall, ToolContext, ToolResult};

pub(crate) struct Finished {
    pub call: ToolCall,
    pub result: ToolResult,
}

type Running = BoxFuture<'static, (ToolResult, Duration)>;

fn start(
    step: &StepContext,
    thread_id: ThreadId,
    call: &ToolCall,
    sink: &TurnSink,
    cancel: &CancellationToken,
) -> Running {
    let Some(tool) = step.tools.get(&call.name) else {
        let known: Vec<String> = step.tools.specs().iter().map(|s| s.name.clone()).collect();
        let result = ToolResult::err(format!(
            "unknown tool `{}`; available tools: {}",
            call.name,
            known.join(", ")
        ));
        return futures::future::ready((result, Duration::ZERO)).boxed();
    };
    let mut ctx = ToolContext::new(
        (thread_id, sink.turn_id, call.call_id.clone()),
        Arc::clone(&step.settings),
        cancel.child_token(),
        sink.as_host(),
    );
    if step.review {
        ctx = ctx.without_session_grants();
    }
    let call = call.clone();
    let handle = AbortOnDropHandle::new(tokio::spawn(async move {
        let started = Instant::now();
        let result = tool.run(call, ctx).await;
        (result, started.elapsed())
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
pub(crate) async fn run_calls(
    step: &StepContext,
    thread_id: ThreadId,
    calls: Vec<ToolCall>,
    sink: &TurnSink,
    cancel: &CancellationToken,
    mut on_finished: impl FnMut(Finished),
) {
    let mut running: FuturesOrdered<BoxFuture<'static, (ToolCall, ToolResult, Duration)>> =
        FuturesOrdered::new();
    for call in calls {
        // Write-ahead: the call is in the rollout before it can have any effect, so a
        // crash never hides a command that ran.
        let begun = sink
            .emit_written(EventMsg::ToolCallBegin {
                call_id: call.call_id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            })
            .await;
        if !begun {
            // The loop closed this run (an abort): nothing may start any more.
            return;
        }
        if !step.parallel_tool_calls {
            let (result, took) = start(step, thread_id, &call, sink, cancel).await;
            report(sink, &call, &result, took);
            on_finished(Finished { call, result });
            continue;
        }
        let fut = start(step, thread_id, &call, sink, cancel);
        running.push_back(
            async move {
                let (result, took) = fut.await;
                (call, result, took)
            }
            .boxed(),
        );
    }
    while let Some((call, result, took)) = running.next().await {
        report(sink, &call, &result, took);
        on_finished(Finished { call, result });
    }
}

fn report(sink: &TurnSink, call: &ToolCall, result: &ToolResult, took: Duration) {
    sink.emit(EventMsg::ToolCallEnd {
        call_id: call.call_id.clone(),
        success: result.success,
        duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
    });
}
