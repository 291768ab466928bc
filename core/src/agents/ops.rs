//! What the sub-agent tools do, as [`AgentControl`] methods: spawn a child, mail it,
//! wait on it, close, reopen and list agents, and bring a resumed tree back. Errors are
//! sentences the model reads.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use rein_protocol::{
    AgentOrigin, InputPart, Item, Op, ReasoningEffort, SandboxPolicy, SessionId, SubmissionId,
    ThreadId, ThreadSettings,
};
use serde_json::{json, Value};

use super::delivery::WaitAnswer;
use super::registry::{Mail, Node};
use super::state::AgentState;
use super::AgentControl;
use crate::manager::{SpawnedAgent, ThreadOptions, ThreadOrigin};
use crate::store::SessionMeta;
use crate::tools::{AgentEdge, ToolContext};

/// Roles a spawn may ask for (`agent_type`). A role only narrows what the child inherits.
pub(super) const ROLES: &[&str] = &["default", "worker", "explorer"];

pub(super) struct SpawnRequest {
    pub items: Vec<InputPart>,
    pub role: Option<String>,
    pub model: Option<String>,
    pub reasoning_effort: Option<ReasoningEffort>,
    pub fork_context: bool,
}

/// The text of input parts, as a task is listed.
pub(super) fn task_text(items: &[InputPart]) -> String {
    items
        .iter()
        .filter_map(|p| match p {
            InputPart::Text { text } => Some(text.as_str()),
            InputPart::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The parent's conversation as a forked child gets it: user messages and final answers
/// (an agent message no tool call follows before the next user message), nothing else.
fn forked_history(history: &[Arc<Item>]) -> Vec<Item> {
    let mut out = Vec::new();
    for (i, item) in history.iter().enumerate() {
        match item.as_ref() {
            Item::UserMessage { .. } => out.push(item.as_ref().clone()),
            Item::AgentMessage { .. } => {
                let followed_by_call = history[i + 1..]
                    .iter()
                    .take_while(|next| !matches!(next.as_ref(), Item::UserMessage { .. }))
                    .any(|next| matches!(next.as_ref(), Item::ToolCall { .. }));
                if !followed_by_call {
                    out.push(item.as_ref().clone());
                }
            }
            _ => {}
        }
    }
    out
}

impl AgentControl {
    /// The thread `target` names (an id or a nickname) in `caller`'s tree.
    pub(super) fn resolve(&self, caller: ThreadId, target: &str) -> Result<ThreadId, String> {
        let reg = self.lock();
        let root = reg.nodes.get(&caller).map_or(caller, |n| n.root);
        let found = match target.parse::<ThreadId>() {
            Ok(id) => reg.nodes.get(&id).filter(|n| n.root == root).map(|_| id),
            Err(_) => reg
                .nodes
                .iter()
                .find(|(_, n)| n.root == root && n.nickname.as_deref() == Some(target))
                .map(|(id, _)| *id),
        };
        found.ok_or_else(|| format!("no agent `{target}` in this tree (list_agents shows them)"))
    }

    /// The child's settings: the parent's, with the model and effort asked for, narrowed
    /// by the role. Nothing a spawn asks for widens what the parent may do.
    fn child_settings(
        &self,
        parent: &ThreadSettings,
        req: &SpawnRequest,
    ) -> Result<ThreadSettings, String> {
        let mut settings = parent.clone();
        if let Some(model) = &req.model {
            let manager = self.manager()?;
            manager
                .services()
                .models
                .client(model)
                .map_err(|_| format!("unknown model `{model}` for spawn_agent"))?;
            settings.model.clone_from(model);
        }
        if let Some(effort) = &req.reasoning_effort {
            settings.reasoning_effort = Some(effort.clone());
        }
        match req.role.as_deref() {
            None | Some("default" | "worker") => {}
            Some("explorer") => settings.sandbox_policy = SandboxPolicy::ReadOnly,
            Some(other) => {
                return Err(format!(
                    "unknown agent_type `{other}`; known: {}",
                    ROLES.join(", ")
                ))
            }
        }
        Ok(settings)
    }

    pub(super) async fn spawn(
        self: &Arc<Self>,
        ctx: &ToolContext,
        req: SpawnRequest,
    ) -> Result<Value, String> {
        let manager = self.manager()?;
        let parent = ctx.thread_id;
        self.ensure_registered(parent)?;
        let settings = self.child_settings(&ctx.settings, &req)?;
        let child = ThreadId::new();
        let task = task_text(&req.items);
        let (root, depth, nickname) = {
            let mut reg = self.lock();
            let (root, depth) = reg
                .nodes
                .get(&parent)
                .map(|n| (n.root, n.depth + 1))
                .ok_or("the calling thread is not registered")?;
            if depth > self.config.max_depth {
                return Err(format!(
                    "agent depth limit reached (agents.max_depth = {}): solve the task yourself",
                    self.config.max_depth
                ));
            }
            let open = reg.open_agents(root);
            if open >= self.config.max_threads {
                return Err(format!(
                    "agent thread limit reached: {open} agents are open (agents.max_threads = {}); \
                     close one you no longer need with close_agent",
                    self.config.max_threads
                ));
            }
            let tree = reg.trees.entry(root).or_default();
            if tree.budget_spent {
                return Err(format!(
                    "the tree's token budget is spent ({} tokens, agents.max_tree_tokens); no new agents",
                    tree.tokens
                ));
            }
            let nickname = tree.nickname();
            let mut node = Node::new(root, Some(parent), depth);
            node.nickname = Some(nickname.clone());
            node.role.clone_from(&req.role);
            node.last_task.clone_from(&task);
            reg.nodes.insert(child, node);
            (root, depth, nickname)
        };
        let created = self
            .create_child(
                ctx, &manager, child, root, depth, &nickname, &settings, &req, &task,
            )
            .await;
        let events = match created {
            Ok(events) => events,
            Err(e) => {
                self.lock().nodes.remove(&child);
                return Err(e);
            }
        };
        self.watch(child, events);
        self.deliver(Mail {
            id: SubmissionId::new(),
            from: parent,
            to: child,
            items: req.items,
        })
        .await;
        Ok(json!({ "agent_id": child.to_string(), "nickname": nickname }))
    }

    /// Record the edge in the parent, then create the child (its rollout first).
    #[allow(clippy::too_many_arguments)]
    async fn create_child(
        &self,
        ctx: &ToolContext,
        manager: &crate::manager::ThreadManager,
        child: ThreadId,
        root: ThreadId,
        depth: u32,
        nickname: &str,
        settings: &ThreadSettings,
        req: &SpawnRequest,
        task: &str,
    ) -> Result<crate::thread::EventStream, String> {
        let handle = manager
            .get(ctx.thread_id)
            .ok_or("the calling thread is gone")?;
        let parent = handle.state().await.map_err(|e| e.to_string())?;
        let history = if req.fork_context {
            forked_history(&parent.history)
        } else {
            Vec::new()
        };
        // Write-ahead: the parent knows the child before the child exists, so a crash in
        // between leaves a known child without a rollout, never an unknown one.
        let recorded = ctx
            .record_agents(AgentEdge::Spawned {
                thread_id: child,
                nickname: Some(nickname.to_owned()),
                role: req.role.clone(),
                task: task.to_owned(),
            })
            .await;
        if !recorded {
            return Err("the turn ended before the agent could be spawned".into());
        }
        let session_id = SessionId::from(root);
        let mut options = ThreadOptions::new(settings.clone()).with_origin(ThreadOrigin::Spawned {
            parent: ctx.thread_id,
        });
        options.thread_id = Some(child);
        // A child is told what its parent was told about the project (Codex gives its
        // sub-agents the same instructions), as the parent read it.
        if let Some(context) = parent.context.clone() {
            options = options.with_context(context, Vec::new());
        }
        options.agent = Some(SpawnedAgent {
            origin: AgentOrigin {
                parent_thread_id: ctx.thread_id,
                depth,
                nickname: Some(nickname.to_owned()),
                role: req.role.clone(),
            },
            session_id,
            history,
        });
        let undo = || async {
            ctx.record_agents(AgentEdge::Closed { thread_id: child })
                .await;
        };
        if let Some(store) = manager.store() {
            let provider = manager
                .services()
                .models
                .models()
                .into_iter()
                .find(|m| m.id == settings.model)
                .map_or_else(|| "unknown".to_owned(), |m| m.provider);
            let mut meta = SessionMeta::new(
                child,
                session_id,
                settings.cwd.clone(),
                settings.model.clone(),
                provider,
            );
            meta.parent_thread_id = Some(ctx.thread_id);
            match store.create(meta).await {
                Ok(created) => options = options.with_recorder(created.recorder),
                Err(e) => {
                    undo().await;
                    return Err(format!("the agent's rollout could not be created: {e}"));
                }
            }
        }
        match manager.create_thread(options) {
            Ok(new) => Ok(new.events),
            Err(e) => {
                undo().await;
                Err(format!("the agent could not be started: {e}"))
            }
        }
    }

    pub(super) async fn send_input(
        self: &Arc<Self>,
        ctx: &ToolContext,
        target: &str,
        items: Vec<InputPart>,
        interrupt: bool,
    ) -> Result<Value, String> {
        let manager = self.manager()?;
        self.ensure_registered(ctx.thread_id)?;
        let to = self.resolve(ctx.thread_id, target)?;
        if to == ctx.thread_id {
            return Err("an agent cannot send input to itself".into());
        }
        let (open, parent) = {
            let reg = self.lock();
            let n = reg.nodes.get(&to);
            (n.is_some_and(|n| n.open), n.and_then(|n| n.parent))
        };
        let handle = manager.get(to).filter(|_| open).ok_or_else(|| {
            format!("agent `{target}` is closed; reopen it with resume_agent first")
        })?;
        if interrupt {
            let _ = handle.submit(Op::Interrupt).await;
        }
        let task = task_text(&items);
        if parent == Some(ctx.thread_id) {
            ctx.record_agents(AgentEdge::Tasked {
                thread_id: to,
                task: task.clone(),
            })
            .await;
        }
        if let Some(n) = self.lock().nodes.get_mut(&to) {
            n.last_task = task;
        }
        let id = SubmissionId::new();
        self.deliver(Mail {
            id,
            from: ctx.thread_id,
            to,
            items,
        })
        .await;
        Ok(json!({ "submission_id": id.to_string() }))
    }

    pub(super) async fn wait(
        self: &Arc<Self>,
        ctx: &ToolContext,
        targets: &[String],
        timeout_ms: Option<u64>,
    ) -> Result<Value, String> {
        self.ensure_registered(ctx.thread_id)?;
        if targets.is_empty() {
            return Err("targets must name at least one agent".into());
        }
        let timeout = match timeout_ms {
            Some(0) => return Err("timeout_ms must be greater than zero".into()),
            Some(ms) => ms.min(self.config.max_wait_ms),
            None => self.config.default_wait_ms,
        };
        let mut ids = Vec::new();
        let mut unknown = BTreeMap::new();
        for target in targets {
            match self.resolve(ctx.thread_id, target) {
                Ok(id) => ids.push(id),
                Err(_) => {
                    unknown.insert(target.clone(), AgentState::NotFound.to_json());
                }
            }
        }
        if !unknown.is_empty() {
            return Ok(json!({ "status": unknown, "timed_out": false }));
        }
        let watched: HashSet<ThreadId> = ids.iter().copied().collect();
        self.set_waiting(ctx.thread_id, Some(watched));
        // Whatever ends the wait without an answer (interrupt, a dropped turn) mails what
        // it held: see `delivery`.
        let mut guard = WaitGuard {
            control: Arc::clone(self),
            waiter: ctx.thread_id,
            armed: true,
        };
        let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout);
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(answer) = guard.finish(&ids, false) {
                return Ok(answer.settle(ctx).await.to_json());
            }
            tokio::select! {
                () = &mut changed => {}
                () = tokio::time::sleep_until(deadline) => {
                    return Ok(match guard.finish(&ids, true) {
                        Some(answer) => answer.settle(ctx).await.to_json(),
                        None => json!({ "status": {}, "timed_out": true }),
                    });
                }
                () = ctx.cancel.cancelled() => return Err("the wait was interrupted".to_owned()),
            }
        }
    }

    pub(super) async fn close(
        self: &Arc<Self>,
        ctx: &ToolContext,
        target: &str,
    ) -> Result<Value, String> {
        self.ensure_registered(ctx.thread_id)?;
        let id = self.resolve(ctx.thread_id, target)?;
        let (parent, previous) = {
            let reg = self.lock();
            let n = reg.nodes.get(&id).ok_or("unknown agent")?;
            (n.parent, n.state.clone())
        };
        if parent != Some(ctx.thread_id) {
            return Err(format!(
                "only the agent that spawned `{target}` can close it"
            ));
        }
        ctx.record_agents(AgentEdge::Closed { thread_id: id }).await;
        self.end_subtree(id, true, true).await;
        Ok(json!({ "previous_status": previous.to_json() }))
    }

    pub(super) async fn resume_agent(
        self: &Arc<Self>,
        ctx: &ToolContext,
        target: &str,
    ) -> Result<Value, String> {
        let manager = self.manager()?;
        self.ensure_registered(ctx.thread_id)?;
        let id = self.resolve(ctx.thread_id, target)?;
        let (parent, open, nickname, role, task, root) = {
            let reg = self.lock();
            let n = reg.nodes.get(&id).ok_or("unknown agent")?;
            (
                n.parent,
                n.open,
                n.nickname.clone(),
                n.role.clone(),
                n.last_task.clone(),
                n.root,
            )
        };
        if parent != Some(ctx.thread_id) {
            return Err(format!(
                "only the agent that spawned `{target}` can resume it"
            ));
        }
        if open && manager.get(id).is_some() {
            return Ok(json!({ "status": self.state_of(id).to_json() }));
        }
        {
            let reg = self.lock();
            let used = reg.open_agents(root);
            if used >= self.config.max_threads {
                return Err(format!(
                    "agent thread limit reached: {used} agents are open (agents.max_threads = {}); \
                     close one you no longer need with close_agent",
                    self.config.max_threads
                ));
            }
        }
        let store = manager
            .store()
            .ok_or("agents cannot be reopened: threads are not persisted here")?;
        // Wait until the closed thread's writer has let go of its rollout.
        store.flush().await;
        let resumed = store
            .resume(id)
            .await
            .map_err(|e| format!("agent `{target}` could not be reopened: {e}"))?;
        let new = manager
            .create_thread(ThreadOptions::resume(resumed.events, resumed.recorder))
            .map_err(|e| format!("agent `{target}` could not be reopened: {e}"))?;
        ctx.record_agents(AgentEdge::Spawned {
            thread_id: id,
            nickname,
            role,
            task,
        })
        .await;
        let state = new.handle.state().await.map_err(|e| e.to_string())?;
        let restored = super::registry::state_from(&state);
        {
            let mut reg = self.lock();
            if let Some(n) = reg.nodes.get_mut(&id) {
                n.open = true;
                n.state = restored.clone();
            }
        }
        self.watch(id, new.events);
        self.redeliver(id, &state, None);
        self.changed.notify_waiters();
        Ok(json!({ "status": restored.to_json() }))
    }

    pub(super) fn list(self: &Arc<Self>, ctx: &ToolContext) -> Result<Value, String> {
        self.ensure_registered(ctx.thread_id)?;
        let reg = self.lock();
        let root = reg
            .nodes
            .get(&ctx.thread_id)
            .map_or(ctx.thread_id, |n| n.root);
        let mut agents: Vec<(&ThreadId, &Node)> = reg
            .nodes
            .iter()
            .filter(|(_, n)| n.root == root && n.parent.is_some())
            .collect();
        agents.sort_by_key(|(id, _)| **id);
        let agents: Vec<Value> = agents
            .into_iter()
            .map(|(id, n)| {
                json!({
                    "id": id.to_string(),
                    "nickname": n.nickname,
                    "status": if n.open { n.state.to_json() } else { AgentState::Shutdown.to_json() },
                    "last_task": n.last_task,
                })
            })
            .collect();
        Ok(json!({ "agents": agents }))
    }
}

/// A `wait_agent` in progress: ends the wait in the registry exactly once.
struct WaitGuard {
    control: Arc<AgentControl>,
    waiter: ThreadId,
    armed: bool,
}

impl WaitGuard {
    /// The wait's answer if a target is final (or, with `end`, the wait ends regardless).
    fn finish(&mut self, targets: &[ThreadId], end: bool) -> Option<WaitAnswer> {
        let (answer, follow) = {
            let mut reg = self.control.lock();
            reg.finish_wait(self.waiter, targets, end, &self.control.config)
        };
        if answer.is_some() || end {
            self.armed = false;
            self.control.follow_up(follow);
        }
        answer
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let follow = {
            let mut reg = self.control.lock();
            reg.abandon_wait(self.waiter, &self.control.config)
        };
        // Carrying it out spawns tasks: only where a runtime runs (it always does, but a
        // drop must not panic).
        if tokio::runtime::Handle::try_current().is_ok() {
            self.control.follow_up(follow);
        }
    }
}
