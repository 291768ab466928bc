//! The replay's tools: each configured tool as it is today (its spec is what a step
//! offers, its description what `ToolCallBegin` says), whose calls return what the
//! recording says they returned instead of running: nothing is executed, nothing asked.
//! Live (`--tools live`), the calls run for real (in a scratch copy of the workspace, see
//! `workspace`), and what each returned is kept to be compared with the recording.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use rein_core::tools::{
    ThreadToolSource, Tool, ToolCall, ToolContext, ToolResult, ToolSet, ToolSource, ToolSpec,
};
use rein_protocol::{ThreadSettings, ToolAction, ToolOutcome};

use super::workspace::Rewrite;

/// The recorded results of the calls of the turn being replayed, by call id.
#[derive(Default)]
pub struct RecordedOutputs {
    recorded: Mutex<HashMap<String, ToolResult>>,
    /// `Some` when the tools run live; the rewrite to a scratch copy, if any.
    live: Option<Mutex<Option<Rewrite>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RecordedOutputs {
    /// Outputs for tools that run for real.
    pub fn live() -> Self {
        Self {
            live: Some(Mutex::new(None)),
            ..Self::default()
        }
    }

    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// Where the next session's live calls run (`None`: where they were recorded).
    pub fn set_rewrite(&self, rewrite: Option<Rewrite>) {
        if let Some(live) = &self.live {
            *lock(live) = rewrite;
        }
    }

    pub fn load(&self, results: impl IntoIterator<Item = (String, ToolResult)>) {
        let mut map = lock(&self.recorded);
        map.clear();
        map.extend(results);
    }

    fn get(&self, call_id: &str) -> Option<ToolResult> {
        lock(&self.recorded).get(call_id).cloned()
    }

    fn rewrite(&self) -> Option<Rewrite> {
        self.live.as_ref().and_then(|l| lock(l).clone())
    }

    fn to_scratch(&self, call: ToolCall) -> ToolCall {
        match self.rewrite() {
            Some(r) => r.call_to_scratch(call),
            None => call,
        }
    }

    async fn run_live(&self, inner: &dyn Tool, call: ToolCall, ctx: ToolContext) -> ToolResult {
        let call_id = call.call_id.clone();
        let rewrite = self.rewrite();
        let call = match &rewrite {
            Some(r) => r.call_to_scratch(call),
            None => call,
        };
        let result = inner.run(call, ctx).await;
        let result = match &rewrite {
            Some(r) => r.result_to_recorded(result),
            None => result,
        };
        // A call that did what it did when recorded answers as recorded: the text the
        // model reads also says how long a command took, and timing alone must not make
        // the next step's request differ. One that did otherwise answers what it did (as
        // if it had run in the recorded workspace), and the comparison reports it.
        match self.get(&call_id) {
            Some(recorded) if same_outcome(&recorded, &result) => recorded,
            _ => result,
        }
    }
}

/// Whether a live call did what the recorded one did: the same success and outcome (a
/// background terminal's process id aside, which is new in every run).
pub fn same_outcome(recorded: &ToolResult, live: &ToolResult) -> bool {
    recorded.success == live.success && comparable(&recorded.outcome) == comparable(&live.outcome)
}

fn comparable(outcome: &ToolOutcome) -> ToolOutcome {
    match outcome {
        ToolOutcome::Running {
            terminal_id,
            output,
            ..
        } => ToolOutcome::Running {
            terminal_id: terminal_id.clone(),
            pid: None,
            output: output.clone(),
        },
        other => other.clone(),
    }
}

pub struct ReplayTool {
    inner: Arc<dyn Tool>,
    outputs: Arc<RecordedOutputs>,
}

pub fn wrap(inner: Arc<dyn Tool>, outputs: &Arc<RecordedOutputs>) -> Arc<dyn Tool> {
    Arc::new(ReplayTool {
        inner,
        outputs: Arc::clone(outputs),
    })
}

impl Tool for ReplayTool {
    fn spec(&self) -> ToolSpec {
        self.inner.spec()
    }

    fn describe(&self, call: &ToolCall, ctx: &ToolContext) -> ToolAction {
        if self.outputs.is_live() {
            // Judged (policy, sandbox) as what it will do: in the copy.
            return self
                .inner
                .describe(&self.outputs.to_scratch(call.clone()), ctx);
        }
        self.inner.describe(call, ctx)
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        if self.outputs.is_live() {
            return Box::pin(self.outputs.run_live(self.inner.as_ref(), call, ctx));
        }
        let result = self.outputs.get(&call.call_id).unwrap_or_else(|| {
            ToolResult::err(format!(
                "replay: the recording has no result for call {}",
                call.call_id
            ))
        });
        Box::pin(std::future::ready(result))
    }
}

/// A per-thread source (MCP servers) whose tools are replayed.
pub struct ReplayThreadSource {
    pub inner: Arc<dyn ThreadToolSource>,
    pub outputs: Arc<RecordedOutputs>,
}

impl ThreadToolSource for ReplayThreadSource {
    fn for_thread(&self, settings: &ThreadSettings) -> Option<Arc<dyn ToolSource>> {
        let inner = self.inner.for_thread(settings)?;
        Some(Arc::new(ReplaySource {
            inner,
            outputs: Arc::clone(&self.outputs),
            last: Mutex::new(None),
        }))
    }
}

type Wrapped = (Arc<ToolSet>, Arc<ToolSet>);

struct ReplaySource {
    inner: Arc<dyn ToolSource>,
    outputs: Arc<RecordedOutputs>,
    /// The inner set last seen and its replayed twin: the same `Arc` while nothing
    /// changed, as a source must.
    last: Mutex<Option<Wrapped>>,
}

impl ToolSource for ReplaySource {
    fn tools(&self) -> Arc<ToolSet> {
        let set = self.inner.tools();
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((seen, wrapped)) = last.as_ref() {
            if Arc::ptr_eq(seen, &set) {
                return Arc::clone(wrapped);
            }
        }
        let wrapped = Arc::new(ToolSet::new(
            set.iter()
                .map(|t| wrap(Arc::clone(t), &self.outputs))
                .collect(),
        ));
        *last = Some((set, Arc::clone(&wrapped)));
        wrapped
    }
}
