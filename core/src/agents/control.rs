//! The registry of agent trees and what keeps it true: one watcher per thread of a tree
//! folds the thread's events into its agent's state (never set by hand), counts the tree's
//! running sub-agent turns, and turns what happened into follow-ups (a finished child's
//! result as mail to its parent, an interrupt cascading to the children, a shutdown ending
//! the subtree). Mail that would start a turn on an idle sub-agent waits in the tree's
//! queue while the tree is at `max_concurrent_turns`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use rein_protocol::{EventMsg, InputOutcome, InputPart, Op, OpResult, SubmissionId, ThreadId};
use tokio::sync::Notify;

use super::state::{result_mail, AgentState};
use super::tools::agent_tools;
use super::AgentsConfig;
use crate::manager::ThreadManager;
use crate::thread::state::ThreadState;
use crate::thread::EventStream;
use crate::tools::{StaticTools, ToolSource};

/// Nicknames handed out in order within a tree (then again with a number).
const NICKNAMES: &[&str] = &[
    "Ada", "Babbage", "Curie", "Darwin", "Euler", "Faraday", "Gauss", "Hopper", "Ising", "Joule",
    "Kepler", "Lovelace", "Meitner", "Noether", "Ohm", "Pascal", "Quine", "Riemann", "Shannon",
    "Turing", "Volta", "Wiles", "Yalow", "Zuse",
];

pub struct AgentControl {
    pub(super) config: AgentsConfig,
    manager: OnceLock<Weak<ThreadManager>>,
    registry: Mutex<Registry>,
    /// Woken whenever an agent's state changes: what `wait_agent` waits on.
    pub(super) changed: Notify,
    full: Arc<dyn ToolSource>,
    /// For agents at the depth limit: everything but `spawn_agent`.
    leaf: Arc<dyn ToolSource>,
}

#[derive(Default)]
pub(super) struct Registry {
    pub(super) nodes: HashMap<ThreadId, Node>,
    /// By root thread.
    pub(super) trees: HashMap<ThreadId, Tree>,
}

pub(super) struct Node {
    pub(super) root: ThreadId,
    /// `None` for a root.
    pub(super) parent: Option<ThreadId>,
    pub(super) depth: u32,
    pub(super) nickname: Option<String>,
    pub(super) role: Option<String>,
    pub(super) last_task: String,
    pub(super) state: AgentState,
    /// Not closed: counts toward `max_threads` and is resumed with its parent.
    pub(super) open: bool,
    /// A turn of it runs, as its events say.
    running: bool,
    /// Mail was handed to it while idle and the turn it starts has not begun yet.
    inflight: bool,
    /// What its `wait_agent` waits on right now.
    pub(super) waiting_on: Option<HashSet<ThreadId>>,
    /// Its wait is subtracted from the tree's running turns.
    waiting_counted: bool,
}

impl Node {
    pub(super) fn new(root: ThreadId, parent: Option<ThreadId>, depth: u32) -> Self {
        Node {
            root,
            parent,
            depth,
            nickname: None,
            role: None,
            last_task: String::new(),
            state: AgentState::PendingInit,
            open: true,
            running: false,
            inflight: false,
            waiting_on: None,
            waiting_counted: false,
        }
    }
}

#[derive(Default)]
pub(super) struct Tree {
    /// Sub-agent turns running; of those, `waiting` are blocked in `wait_agent`.
    running: usize,
    waiting: usize,
    /// Turns handed out and not started yet.
    inflight: usize,
    queue: VecDeque<Mail>,
    /// Agents spawned so far (nicknames are handed out in order).
    pub(super) spawned: usize,
    pub(super) tokens: u64,
    pub(super) budget_spent: bool,
}

impl Tree {
    fn busy(&self) -> usize {
        (self.running + self.inflight).saturating_sub(self.waiting)
    }

    pub(super) fn nickname(&mut self) -> String {
        let n = self.spawned;
        self.spawned += 1;
        let name = NICKNAMES[n % NICKNAMES.len()];
        match n / NICKNAMES.len() {
            0 => name.to_owned(),
            round => format!("{name} {}", round + 1),
        }
    }
}

/// Input for another thread of the tree.
pub(super) struct Mail {
    pub(super) id: SubmissionId,
    pub(super) from: ThreadId,
    pub(super) to: ThreadId,
    pub(super) items: Vec<InputPart>,
}

/// What a change in the registry asks to be done outside its lock.
#[derive(Default)]
pub(super) struct FollowUp {
    changed: bool,
    pub(super) mail: Vec<Mail>,
    interrupt: Vec<ThreadId>,
    /// Threads whose open descendants shut down (their parent did).
    shut_down_below: Vec<ThreadId>,
}

impl AgentControl {
    pub fn new(config: AgentsConfig) -> Arc<Self> {
        Arc::new_cyclic(|weak: &Weak<AgentControl>| {
            let (full, leaf) = agent_tools(weak);
            AgentControl {
                config,
                manager: OnceLock::new(),
                registry: Mutex::default(),
                changed: Notify::new(),
                full: Arc::new(StaticTools::new(full)),
                leaf: Arc::new(StaticTools::new(leaf)),
            }
        })
    }

    pub fn config(&self) -> &AgentsConfig {
        &self.config
    }

    pub(crate) fn attach(&self, manager: Weak<ThreadManager>) {
        let _ = self.manager.set(manager);
    }

    /// The tools a thread at `depth` is offered.
    pub(crate) fn tool_source(&self, depth: u32) -> Arc<dyn ToolSource> {
        if depth >= self.config.max_depth {
            Arc::clone(&self.leaf)
        } else {
            Arc::clone(&self.full)
        }
    }

    pub(super) fn manager(&self) -> Result<Arc<ThreadManager>, String> {
        self.manager
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| "sub-agents are unavailable: the thread manager is gone".to_owned())
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

    /// Make `thread` known as a root (the first time it spawns), watching its events.
    pub(super) fn ensure_registered(self: &Arc<Self>, thread: ThreadId) -> Result<(), String> {
        if self.lock().nodes.contains_key(&thread) {
            return Ok(());
        }
        let handle = self
            .manager()?
            .get(thread)
            .ok_or_else(|| format!("thread {thread} is not loaded"))?;
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
        if !follow.mail.is_empty() {
            let control = Arc::clone(self);
            tokio::spawn(async move {
                for mail in follow.mail {
                    control.submit_mail(mail).await;
                }
            });
        }
        for id in follow.interrupt {
            let control = Arc::clone(self);
            tokio::spawn(async move {
                if let Some(handle) = control.manager().ok().and_then(|m| m.get(id)) {
                    let _ = handle.submit(Op::Interrupt).await;
                }
            });
        }
        for id in follow.shut_down_below {
            let control = Arc::clone(self);
            tokio::spawn(async move { control.end_subtree(id, false, false).await });
        }
    }

    /// Hand `mail` to its thread's loop, then settle the capacity it was given.
    async fn submit_mail(self: &Arc<Self>, mail: Mail) {
        let handle = self.manager().ok().and_then(|m| m.get(mail.to));
        let outcome = match handle {
            Some(handle) => handle
                .submit_with_id(
                    mail.id,
                    Op::AgentMail {
                        from: mail.from,
                        items: mail.items,
                    },
                )
                .await
                .ok(),
            None => None,
        };
        let follow = {
            let mut reg = self.lock();
            reg.delivered(mail.to, outcome, &self.config)
        };
        self.follow_up(follow);
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

/// A restored thread's state as the model reads it: what its last turn came to (the
/// shutdown that ended its earlier life is not its status now that it is loaded again).
pub(super) fn state_from(state: &ThreadState) -> AgentState {
    use crate::thread::state::TurnStatus;
    let Some(last) = state.turns.last() else {
        return AgentState::PendingInit;
    };
    match last.status {
        TurnStatus::Running => AgentState::Running,
        TurnStatus::Completed => {
            AgentState::Completed(state.last_agent_message().map(str::to_owned))
        }
        TurnStatus::Aborted(_) => AgentState::Interrupted,
        TurnStatus::Failed => AgentState::Errored(
            last.failure
                .as_ref()
                .map_or_else(|| "the last turn failed".to_owned(), |f| f.message.clone()),
        ),
    }
}

impl Registry {
    /// Fold one event of `id` into the registry.
    fn observe(&mut self, id: ThreadId, msg: &EventMsg, config: &AgentsConfig) -> FollowUp {
        let mut f = FollowUp::default();
        let Some(node) = self.nodes.get_mut(&id) else {
            return f;
        };
        let root = node.root;
        let child = node.parent.is_some();
        match msg {
            EventMsg::TurnStarted { .. } if child => {
                node.state = AgentState::Running;
                f.changed = true;
                let was_inflight = std::mem::take(&mut node.inflight);
                let was_running = std::mem::replace(&mut node.running, true);
                let tree = self.trees.entry(root).or_default();
                if was_inflight {
                    tree.inflight = tree.inflight.saturating_sub(1);
                }
                if !was_running {
                    tree.running += 1;
                }
            }
            EventMsg::TurnCompleted { last_agent_message } => self.turn_ended(
                id,
                AgentState::Completed(last_agent_message.clone()),
                &mut f,
            ),
            EventMsg::TurnFailed { message, .. } => {
                self.turn_ended(id, AgentState::Errored(message.clone()), &mut f)
            }
            EventMsg::TurnAborted { .. } => {
                self.turn_ended(id, AgentState::Interrupted, &mut f);
                // The interrupt cascades: running descendants stop, queued work for them
                // is dropped.
                let mut below = Vec::new();
                self.post_order(id, &mut below);
                below.retain(|t| *t != id);
                let below: HashSet<ThreadId> = below.into_iter().collect();
                for t in &below {
                    if let Some(n) = self.nodes.get(t) {
                        if n.open && n.running && n.parent == Some(id) {
                            f.interrupt.push(*t);
                        }
                    }
                }
                if let Some(tree) = self.trees.get_mut(&root) {
                    tree.queue.retain(|m| !below.contains(&m.to));
                }
            }
            EventMsg::TokenCount { last, .. } => {
                let tree = self.trees.entry(root).or_default();
                tree.tokens += last.total_tokens;
                if let Some(max) = config.max_tree_tokens {
                    if tree.tokens >= max && !tree.budget_spent {
                        tree.budget_spent = true;
                        tree.queue.clear();
                        f.interrupt.extend(
                            self.nodes
                                .iter()
                                .filter(|(_, n)| n.root == root && n.parent.is_some() && n.running)
                                .map(|(t, _)| *t),
                        );
                    }
                }
            }
            EventMsg::ShutdownComplete => {
                if child {
                    self.turn_ended(id, AgentState::Shutdown, &mut f);
                    if let Some(n) = self.nodes.get_mut(&id) {
                        n.state = AgentState::Shutdown;
                    }
                }
                f.changed = true;
                f.shut_down_below.push(id);
            }
            _ => {}
        }
        f.mail.extend(self.take_ready(root, config));
        f
    }

    /// A turn of `id` ended (or the thread did) with `state`.
    fn turn_ended(&mut self, id: ThreadId, state: AgentState, f: &mut FollowUp) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        let Some(parent) = node.parent else {
            return;
        };
        let root = node.root;
        let was_running = std::mem::take(&mut node.running);
        let was_counted = std::mem::take(&mut node.waiting_counted);
        let report =
            node.open && matches!(state, AgentState::Completed(_) | AgentState::Errored(_));
        let nickname = node.nickname.clone();
        node.state = state.clone();
        f.changed = true;
        let tree = self.trees.entry(root).or_default();
        if was_running {
            tree.running = tree.running.saturating_sub(1);
        }
        if was_counted {
            tree.waiting = tree.waiting.saturating_sub(1);
        }
        if !report {
            return;
        }
        // A wait of the parent on this child takes the result; otherwise it is mail, which
        // wakes an idle parent.
        let taken = self
            .nodes
            .get(&parent)
            .and_then(|p| p.waiting_on.as_ref())
            .is_some_and(|targets| targets.contains(&id));
        if !taken {
            let mail = Mail {
                id: SubmissionId::new(),
                from: id,
                to: parent,
                items: vec![InputPart::text(result_mail(
                    id,
                    nickname.as_deref(),
                    &state,
                ))],
            };
            if let Some(now) = self.route_one(mail) {
                f.mail.push(now);
            }
        }
    }

    /// Route mail: to a root or a running thread at once; to an idle sub-agent through
    /// the tree's queue.
    pub(super) fn route(&mut self, mail: Mail, config: &AgentsConfig) -> FollowUp {
        let mut f = FollowUp::default();
        let root = self.nodes.get(&mail.to).map(|n| n.root);
        if let Some(now) = self.route_one(mail) {
            f.mail.push(now);
        }
        if let Some(root) = root {
            f.mail.extend(self.take_ready(root, config));
        }
        f
    }

    fn route_one(&mut self, mail: Mail) -> Option<Mail> {
        let Some(node) = self.nodes.get_mut(&mail.to) else {
            return Some(mail); // not a tree member: its loop answers
        };
        if node.parent.is_none() || node.running {
            return Some(mail);
        }
        node.state = AgentState::PendingInit;
        let root = node.root;
        self.trees.entry(root).or_default().queue.push_back(mail);
        None
    }

    /// Queued mail the tree has room for now: mail to an agent that runs by now goes at
    /// once (it steers); mail that starts a turn takes capacity.
    fn take_ready(&mut self, root: ThreadId, config: &AgentsConfig) -> Vec<Mail> {
        let max = config.max_concurrent_turns.unwrap_or(usize::MAX).max(1);
        let Some(tree) = self.trees.get_mut(&root) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut i = 0;
        while i < tree.queue.len() {
            let to = tree.queue[i].to;
            match self.nodes.get_mut(&to) {
                None => {
                    tree.queue.remove(i);
                }
                Some(n) if !n.open => {
                    tree.queue.remove(i);
                }
                Some(n) if n.running => out.extend(tree.queue.remove(i)),
                Some(n) if n.inflight => i += 1,
                Some(n) => {
                    if tree.busy() >= max {
                        i += 1;
                        continue;
                    }
                    n.inflight = true;
                    tree.inflight += 1;
                    out.extend(tree.queue.remove(i));
                }
            }
        }
        out
    }

    /// The loop's answer to mail for `to`: a turn it did not start gives its capacity back.
    fn delivered(
        &mut self,
        to: ThreadId,
        outcome: Option<OpResult>,
        config: &AgentsConfig,
    ) -> FollowUp {
        let mut f = FollowUp::default();
        let Some(node) = self.nodes.get_mut(&to) else {
            return f;
        };
        let root = node.root;
        let started = matches!(outcome, Some(OpResult::Input(InputOutcome::Started { .. })));
        if !started && node.inflight {
            node.inflight = false;
            if let Some(tree) = self.trees.get_mut(&root) {
                tree.inflight = tree.inflight.saturating_sub(1);
            }
            match &outcome {
                None => {
                    node.state = AgentState::NotFound;
                    f.changed = true;
                }
                Some(OpResult::Input(InputOutcome::Rejected { reason })) => {
                    node.state =
                        AgentState::Errored(format!("the input was not accepted: {reason}"));
                    f.changed = true;
                }
                _ => {}
            }
        }
        f.mail.extend(self.take_ready(root, config));
        f
    }

    fn set_waiting(
        &mut self,
        waiter: ThreadId,
        targets: Option<HashSet<ThreadId>>,
        config: &AgentsConfig,
    ) -> FollowUp {
        let mut f = FollowUp::default();
        let Some(node) = self.nodes.get_mut(&waiter) else {
            return f;
        };
        let root = node.root;
        let counted = targets.is_some() && node.running && node.parent.is_some();
        let was_counted = std::mem::replace(&mut node.waiting_counted, counted);
        node.waiting_on = targets;
        if let Some(tree) = self.trees.get_mut(&root) {
            if counted && !was_counted {
                tree.waiting += 1;
            } else if !counted && was_counted {
                tree.waiting = tree.waiting.saturating_sub(1);
            }
        }
        f.mail.extend(self.take_ready(root, config));
        f
    }

    /// `id`'s descendants (and `id`), children before their parents.
    pub(super) fn post_order(&self, id: ThreadId, out: &mut Vec<ThreadId>) {
        let mut children: Vec<ThreadId> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.parent == Some(id))
            .map(|(t, _)| *t)
            .collect();
        children.sort();
        for child in children {
            self.post_order(child, out);
        }
        out.push(id);
    }

    /// Open sub-agents of the tree.
    pub(super) fn open_agents(&self, root: ThreadId) -> usize {
        self.nodes
            .values()
            .filter(|n| n.root == root && n.parent.is_some() && n.open)
            .count()
    }
}
