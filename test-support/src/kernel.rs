//! Shared fixtures of the kernel tests: a manager over the scripted model, and small real
//! tools whose timing the tests control through channels (never through sleeps).
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use rein_core::model::scripted::ScriptedModel;
use rein_core::model::{ModelClient, ModelInfo, StaticCatalog};
use rein_core::tools::{ThreadToolState, Tool, ToolCall, ToolContext, ToolResult, ToolSpec};
use rein_core::{EventStream, KernelConfig, NewThread, ThreadManager, ThreadOptions};
use rein_protocol::{
    ApprovalPolicy, ClientRequest, Event, EventMsg, Item, SandboxPolicy, ThreadSettings, TurnBudget,
};
use tokio::sync::Notify;

pub const MODEL: &str = "scripted";

pub fn settings() -> ThreadSettings {
    ThreadSettings {
        model: MODEL.into(),
        cwd: PathBuf::from("/tmp"),
        approval_policy: ApprovalPolicy::OnRequest,
        sandbox_policy: SandboxPolicy::WorkspaceWrite,
        sandbox_options: None,
        reasoning_effort: None,
        budget: TurnBudget::default(),
        instructions: "You are a test agent.".into(),
    }
}

pub fn catalog(model: Arc<dyn ModelClient>) -> Arc<StaticCatalog> {
    Arc::new(
        StaticCatalog::new()
            .with(
                ModelInfo {
                    id: MODEL.into(),
                    provider: "scripted".into(),
                    context_window: Some(200_000),
                    traits: Default::default(),
                },
                Arc::clone(&model),
            )
            .with(
                ModelInfo {
                    id: "scripted-small".into(),
                    provider: "scripted".into(),
                    context_window: Some(8_000),
                    traits: Default::default(),
                },
                model,
            ),
    )
}

pub fn fast_config() -> KernelConfig {
    KernelConfig {
        interrupt_grace: Duration::from_millis(50),
        ..KernelConfig::default()
    }
}

pub fn manager(model: Arc<ScriptedModel>, tools: Vec<Arc<dyn Tool>>) -> ThreadManager {
    ThreadManager::builder(catalog(model))
        .tools(tools)
        .config(fast_config())
        .build()
}

pub fn start(manager: &ThreadManager) -> NewThread {
    manager
        .create_thread(ThreadOptions::new(settings()))
        .unwrap()
}

/// Read events until `pred` matches; panics if the thread ends first.
pub async fn until(events: &mut EventStream, pred: impl FnMut(&Event) -> bool) -> Arc<Event> {
    events
        .wait_for(pred)
        .await
        .expect("the thread ended before the awaited event")
}

pub fn is_turn_end(e: &Event) -> bool {
    matches!(
        e.msg,
        EventMsg::TurnCompleted { .. } | EventMsg::TurnAborted { .. } | EventMsg::TurnFailed { .. }
    )
}

pub fn user_texts(history: &[Arc<Item>]) -> Vec<String> {
    history
        .iter()
        .filter(|i| matches!(i.as_ref(), Item::UserMessage { .. }))
        .filter_map(|i| i.message_text())
        .collect()
}

pub fn request_user_texts(req: &rein_core::model::ModelRequest) -> Vec<String> {
    user_texts(&req.input)
}

pub fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("test tool {name}"),
        parameters: serde_json::json!({"type": "object"}),
    }
}

/// `order` tool: `{"name": "a", "wait_for": "b"}` finishes only after the call named `b`
/// has finished, which lets a test force completion order without timing.
#[derive(Default)]
pub struct OrderTool {
    done: Mutex<HashMap<String, Arc<Notify>>>,
    finished: Mutex<HashMap<String, bool>>,
    pub completion_log: Mutex<Vec<String>>,
}

impl OrderTool {
    fn notify(&self, name: &str) -> Arc<Notify> {
        Arc::clone(
            self.done
                .lock()
                .unwrap()
                .entry(name.to_owned())
                .or_default(),
        )
    }
}

impl Tool for OrderTool {
    fn spec(&self) -> ToolSpec {
        spec("order")
    }

    fn run<'a>(&'a self, call: ToolCall, _ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        async move {
            let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
            let name = args["name"].as_str().unwrap().to_owned();
            if let Some(other) = args["wait_for"].as_str() {
                let n = self.notify(other);
                let notified = n.notified();
                if !self
                    .finished
                    .lock()
                    .unwrap()
                    .get(other)
                    .copied()
                    .unwrap_or(false)
                {
                    notified.await;
                }
            }
            self.completion_log.lock().unwrap().push(name.clone());
            self.finished.lock().unwrap().insert(name.clone(), true);
            self.notify(&name).notify_waiters();
            ToolResult::ok(format!("done {name}"))
        }
        .boxed()
    }
}

/// Background processes a tool keeps for its thread, as the built-in shell keeps its
/// terminals: killed when the thread cleans its background work or shuts down.
#[derive(Default)]
pub struct BackgroundSleeps(pub Mutex<Vec<tokio::process::Child>>);

impl ThreadToolState for BackgroundSleeps {
    fn clean_background(&self) {
        for mut child in std::mem::take(&mut *self.0.lock().unwrap()) {
            let _ = child.start_kill();
        }
    }
}

/// `stubborn` tool: ignores cancellation entirely. Records when it starts and when its
/// future is dropped (which only a hard abort does). It first starts a background
/// process of its thread (`sleep`, in its per-thread state), whose pid it keeps, so tests
/// can see the thread's processes end with the thread.
#[derive(Default)]
pub struct StubbornTool {
    pub started: Notify,
    pub dropped: Arc<AtomicBool>,
    pub background_pid: Mutex<Option<u32>>,
}

struct DropFlag(Arc<AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Tool for StubbornTool {
    fn spec(&self) -> ToolSpec {
        spec("stubborn")
    }

    fn run<'a>(&'a self, _call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        async move {
            let _flag = DropFlag(Arc::clone(&self.dropped));
            // Killed when dropped too, as a terminal is: a thread dropped without a
            // shutdown leaves nothing behind (nor an inherited pipe held open).
            let sleep = tokio::process::Command::new("sleep")
                .arg("600")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            *self.background_pid.lock().unwrap() = sleep.id();
            ctx.thread
                .state::<BackgroundSleeps>()
                .0
                .lock()
                .unwrap()
                .push(sleep);
            self.started.notify_one();
            std::future::pending::<()>().await;
            ToolResult::ok("unreachable")
        }
        .boxed()
    }
}

/// `ask` tool: asks for approval of a command and reports the decision.
pub struct AskTool;

impl Tool for AskTool {
    fn spec(&self) -> ToolSpec {
        spec("ask")
    }

    fn run<'a>(&'a self, _call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        async move {
            let request = ClientRequest::Command {
                command: vec!["rm".into(), "-rf".into(), "build".into()],
                cwd: ctx.settings.cwd.clone(),
                reason: "clean the build".into(),
            };
            match ctx.request_approval(request, None).await {
                Ok(decision) => ToolResult::ok(format!("decision: {decision:?}")),
                Err(e) => ToolResult::err(e.to_string()),
            }
        }
        .boxed()
    }
}
