//! The replay's tools: each configured tool as it is today (its spec is what a step
//! offers, its description what `ToolCallBegin` says), whose calls return what the
//! recording says they returned instead of running. Nothing is executed, nothing asked.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use rein_core::tools::{
    ThreadToolSource, Tool, ToolCall, ToolContext, ToolResult, ToolSet, ToolSource, ToolSpec,
};
use rein_protocol::{ThreadSettings, ToolAction};

/// The recorded results of the calls of the turn being replayed, by call id.
#[derive(Default)]
pub struct RecordedOutputs(Mutex<HashMap<String, ToolResult>>);

impl RecordedOutputs {
    pub fn load(&self, results: impl IntoIterator<Item = (String, ToolResult)>) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.clear();
        map.extend(results);
    }

    fn get(&self, call_id: &str) -> Option<ToolResult> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(call_id)
            .cloned()
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
        self.inner.describe(call, ctx)
    }

    fn run<'a>(&'a self, call: ToolCall, _ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
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
