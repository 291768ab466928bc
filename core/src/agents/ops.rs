//! What the sub-agent tools do, as [`AgentControl`] methods: spawn a child, mail it,
//! wait on it, close, reopen and list agents, and bring a resumed tree back. Each answers
//! with a typed result the tool layer serializes; errors are [`AgentError`]s, sentences the
//! model reads.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use rein_protocol::{InputPart, Op, SubmissionId, ThreadId};
use serde::Serialize;

use super::delivery::WaitAnswer;
use super::error::AgentError;
use super::registry::{Mail, Node};
use super::state::AgentState;
use super::AgentControl;
use crate::manager::ThreadOptions;
use crate::tools::{AgentEdge, ToolContext};

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

    /// Refused when `root`'s tree already has `max_threads` open agents.
    fn check_thread_limit(&self, root: ThreadId) -> Result<(), AgentError> {
        let used = self.lock().open_agents(root);
        if used >= self.config.max_threads {
            return Err(AgentError::ThreadLimit {
                open: used,
                max: self.config.max_threads,
            });
        }
        Ok(())
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
        self.check_thread_limit(root)?;
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
