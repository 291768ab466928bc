//! What the sub-agent tools do, as [`AgentControl`] methods: spawn a child, mail it,
//! wait on it, close, reopen and list agents, and bring a resumed tree back. Each answers
//! with a typed result the tool layer serializes; errors are [`AgentError`]s, sentences the
//! model reads.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use rein_protocol::{
    AgentOrigin, InputPart, Item, Op, ReasoningEffort, SessionId, SubmissionId, ThreadId,
    ThreadSettings,
};
use serde::Serialize;

use super::delivery::WaitAnswer;
use super::error::AgentError;
use super::registry::{Mail, Node};
use super::state::AgentState;
use super::AgentControl;
use crate::manager::{SpawnedAgent, ThreadOptions, ThreadOrigin};
use crate::store::SessionMeta;
use crate::tools::{AgentEdge, ToolContext};

/// `spawn_agent`'s answer.
#[derive(Debug, Serialize)]
pub(super) struct Spawned {
    pub agent_id: ThreadId,
    pub nickname: String,
}

/// `send_input`'s answer: the mail's id.
#[derive(Debug, Serialize)]
pub(super) struct InputSent {
    pub submission_id: SubmissionId,
}

/// `close_agent`'s answer.
#[derive(Debug, Serialize)]
pub(super) struct Closed {
    pub previous_status: AgentState,
}

/// `resume_agent`'s answer.
#[derive(Debug, Serialize)]
pub(super) struct Resumed {
    pub status: AgentState,
}

/// `list_agents`' answer.
#[derive(Debug, Serialize)]
pub(super) struct Listed {
    pub agents: Vec<ListedAgent>,
}

/// One agent of a tree as `list_agents` shows it.
#[derive(Debug, Serialize)]
pub(super) struct ListedAgent {
    pub id: ThreadId,
    pub nickname: Option<String>,
    pub status: AgentState,
    pub last_task: String,
}

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
            InputPart::Image { .. } | InputPart::Skill { .. } => None,
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
    pub(super) fn resolve(&self, caller: ThreadId, target: &str) -> Result<ThreadId, AgentError> {
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
        found.ok_or_else(|| AgentError::UnknownAgent(target.to_owned()))
    }

    /// The child's settings: the parent's, narrowed by the role, with the model and
    /// effort asked for. Nothing a spawn asks for widens what the parent may do.
    pub(super) fn child_settings(
        &self,
        parent: &ThreadSettings,
        req: &SpawnRequest,
    ) -> Result<ThreadSettings, AgentError> {
        let mut settings = match req.role.as_deref() {
            None => parent.clone(),
            Some(name) => self.role(name)?.narrow(parent),
        };
        if let Some(model) = &req.model {
            settings.model.clone_from(model);
        }
        if settings.model != parent.model {
            self.manager()?
                .services()
                .models
                .client(&settings.model)
                .map_err(|_| AgentError::UnknownModel(settings.model.clone()))?;
        }
        if let Some(effort) = &req.reasoning_effort {
            settings.reasoning_effort = Some(effort.clone());
        }
        Ok(settings)
    }

    /// The role `name`, or an error that lists the known ones.
    pub(super) fn role(&self, name: &str) -> Result<&super::AgentRole, AgentError> {
        self.config
            .roles
            .get(name)
            .ok_or_else(|| AgentError::UnknownRole {
                name: name.to_owned(),
                known: self.role_names().join(", "),
            })
    }

    pub(super) fn role_names(&self) -> Vec<&str> {
        self.config.roles.keys().map(String::as_str).collect()
    }

    pub(super) async fn spawn(
        self: &Arc<Self>,
        ctx: &ToolContext,
        req: SpawnRequest,
    ) -> Result<Spawned, AgentError> {
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
                .ok_or(AgentError::NotRegistered)?;
            if depth > self.config.max_depth {
                return Err(AgentError::DepthLimit(self.config.max_depth));
            }
            let open = reg.open_agents(root);
            if open >= self.config.max_threads {
                return Err(AgentError::ThreadLimit {
                    open,
                    max: self.config.max_threads,
                });
            }
            let tree = reg.trees.entry(root).or_default();
            if tree.budget_spent {
                return Err(AgentError::BudgetSpent(tree.tokens));
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
        Ok(Spawned {
            agent_id: child,
            nickname,
        })
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
    ) -> Result<crate::thread::EventStream, AgentError> {
        let handle = manager.get(ctx.thread_id).ok_or(AgentError::CallerGone)?;
        let parent = handle.state().await?;
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
            return Err(AgentError::TurnEnded);
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
                    return Err(AgentError::CreateRollout(e));
                }
            }
        }
        match manager.create_thread(options) {
            Ok(new) => Ok(new.events),
            Err(e) => {
                undo().await;
                Err(AgentError::Start(e))
            }
        }
    }

    pub(super) async fn send_input(
        self: &Arc<Self>,
        ctx: &ToolContext,
        target: &str,
        items: Vec<InputPart>,
        interrupt: bool,
    ) -> Result<InputSent, AgentError> {
        let manager = self.manager()?;
        self.ensure_registered(ctx.thread_id)?;
        let to = self.resolve(ctx.thread_id, target)?;
        if to == ctx.thread_id {
            return Err(AgentError::SendToSelf);
        }
        let (open, parent) = {
            let reg = self.lock();
            let n = reg.nodes.get(&to);
            (n.is_some_and(|n| n.open), n.and_then(|n| n.parent))
        };
        let handle = manager
            .get(to)
            .filter(|_| open)
            .ok_or_else(|| AgentError::Closed(target.to_owned()))?;
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
        Ok(InputSent { submission_id: id })
    }

    pub(super) async fn wait(
        self: &Arc<Self>,
        ctx: &ToolContext,
        targets: &[String],
        timeout_ms: Option<u64>,
    ) -> Result<WaitAnswer, AgentError> {
        self.ensure_registered(ctx.thread_id)?;
        if targets.is_empty() {
            return Err(AgentError::NoTargets);
        }
        let timeout = match timeout_ms {
            Some(0) => return Err(AgentError::ZeroTimeout),
            Some(ms) => ms.min(self.config.max_wait_ms),
            None => self.config.default_wait_ms,
        };
        let mut ids = Vec::new();
        let mut unknown = BTreeMap::new();
        for target in targets {
            match self.resolve(ctx.thread_id, target) {
                Ok(id) => ids.push(id),
                Err(_) => {
                    unknown.insert(target.clone(), AgentState::NotFound);
                }
            }
        }
        if !unknown.is_empty() {
            return Ok(WaitAnswer::of(unknown));
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
                return Ok(answer.settle(ctx).await);
            }
            tokio::select! {
                () = &mut changed => {}
                () = tokio::time::sleep_until(deadline) => {
                    return Ok(match guard.finish(&ids, true) {
                        Some(answer) => answer.settle(ctx).await,
                        None => WaitAnswer::timed_out(),
                    });
                }
                () = ctx.cancel.cancelled() => return Err(AgentError::WaitInterrupted),
            }
        }
    }

    pub(super) async fn close(
        self: &Arc<Self>,
        ctx: &ToolContext,
        target: &str,
    ) -> Result<Closed, AgentError> {
        self.ensure_registered(ctx.thread_id)?;
        let id = self.resolve(ctx.thread_id, target)?;
        let (parent, previous) = {
            let reg = self.lock();
            let n = reg
                .nodes
                .get(&id)
                .ok_or_else(|| AgentError::UnknownAgent(target.to_owned()))?;
            (n.parent, n.state.clone())
        };
        if parent != Some(ctx.thread_id) {
            return Err(AgentError::NotTheParent {
                target: target.to_owned(),
                action: "close",
            });
        }
        ctx.record_agents(AgentEdge::Closed { thread_id: id }).await;
        self.end_subtree(id, true, true).await;
        Ok(Closed {
            previous_status: previous,
        })
    }

    pub(super) async fn resume_agent(
        self: &Arc<Self>,
        ctx: &ToolContext,
        target: &str,
    ) -> Result<Resumed, AgentError> {
        let manager = self.manager()?;
        self.ensure_registered(ctx.thread_id)?;
        let id = self.resolve(ctx.thread_id, target)?;
        let (parent, open, nickname, role, task, root) = {
            let reg = self.lock();
            let n = reg
                .nodes
                .get(&id)
                .ok_or_else(|| AgentError::UnknownAgent(target.to_owned()))?;
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
            return Err(AgentError::NotTheParent {
                target: target.to_owned(),
                action: "resume",
            });
        }
        if open && manager.get(id).is_some() {
            return Ok(Resumed {
                status: self.state_of(id),
            });
        }
        {
            let reg = self.lock();
            let used = reg.open_agents(root);
            if used >= self.config.max_threads {
                return Err(AgentError::ThreadLimit {
                    open: used,
                    max: self.config.max_threads,
                });
            }
        }
        let store = manager.store().ok_or(AgentError::NotPersisted)?;
        // Wait until the closed thread's writer has let go of its rollout.
        store.flush().await;
        let resumed = store
            .resume(id)
            .await
            .map_err(|source| AgentError::ReopenRead {
                target: target.to_owned(),
                source,
            })?;
        let new = manager
            .create_thread(ThreadOptions::resume(resumed.events, resumed.recorder))
            .map_err(|source| AgentError::ReopenStart {
                target: target.to_owned(),
                source,
            })?;
        ctx.record_agents(AgentEdge::Spawned {
            thread_id: id,
            nickname,
            role,
            task,
        })
        .await;
        let state = new.handle.state().await?;
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
        Ok(Resumed { status: restored })
    }

    pub(super) fn list(self: &Arc<Self>, ctx: &ToolContext) -> Result<Listed, AgentError> {
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
        let agents = agents
            .into_iter()
            .map(|(id, n)| ListedAgent {
                id: *id,
                nickname: n.nickname.clone(),
                status: if n.open {
                    n.state.clone()
                } else {
                    AgentState::Shutdown
                },
                last_task: n.last_task.clone(),
            })
            .collect();
        Ok(Listed { agents })
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
