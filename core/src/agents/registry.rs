//! The registry of agent trees: who is whose child, each agent's state as its events say
//! (folded here, never set by hand), the tree's running sub-agent turns and its capacity
//! queue (mail that would start a turn on an idle sub-agent waits while the tree is at
//! `max_concurrent_turns`), and what an event asks to be done next ([`FollowUp`]).

use std::collections::{HashMap, HashSet, VecDeque};

use rein_protocol::{EventMsg, InputOutcome, InputPart, OpResult, SubmissionId, ThreadId};

use super::delivery::Delivery;
use super::state::AgentState;
use super::AgentsConfig;
use crate::thread::state::ThreadState;

/// Nicknames handed out in order within a tree (then again with a number).
const NICKNAMES: &[&str] = &[
    "Ada", "Babbage", "Curie", "Darwin", "Euler", "Faraday", "Gauss", "Hopper", "Ising", "Joule",
    "Kepler", "Lovelace", "Meitner", "Noether", "Ohm", "Pascal", "Quine", "Riemann", "Shannon",
    "Turing", "Volta", "Wiles", "Yalow", "Zuse",
];

#[derive(Default)]
pub(super) struct Registry {
    pub(super) nodes: HashMap<ThreadId, Node>,
    /// By root thread.
    pub(super) trees: HashMap<ThreadId, Tree>,
    /// Result mail a wait claimed before it reached its loop: it is not handed over.
    pub(super) claimed: HashSet<SubmissionId>,
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
    pub(super) running: bool,
    /// Mail was handed to it while idle and the turn it starts has not begun yet.
    pub(super) inflight: bool,
    /// What its `wait_agent` waits on right now.
    pub(super) waiting_on: Option<HashSet<ThreadId>>,
    /// Its wait is subtracted from the tree's running turns.
    pub(super) waiting_counted: bool,
    /// Where its last result stands with its parent.
    pub(super) delivery: Delivery,
    /// It runs a task-graph node: its result is a fact of the graph, not mail.
    pub(super) graph: bool,
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
            delivery: Delivery::Nothing,
            graph: false,
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
    pub(super) queue: VecDeque<Mail>,
    /// Queued mail whose hold (`Op::HoldMail`) is not recorded yet: not released before.
    holding: HashSet<SubmissionId>,
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
#[derive(Clone)]
pub(super) struct Mail {
    pub(super) id: SubmissionId,
    pub(super) from: ThreadId,
    pub(super) to: ThreadId,
    pub(super) items: Vec<InputPart>,
}

/// What a change in the registry asks to be done outside its lock.
#[derive(Default)]
pub(super) struct FollowUp {
    pub(super) changed: bool,
    pub(super) mail: Vec<Mail>,
    /// Mail queued for capacity, to be recorded in its receiver's rollout (`HoldMail`).
    pub(super) hold: Vec<Mail>,
    /// Mail dropped from the queue, by receiver: recorded as taken there (`DropMail`).
    pub(super) drop: Vec<(ThreadId, SubmissionId)>,
    pub(super) interrupt: Vec<ThreadId>,
    /// Running turns stopped because the tree's budget is spent.
    pub(super) budget_stop: Vec<ThreadId>,
    /// Threads whose open descendants shut down (their parent did).
    pub(super) shut_down_below: Vec<ThreadId>,
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
    pub(super) fn observe(
        &mut self,
        id: ThreadId,
        msg: &EventMsg,
        config: &AgentsConfig,
    ) -> FollowUp {
        let mut f = FollowUp::default();
        // A result a wait held and did not take yet is not overwritten by what comes next.
        if matches!(
            msg,
            EventMsg::TurnStarted { .. } | EventMsg::ShutdownComplete
        ) {
            self.flush_held(id, &mut f);
        }
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
                self.cascade_interrupt(id, root, &mut f);
            }
            EventMsg::TokenCount { last, .. } => {
                self.spend(root, last.total_tokens, config, &mut f)
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

    /// The interrupt of `id` cascades: its running children stop, and queued mail for any
    /// agent below it is dropped.
    fn cascade_interrupt(&mut self, id: ThreadId, root: ThreadId, f: &mut FollowUp) {
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
            let (gone, kept) = tree.queue.drain(..).partition(|m| below.contains(&m.to));
            tree.queue = kept;
            f.drop.extend(gone.iter().map(|m: &Mail| (m.to, m.id)));
        }
    }

    /// `tokens` more spent by `root`'s tree; past `max_tree_tokens` its queued mail is
    /// dropped and its running sub-agents stopped, once.
    fn spend(&mut self, root: ThreadId, tokens: u64, config: &AgentsConfig, f: &mut FollowUp) {
        let tree = self.trees.entry(root).or_default();
        tree.tokens += tokens;
        let Some(max) = config.max_tree_tokens else {
            return;
        };
        if tree.tokens >= max && !tree.budget_spent {
            tree.budget_spent = true;
            f.drop.extend(tree.queue.drain(..).map(|m| (m.to, m.id)));
            f.budget_stop.extend(
                self.nodes
                    .iter()
                    .filter(|(_, n)| n.root == root && n.parent.is_some() && n.running)
                    .map(|(t, _)| *t),
            );
        }
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
        let report = node.open
            && !node.graph
            && matches!(state, AgentState::Completed(_) | AgentState::Errored(_));
        let nickname = node.nickname.clone();
        node.state = state.clone();
        node.delivery = if report {
            Delivery::Delivered
        } else {
            Delivery::Nothing
        };
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
        // A wait of the parent on this child takes the result (it is held for the wait's
        // answer, see `finish_wait`); otherwise it is mail, which wakes an idle parent.
        let taken = self
            .nodes
            .get(&parent)
            .and_then(|p| p.waiting_on.as_ref())
            .is_some_and(|targets| targets.contains(&id));
        if taken {
            if let Some(n) = self.nodes.get_mut(&id) {
                n.delivery = Delivery::Held;
            }
        } else {
            self.mail_result(id, parent, nickname.as_deref(), &state, f);
        }
    }

    /// Route mail: to a root or a running thread at once; to an idle sub-agent through
    /// the tree's queue.
    pub(super) fn route(&mut self, mail: Mail, config: &AgentsConfig) -> FollowUp {
        let mut f = FollowUp::default();
        let root = self.nodes.get(&mail.to).map(|n| n.root);
        self.route_one(mail, &mut f);
        if let Some(root) = root {
            f.mail.extend(self.take_ready(root, config));
        }
        f
    }

    /// Mail that goes at once into `f.mail`; mail that waits for capacity into the queue,
    /// held there until its receiver's rollout records it (`f.hold`).
    pub(super) fn route_one(&mut self, mail: Mail, f: &mut FollowUp) {
        let Some(node) = self.nodes.get_mut(&mail.to) else {
            return f.mail.push(mail); // not a tree member: its loop answers
        };
        if node.parent.is_none() || node.running {
            return f.mail.push(mail);
        }
        node.state = AgentState::PendingInit;
        let root = node.root;
        let tree = self.trees.entry(root).or_default();
        tree.holding.insert(mail.id);
        f.hold.push(mail.clone());
        tree.queue.push_back(mail);
    }

    /// The hold of queued mail `id` for `to` is recorded: it may go once there is room.
    /// Mail dropped from the queue meanwhile is recorded as dropped too.
    pub(super) fn hold_recorded(
        &mut self,
        to: ThreadId,
        id: SubmissionId,
        config: &AgentsConfig,
    ) -> FollowUp {
        let mut f = FollowUp::default();
        let Some(root) = self.nodes.get(&to).map(|n| n.root) else {
            return f;
        };
        let Some(tree) = self.trees.get_mut(&root) else {
            return f;
        };
        tree.holding.remove(&id);
        if !tree.queue.iter().any(|m| m.id == id) {
            f.drop.push((to, id));
        }
        f.mail.extend(self.take_ready(root, config));
        f
    }

    /// Queued mail the tree has room for now: mail to an agent that runs by now goes at
    /// once (it steers); mail that starts a turn takes capacity.
    pub(super) fn take_ready(&mut self, root: ThreadId, config: &AgentsConfig) -> Vec<Mail> {
        let max = config.max_concurrent_turns.unwrap_or(usize::MAX).max(1);
        let Some(tree) = self.trees.get_mut(&root) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut i = 0;
        while i < tree.queue.len() {
            let to = tree.queue[i].to;
            if tree.holding.contains(&tree.queue[i].id) {
                i += 1;
                continue;
            }
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
    pub(super) fn delivered(
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

    pub(super) fn set_waiting(
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
        f.changed = true;
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

#[cfg(test)]
mod tests {
    //! The capacity queue's holds, by hand: queued mail is not released before its hold
    //! is recorded, and mail dropped from the queue is recorded as dropped.
    use pretty_assertions::assert_eq;
    use rein_protocol::TurnAbortReason;

    use super::*;

    /// A root with one running child `busy` and an idle child `idle`, one slot.
    fn full_tree() -> (Registry, AgentsConfig, ThreadId, ThreadId, ThreadId) {
        let mut reg = Registry::default();
        let config = AgentsConfig {
            max_concurrent_turns: Some(1),
            ..AgentsConfig::default()
        };
        let (root, busy, idle) = (ThreadId::new(), ThreadId::new(), ThreadId::new());
        reg.nodes.insert(root, Node::new(root, None, 0));
        reg.nodes.insert(busy, Node::new(root, Some(root), 1));
        reg.nodes.insert(idle, Node::new(root, Some(root), 1));
        if let Some(n) = reg.nodes.get_mut(&busy) {
            n.running = true;
        }
        reg.trees.entry(root).or_default().running = 1;
        (reg, config, root, busy, idle)
    }

    fn mail(from: ThreadId, to: ThreadId) -> Mail {
        Mail {
            id: SubmissionId::new(),
            from,
            to,
            items: vec![InputPart::text("task")],
        }
    }

    fn ids(mail: &[Mail]) -> Vec<SubmissionId> {
        mail.iter().map(|m| m.id).collect()
    }

    #[test]
    fn queued_mail_waits_for_its_hold_then_for_capacity() {
        let (mut reg, config, root, busy, idle) = full_tree();
        let m = mail(root, idle);
        let f = reg.route(m.clone(), &config);
        assert_eq!((ids(&f.mail), ids(&f.hold)), (Vec::new(), vec![m.id]));
        // Capacity comes before the hold is recorded: the mail stays queued.
        let f = reg.observe(
            busy,
            &EventMsg::TurnCompleted {
                last_agent_message: None,
            },
            &config,
        );
        assert_eq!(f.mail.iter().filter(|x| x.to == idle).count(), 0);
        let f = reg.hold_recorded(idle, m.id, &config);
        assert_eq!((ids(&f.mail), f.drop), (vec![m.id], Vec::new()));
    }

    #[test]
    fn mail_dropped_from_the_queue_is_recorded_as_dropped() {
        let (mut reg, config, root, _busy, idle) = full_tree();
        let m = mail(root, idle);
        reg.route(m.clone(), &config);
        reg.hold_recorded(idle, m.id, &config);
        // The root's turn is interrupted: the cascade drops its children's queued mail.
        let f = reg.observe(
            root,
            &EventMsg::TurnAborted {
                reason: TurnAbortReason::Interrupted,
            },
            &config,
        );
        assert_eq!(f.drop, vec![(idle, m.id)]);
        // A hold recorded after its mail was dropped is dropped too.
        let late = mail(root, idle);
        reg.route(late.clone(), &config);
        let f = reg.observe(
            root,
            &EventMsg::TurnAborted {
                reason: TurnAbortReason::Interrupted,
            },
            &config,
        );
        assert_eq!(f.drop, vec![(idle, late.id)]);
        let f = reg.hold_recorded(idle, late.id, &config);
        assert_eq!((ids(&f.mail), f.drop), (Vec::new(), vec![(idle, late.id)]));
    }
}
