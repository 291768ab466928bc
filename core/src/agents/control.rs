//! What keeps the registry of agent trees ([`super::registry`]) true: one watcher per
//! thread of a tree hands the thread's events to the registry and carries out what they
//! ask for (a finished child's result as mail to its parent, an interrupt or a budget stop
//! cascading to the children, a shutdown ending the subtree).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use rein_protocol::{EventMsg, Op, OpResult, ThreadId, ThreadSettings};
use tokio::sync::Notify;

use super::error::AgentError;
use super::graph::{graph_tools, GraphRun};
use super::registry::{state_from, FollowUp, Mail, Node, Registry};
use super::roles::SUBMIT_REVIEW;
use super::state::AgentState;
use super::tools::agent_tools;
use super::AgentsConfig;
use super::{AgentRole, Strategy};
use crate::manager::ThreadManager;
use crate::thread::state::ThreadState;
use crate::thread::EventStream;
use crate::tools::{StaticTools, ToolSource};

pub struct AgentControl {
    pub(super) config: AgentsConfig,
    manager: OnceLock<Weak<ThreadManager>>,
    registry: Mutex<Registry>,
    /// Woken whenever an agent's state changes: what `wait_agent` waits on.
    pub(super) changed: Notify,
    full: Arc<dyn ToolSource>,
    /// For agents at the depth limit: everything but `spawn_agent`.
    leaf: Arc<dyn ToolSource>,
    /// `plan_tasks` (roots of the planner strategy) and `submit_review` (reviewers).
    plan_tasks: Arc<dyn ToolSource>,
    submit_review: Arc<dyn ToolSource>,
    /// The task graphs of loaded roots, by root.
    graphs: Mutex<HashMap<ThreadId, GraphRun>>,
}

impl AgentControl {
    pub fn new(config: AgentsConfig) -> Arc<Self> {
        Arc::new_cyclic(|weak: &Weak<AgentControl>| {
            let (full, leaf) = agent_tools(weak);
            let (plan, review) = graph_tools(weak);
            AgentControl {
                config,
                manager: OnceLock::new(),
                registry: Mutex::default(),
                changed: Notify::new(),
                full: Arc::new(StaticTools::new(full)),
                leaf: Arc::new(StaticTools::new(leaf)),
                plan_tasks: Arc::new(StaticTools::new(vec![plan])),
                submit_review: Arc::new(StaticTools::new(vec![review])),
                graphs: Mutex::default(),
            }
        })
    }

    pub fn config(&self) -> &AgentsConfig {
        &self.config
    }

    pub(crate) fn attach(&self, manager: Weak<ThreadManager>) {
        let _ = self.manager.set(manager);
    }

    /// The tools a thread at `depth` running as `role` is offered; a root's `strategy`
    /// decides whether it plans (`plan_tasks`).
    pub(crate) fn tool_source(
        &self,
        depth: u32,
        role: Option<&str>,
        strategy: Strategy,
    ) -> Arc<dyn ToolSource> {
        let role_def = role.and_then(|r| self.config.roles.get(r));
        let may_spawn = role_def.is_none_or(|r| r.may_spawn);
        let base = if depth >= self.config.max_depth || !may_spawn {
            &self.leaf
        } else {
            &self.full
        };
        let extra = if depth == 0 && strategy == Strategy::Planner {
            Some(&self.plan_tasks)
        } else if role == Some("reviewer")
            || role_def
                .and_then(|r| r.tools.as_ref())
                .is_some_and(|t| t.iter().any(|n| n == SUBMIT_REVIEW))
        {
            Some(&self.submit_review)
        } else {
            None
        };
        match extra {
            None => Arc::clone(base),
            Some(extra) => {
                let tools = [base, extra]
                    .iter()
                    .flat_map(|s| s.tools().iter().cloned().collect::<Vec<_>>())
                    .collect();
                Arc::new(StaticTools::new(tools))
            }
        }
    }

    /// A role's tool allow-list (with `submit_review` for reviewers).
    pub(crate) fn role_tools(&self, role: Option<&str>) -> Option<Vec<String>> {
        let mut tools = self.config.roles.get(role?)?.tools.clone()?;
        if role == Some("reviewer") && !tools.iter().any(|t| t == SUBMIT_REVIEW) {
            tools.push(SUBMIT_REVIEW.to_owned());
        }
        Some(tools)
    }

    /// A new root's settings and strategy (the one asked for, else the configuration's):
    /// under the planner strategy, with the planner's instructions.
    pub(crate) fn root_settings(
        &self,
        settings: ThreadSettings,
        asked: Option<Strategy>,
    ) -> (ThreadSettings, Option<Strategy>) {
        let strategy = asked.unwrap_or(self.config.strategy);
        let settings = match (strategy, self.config.roles.get("planner")) {
            (Strategy::Planner, Some(planner)) => AgentRole {
                model: None,
                reasoning_effort: None,
                sandbox: None,
                ..planner.clone()
            }
            .narrow(&settings),
            _ => settings,
        };
        (settings, Some(strategy))
    }

    pub(super) fn graphs(&self) -> MutexGuard<'_, HashMap<ThreadId, GraphRun>> {
        self.graphs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn manager(&self) -> Result<Arc<ThreadManager>, AgentError> {
        self.manager
            .get()
            .and_then(Weak::upgrade)
            .ok_or(AgentError::ManagerGone)
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state of agent `id` as the model reads it.
    pub fn state_of(&self, id: ThreadId) -> AgentState {
        self.lock()
            .nodes
            .get(&id)
            .map_or(AgentState::NotFound, |n| n.state.clone())
    }

    /// Agent `id`'s status as front ends show it.
    pub fn report_of(&self, id: ThreadId) -> rein_protocol::AgentReport {
        let reg = self.lock();
        match reg.nodes.get(&id) {
            Some(n) => n.state.report(id, n.nickname.clone()),
            None => AgentState::NotFound.report(id, None),
        }
    }

    /// Whether `thread` is blocked in a `wait_agent` right now.
    pub fn is_waiting(&self, thread: ThreadId) -> bool {
        self.lock()
            .nodes
            .get(&thread)
            .is_some_and(|n| n.waiting_on.is_some())
    }

    /// Resolves once `thread` is blocked in a `wait_agent`.
    pub async fn until_waiting(&self, thread: ThreadId) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.is_waiting(thread) {
                return;
            }
            changed.await;
        }
    }

    /// Make `thread` known as a root (the first time it spawns), watching its events.
    pub(super) fn ensure_registered(self: &Arc<Self>, thread: ThreadId) -> Result<(), AgentError> {
        if self.lock().nodes.contains_key(&thread) {
            return Ok(());
        }
        let handle = self
            .manager()?
            .get(thread)
            .ok_or(AgentError::NotLoaded(thread))?;
        let events = handle.subscribe();
        {
            let mut reg = self.lock();
            if reg.nodes.contains_key(&thread) {
                return Ok(());
            }
            let mut node = Node::new(thread, None, 0);
            node.state = AgentState::Running;
            reg.nodes.insert(thread, node);
            reg.trees.entry(thread).or_default();
        }
        self.watch(thread, events);
        Ok(())
    }

    /// Register a thread brought back from its rollout, with the state its events folded.
    pub(super) fn register_restored(
        self: &Arc<Self>,
        thread: ThreadId,
        state: &ThreadState,
        last_task: Option<String>,
        events: EventStream,
    ) {
        {
            let mut reg = self.lock();
            if reg.nodes.contains_key(&thread) {
                return;
            }
            let root = state
                .session_id
                .map_or(thread, |s| ThreadId::from_uuid(s.as_uuid()));
            let (parent, depth, nickname, role) = match &state.agent {
                Some(o) => (
                    Some(o.parent_thread_id),
                    o.depth,
                    o.nickname.clone(),
                    o.role.clone(),
                ),
                None => (None, 0, None, None),
            };
            let mut node = Node::new(root, parent, depth);
            node.nickname = nickname;
            node.role = role;
            node.state = state_from(state);
            node.last_task = last_task.unwrap_or_default();
            reg.nodes.insert(thread, node);
            let tree = reg.trees.entry(root).or_default();
            tree.spawned += state.children.len();
        }
        self.watch(thread, events);
    }

    /// Follow `thread`'s events until it shuts down.
    pub(super) fn watch(self: &Arc<Self>, thread: ThreadId, mut events: EventStream) {
        let control = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                let Some(control) = control.upgrade() else {
                    return;
                };
                let end = matches!(event.msg, EventMsg::ShutdownComplete);
                let follow = control.lock().observe(thread, &event.msg, &control.config);
                control.follow_up(follow);
                control.graph_observe(thread, &event.msg);
                if end {
                    return;
                }
            }
        });
    }

    /// Carry out what a registry change asked for (each in its own task: nothing here
    /// waits under the lock, and a watcher never waits on another thread).
    pub(super) fn follow_up(self: &Arc<Self>, follow: FollowUp) {
        if follow.changed {
            self.changed.notify_waiters();
        }
        for mail in follow.hold {
            let control = Arc::clone(self);
            tokio::spawn(async move { control.hold(mail).await });
        }
        for (to, id) in follow.drop {
            let control = Arc::clone(self);
            tokio::spawn(async move {
                let handle = control.manager().ok().and_then(|m| m.get(to));
                if let Some(handle) = handle {
                    let _ = handle
                        .submit(Op::DropMail {
                            submission_ids: vec![id],
                        })
                        .await;
                }
            });
        }
        if !follow.mail.is_empty() {
            let control = Arc::clone(self);
            tokio::spawn(async move {
                for mail in follow.mail {
                    control.submit_mail(mail).await;
                }
            });
        }
        let stops = follow
            .interrupt
            .into_iter()
            .map(|id| (id, Op::Interrupt))
            .chain(
                follow
                    .budget_stop
                    .into_iter()
                    .map(|id| (id, Op::BudgetStop)),
            );
        for (id, op) in stops {
            let control = Arc::clone(self);
            tokio::spawn(async move {
                if let Some(handle) = control.manager().ok().and_then(|m| m.get(id)) {
                    let _ = handle.submit(op).await;
                }
            });
        }
        for id in follow.shut_down_below {
            let control = Arc::clone(self);
            tokio::spawn(async move { control.end_subtree(id, false, false).await });
        }
    }

    /// Record queued `mail` in its receiver's rollout (a crash does not lose it), then let
    /// the queue release it.
    async fn hold(self: &Arc<Self>, mail: Mail) {
        if let Some(handle) = self.manager().ok().and_then(|m| m.get(mail.to)) {
            let op = Op::HoldMail {
                from: mail.from,
                items: mail.items,
            };
            if let Err(e) = handle.submit_with_id(mail.id, op).await {
                tracing::warn!(to = %mail.to, "queued mail not recorded: {e}");
            }
        }
        let follow = self.lock().hold_recorded(mail.to, mail.id, &self.config);
        self.follow_up(follow);
    }

    /// Hand `mail` to its thread's loop, then settle the capacity it was given.
    async fn submit_mail(self: &Arc<Self>, mail: Mail) {
        if !self.lock().handing(&mail) {
            // A wait took it into its answer: it is not handed over (its hold, if it was
            // queued, is dropped), and any capacity it was given goes back (`Accepted` is
            // "no turn started").
            let mut follow = self
                .lock()
                .delivered(mail.to, Some(OpResult::Accepted), &self.config);
            follow.drop.push((mail.to, mail.id));
            self.follow_up(follow);
            return;
        }
        let handle = self.manager().ok().and_then(|m| m.get(mail.to));
        let outcome = match handle {
            Some(handle) => handle
                .submit_with_id(
                    mail.id,
                    Op::AgentMail {
                        from: mail.from,
                        items: mail.items.clone(),
                    },
                )
                .await
                .ok(),
            None => None,
        };
        let mut follow = {
            let mut reg = self.lock();
            reg.landed(&mail);
            reg.delivered(mail.to, outcome, &self.config)
        };
        // A wait may be waiting for this mail to reach the loop.
        follow.changed = true;
        self.follow_up(follow);
    }

    /// Route mail like [`Self::send`], and wait until it is recorded: the mail that goes
    /// at once is in its thread's loop, mail queued for capacity is held in its receiver's
    /// rollout (so a crash after this does not lose it).
    pub(super) async fn deliver(self: &Arc<Self>, mail: Mail) {
        let mut follow = self.lock().route(mail, &self.config);
        let now = std::mem::take(&mut follow.mail);
        let holds = std::mem::take(&mut follow.hold);
        self.follow_up(follow);
        for mail in holds {
            self.hold(mail).await;
        }
        for mail in now {
            self.submit_mail(mail).await;
        }
    }

    /// Route mail (now, or queued for capacity) and start what the tree has room for.
    pub(super) fn send(self: &Arc<Self>, mail: Mail) {
        let follow = self.lock().route(mail, &self.config);
        self.follow_up(follow);
    }

    /// Mark `waiter` as blocked in `wait_agent` on `targets` (or no longer, with `None`).
    pub(super) fn set_waiting(
        self: &Arc<Self>,
        waiter: ThreadId,
        targets: Option<HashSet<ThreadId>>,
    ) {
        let follow = {
            let mut reg = self.lock();
            reg.set_waiting(waiter, targets, &self.config)
        };
        self.follow_up(follow);
    }

    /// End `id`'s open descendants, leaves first (and `id` itself when `include_self`);
    /// `close` marks them closed (not resumed with their parent). Each gets
    /// `close_timeout_ms` to shut down.
    pub(super) async fn end_subtree(
        self: &Arc<Self>,
        id: ThreadId,
        include_self: bool,
        close: bool,
    ) {
        let order = {
            let mut reg = self.lock();
            let mut order = Vec::new();
            reg.post_order(id, &mut order);
            if !include_self {
                order.retain(|t| *t != id);
            }
            if close {
                for t in &order {
                    if let Some(n) = reg.nodes.get_mut(t) {
                        n.open = false;
                    }
                }
                let ids: HashSet<ThreadId> = order.iter().copied().collect();
                for tree in reg.trees.values_mut() {
                    tree.queue.retain(|m| !ids.contains(&m.to));
                }
            }
            order
        };
        let Ok(manager) = self.manager() else {
            return;
        };
        let limit = Duration::from_millis(self.config.close_timeout_ms);
        for thread in order {
            if let Some(handle) = manager.get(thread) {
                if tokio::time::timeout(limit, handle.shutdown())
                    .await
                    .is_err()
                {
                    tracing::warn!(%thread, "a sub-agent did not shut down in time");
                }
            }
        }
    }
}
