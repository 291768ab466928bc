//! The driver of one root's task graph: one task per root, serial, that records each
//! change in the root's rollout before acting on it, starts ready nodes as sub-agents of
//! their role (within `max_threads` and the tree's budget; `max_concurrent_turns` is kept
//! by the tree's capacity queue), turns their turn ends into outcomes, and reports the
//! settled graph to the waiting `plan_tasks` call or, when none waits, as mail to the root.

use std::sync::Arc;

use rein_protocol::{
    AgentOrigin, EventMsg, InputPart, Op, ReviewVerdict, SessionId, SubmissionId, TaskFailureKind,
    TaskGraphChange, TaskOutcome, TaskState, ThreadId, ToolOutcome, TurnAbortReason,
};

use super::input::{node_input, summary, Summary};
use super::validate::{validate, PlanArgs};
use super::{ChildEnd, GraphRun};
use crate::agents::error::AgentError;
use crate::agents::registry::{Mail, Node};
use crate::agents::AgentControl;
use crate::manager::{SpawnedAgent, ThreadOptions, ThreadOrigin};
use crate::store::SessionMeta;
use crate::thread::state::ThreadState;
use crate::thread::EventStream;
use crate::tools::ToolContext;
use rein_protocol::ThreadSettings;

impl AgentControl {
    /// `plan_tasks`: check the plan against the graph, record it, run the graph, and
    /// answer once nothing more can run.
    pub(in crate::agents) async fn plan(
        self: &Arc<Self>,
        ctx: &ToolContext,
        args: PlanArgs,
    ) -> Result<Summary, AgentError> {
        let root = ctx.thread_id;
        self.ensure_registered(root)?;
        let policy = args.failure_policy;
        let current = {
            let graphs = self.graphs();
            graphs
                .get(&root)
                .map(|g| g.graph.clone())
                .unwrap_or_default()
        };
        let (upsert, remove) = validate(&current, args, &self.role_names())?;
        let change = TaskGraphChange::Planned {
            policy: policy.unwrap_or(current.policy),
            max_review_rounds: self.config.max_review_rounds,
            max_retries: self.config.max_retries,
            upsert,
            remove,
        };
        let new_run = !self.graphs().contains_key(&root);
        if new_run {
            self.graphs().insert(root, GraphRun::new(current));
        }
        self.record(root, change).await?;
        {
            let mut graphs = self.graphs();
            if let Some(run) = graphs.get_mut(&root) {
                run.paused = false;
                run.reported = false;
                run.waiting += 1;
                run.wake.notify_one();
            }
        }
        if new_run {
            self.start_driver(root);
        }
        let outcome = self.wait_settled(ctx, root).await;
        if let Some(run) = self.graphs().get_mut(&root) {
            run.waiting = run.waiting.saturating_sub(1);
        }
        outcome
    }

    async fn wait_settled(
        self: &Arc<Self>,
        ctx: &ToolContext,
        root: ThreadId,
    ) -> Result<Summary, AgentError> {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut graphs = self.graphs();
                if let Some(run) = graphs.get_mut(&root) {
                    if run.reported {
                        return Ok(summary(&run.graph));
                    }
                }
            }
            tokio::select! {
                () = &mut changed => {}
                () = ctx.cancel.cancelled() => return Err(AgentError::PlanInterrupted),
            }
        }
    }

    /// A reviewer's verdict, kept until its turn ends.
    pub(in crate::agents) fn submit_verdict(
        &self,
        thread: ThreadId,
        verdict: ReviewVerdict,
    ) -> Result<(), AgentError> {
        if !verdict.approved && verdict.findings.is_empty() {
            return Err(AgentError::RejectionWithoutFindings);
        }
        let root = self.lock().nodes.get(&thread).map(|n| n.root);
        let mut graphs = self.graphs();
        let run = root
            .and_then(|r| graphs.get_mut(&r))
            .filter(|run| {
                run.graph
                    .node_of_thread(thread)
                    .is_some_and(|n| n.spec.reviews.is_some())
            })
            .ok_or(AgentError::NotAReviewer)?;
        run.verdicts.insert(thread, verdict);
        Ok(())
    }

    /// Record `change` in the root's rollout, then fold it into the driver's copy.
    async fn record(&self, root: ThreadId, change: TaskGraphChange) -> Result<(), AgentError> {
        let handle = self
            .manager()?
            .get(root)
            .ok_or(AgentError::NotLoaded(root))?;
        match handle
            .submit(Op::RecordTaskGraph {
                change: change.clone(),
            })
            .await
        {
            Ok(rein_protocol::OpResult::Accepted) => {}
            _ => return Err(AgentError::GraphNotRecorded),
        }
        let now = now_ms();
        if let Some(run) = self.graphs().get_mut(&root) {
            run.graph.apply(&change, now);
        }
        self.changed.notify_waiters();
        Ok(())
    }

    /// What a tree thread's event means for a graph: a node thread's turn end or patch,
    /// or the root's interrupt (which pauses the graph).
    pub(in crate::agents) fn graph_observe(&self, thread: ThreadId, msg: &EventMsg) {
        let root = {
            let reg = self.lock();
            match reg.nodes.get(&thread) {
                Some(n) if n.graph => n.root,
                Some(n) if n.parent.is_none() => thread,
                _ => return,
            }
        };
        let mut graphs = self.graphs();
        let Some(run) = graphs.get_mut(&root) else {
            return;
        };
        let end = match msg {
            EventMsg::TurnAborted { .. } if thread == root => {
                // The same fold as the root's state: its running nodes are cancelled
                // (their turns are interrupted by the tree's cascade).
                run.graph.cancel_running(event_ms());
                run.paused = true;
                return;
            }
            _ if thread == root => return,
            EventMsg::ToolCallEnd {
                outcome: ToolOutcome::Patched { changes },
                ..
            } => {
                let files = run.files.entry(thread).or_default();
                files.extend(changes.iter().map(|c| c.path.clone()));
                return;
            }
            EventMsg::TurnCompleted { last_agent_message } => {
                ChildEnd::Completed(last_agent_message.clone())
            }
            EventMsg::TurnFailed { message, .. } => ChildEnd::Failed(message.clone()),
            EventMsg::TurnAborted { reason } => ChildEnd::Aborted(*reason),
            EventMsg::ShutdownComplete => ChildEnd::Gone,
            _ => return,
        };
        run.ended.push_back((thread, end));
        run.wake.notify_one();
    }

    pub(super) fn start_driver(self: &Arc<Self>, root: ThreadId) {
        let control = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let Some(this) = control.upgrade() else {
                    return;
                };
                let Some(wake) = this.graphs().get(&root).map(|r| Arc::clone(&r.wake)) else {
                    return;
                };
                let notified = wake.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if this.manager().ok().and_then(|m| m.get(root)).is_none() {
                    this.graphs().remove(&root);
                    return;
                }
                this.drive_once(root).await;
                drop(this);
                notified.await;
            }
        });
    }

    /// One pass: outcomes of ended turns, then starts, then the report.
    async fn drive_once(self: &Arc<Self>, root: ThreadId) {
        loop {
            let next = self
                .graphs()
                .get_mut(&root)
                .and_then(|r| r.ended.pop_front());
            let Some((thread, end)) = next else { break };
            self.finish_node(root, thread, end).await;
        }
        loop {
            let (ready, backoff) = {
                let graphs = self.graphs();
                let Some(run) = graphs.get(&root) else { return };
                if run.paused {
                    (None, None)
                } else {
                    self.startable(run)
                }
            };
            if let Some(at_ms) = backoff {
                self.wake_at(root, at_ms);
            }
            let Some(node) = ready else { break };
            if !self.has_room(root) {
                break;
            }
            if let Err(e) = self.start_node(root, &node).await {
                tracing::warn!(%root, node, "task node not started: {e}");
                let failed = TaskGraphChange::NodeFinished {
                    node_id: node.clone(),
                    outcome: TaskOutcome::Failed {
                        kind: TaskFailureKind::NotStarted,
                        message: e.to_string(),
                    },
                };
                if self.record(root, failed).await.is_err() {
                    return;
                }
            }
        }
        self.report_if_settled(root);
    }

    /// The first ready node that may start now, and when the earliest ready node waiting
    /// out a retry's backoff may (if one does).
    fn startable(&self, run: &GraphRun) -> (Option<String>, Option<u64>) {
        let now = now_ms();
        let mut waiting: Option<u64> = None;
        for id in run.graph.ready() {
            let at = run
                .graph
                .node(&id)
                .and_then(|n| n.retry_at(self.config.retry_backoff_ms));
            match at {
                Some(at) if at > now => waiting = Some(waiting.map_or(at, |w| w.min(at))),
                _ => return (Some(id), None),
            }
        }
        (None, waiting)
    }

    /// Wake the driver of `root` at `at_ms` (a retry's backoff is over).
    fn wake_at(&self, root: ThreadId, at_ms: u64) {
        let Some(wake) = self.graphs().get(&root).map(|r| Arc::clone(&r.wake)) else {
            return;
        };
        let delay = std::time::Duration::from_millis(at_ms.saturating_sub(now_ms()));
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            wake.notify_one();
        });
    }

    fn has_room(&self, root: ThreadId) -> bool {
        let reg = self.lock();
        let spent = reg.trees.get(&root).is_some_and(|t| t.budget_spent);
        !spent && reg.open_agents(root) < self.config.max_threads
    }

    fn report_if_settled(self: &Arc<Self>, root: ThreadId) {
        let mail = {
            let mut graphs = self.graphs();
            let Some(run) = graphs.get_mut(&root) else {
                return;
            };
            let settled =
                run.graph.running().is_empty() && (run.paused || run.graph.ready().is_empty());
            if !settled || run.reported || run.graph.is_empty() {
                return;
            }
            run.reported = true;
            (run.waiting == 0 && !run.paused).then(|| {
                let text = serde_json::to_string(&summary(&run.graph)).unwrap_or_default();
                format!("<task_graph_settled>\n{text}\n</task_graph_settled>")
            })
        };
        self.changed.notify_waiters();
        if let Some(text) = mail {
            self.send(Mail {
                id: SubmissionId::new(),
                from: root,
                to: root,
                items: vec![InputPart::text(text)],
            });
        }
    }

    /// A node thread's turn ended: record the outcome, close the thread.
    async fn finish_node(self: &Arc<Self>, root: ThreadId, thread: ThreadId, end: ChildEnd) {
        let (node_id, outcome) = {
            let mut graphs = self.graphs();
            let Some(run) = graphs.get_mut(&root) else {
                return;
            };
            let Some(node) = run.graph.node_of_thread(thread) else {
                return;
            };
            if node.state != TaskState::Running {
                return;
            }
            let reviewer = node.spec.reviews.is_some();
            let node_id = node.spec.id.clone();
            let outcome = match end {
                ChildEnd::Completed(_) if reviewer => match run.verdicts.remove(&thread) {
                    Some(verdict) => TaskOutcome::Reviewed { verdict },
                    None => failed(
                        TaskFailureKind::NoVerdict,
                        "the reviewer ended without a verdict (submit_review)",
                    ),
                },
                ChildEnd::Completed(answer) => TaskOutcome::Completed {
                    answer,
                    files_changed: run
                        .files
                        .remove(&thread)
                        .map(|f| f.into_iter().collect())
                        .unwrap_or_default(),
                },
                ChildEnd::Failed(message) => failed(TaskFailureKind::TurnFailed, &message),
                ChildEnd::Aborted(TurnAbortReason::BudgetLimited) => {
                    failed(TaskFailureKind::Budget, "the tree's token budget is spent")
                }
                ChildEnd::Aborted(_) => TaskOutcome::Cancelled,
                ChildEnd::Gone => failed(
                    TaskFailureKind::ThreadDied,
                    "the sub-agent's thread ended without an answer",
                ),
            };
            (node_id, outcome)
        };
        let fail_fast = matches!(outcome, TaskOutcome::Failed { .. });
        let change = TaskGraphChange::NodeFinished { node_id, outcome };
        if self.record(root, change).await.is_err() {
            return;
        }
        let control = Arc::clone(self);
        tokio::spawn(async move { control.end_subtree(thread, true, true).await });
        let policy_fail_fast = self
            .graphs()
            .get(&root)
            .is_some_and(|r| r.graph.policy == rein_protocol::FailurePolicy::FailFast);
        if fail_fast && policy_fail_fast {
            self.interrupt_running(root).await;
        }
    }

    async fn interrupt_running(&self, root: ThreadId) {
        let threads: Vec<ThreadId> = {
            let graphs = self.graphs();
            let Some(run) = graphs.get(&root) else { return };
            run.graph
                .nodes
                .iter()
                .filter(|n| n.state == TaskState::Running)
                .filter_map(|n| n.attempts.last().map(|a| a.thread_id))
                .collect()
        };
        let Ok(manager) = self.manager() else { return };
        for t in threads {
            if let Some(h) = manager.get(t) {
                let _ = h.submit(Op::Interrupt).await;
            }
        }
    }

    /// Start an attempt of `node_id`: record it, create its thread, hand it its input.
    async fn start_node(self: &Arc<Self>, root: ThreadId, node_id: &str) -> Result<(), AgentError> {
        let manager = self.manager()?;
        let root_handle = manager.get(root).ok_or(AgentError::NotLoaded(root))?;
        let root_state = root_handle.state().await?;
        let parent = root_state
            .settings
            .clone()
            .ok_or(AgentError::NotRegistered)?;
        let (node, input) = {
            let mut graphs = self.graphs();
            let run = graphs.get_mut(&root).ok_or(AgentError::NotRegistered)?;
            let node = run
                .graph
                .node(node_id)
                .cloned()
                .ok_or(AgentError::NotRegistered)?;
            let previous = run.previous.remove(node_id);
            (
                node.clone(),
                node_input(&run.graph, &node, previous.as_deref()),
            )
        };
        let settings = self.role(&node.spec.role)?.narrow(&parent);
        if settings.model != parent.model {
            manager
                .services()
                .models
                .client(&settings.model)
                .map_err(|_| AgentError::UnknownModel(settings.model.clone()))?;
        }
        let child = ThreadId::new();
        let nickname = {
            let mut reg = self.lock();
            let tree = reg.trees.entry(root).or_default();
            let nickname = tree.nickname();
            let mut n = Node::new(root, Some(root), 1);
            n.nickname = Some(nickname.clone());
            n.role = Some(node.spec.role.clone());
            n.last_task = input.clone();
            n.graph = true;
            reg.nodes.insert(child, n);
            nickname
        };
        let started = TaskGraphChange::NodeStarted {
            node_id: node_id.to_owned(),
            thread_id: child,
        };
        if let Err(e) = self.record(root, started).await {
            self.lock().nodes.remove(&child);
            return Err(e);
        }
        let events = self
            .create_node_thread(
                root,
                child,
                nickname,
                &node.spec.role,
                &settings,
                &root_state,
            )
            .await?;
        self.watch(child, events);
        self.deliver(Mail {
            id: SubmissionId::new(),
            from: root,
            to: child,
            items: vec![InputPart::text(input)],
        })
        .await;
        Ok(())
    }

    /// Create a node's sub-agent thread (its rollout first), as a child of `root`.
    async fn create_node_thread(
        &self,
        root: ThreadId,
        child: ThreadId,
        nickname: String,
        role: &str,
        settings: &ThreadSettings,
        root_state: &ThreadState,
    ) -> Result<EventStream, AgentError> {
        let manager = self.manager()?;
        let mut options = ThreadOptions::new(settings.clone())
            .with_origin(ThreadOrigin::Spawned { parent: root });
        options.thread_id = Some(child);
        if let Some(context) = root_state.context.clone() {
            options = options.with_context(context, Vec::new());
        }
        let session_id = SessionId::from(root);
        options.agent = Some(SpawnedAgent {
            origin: AgentOrigin {
                parent_thread_id: root,
                depth: 1,
                nickname: Some(nickname),
                role: Some(role.to_owned()),
            },
            session_id,
            history: Vec::new(),
        });
        if let Some(store) = manager.store() {
            let mut meta = SessionMeta::new(
                child,
                session_id,
                settings.cwd.clone(),
                settings.model.clone(),
                "graph".to_owned(),
            );
            meta.parent_thread_id = Some(root);
            let created = store
                .create(meta)
                .await
                .map_err(AgentError::CreateRollout)?;
            options = options.with_recorder(created.recorder);
        }
        let new = manager.create_thread(options).map_err(AgentError::Start)?;
        Ok(new.events)
    }
}

fn failed(kind: TaskFailureKind, message: &str) -> TaskOutcome {
    TaskOutcome::Failed {
        kind,
        message: message.to_owned(),
    }
}

fn event_ms() -> u64 {
    now_ms()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
