//! `spawn_agent`: a child thread of the caller's tree, its settings narrowed from the
//! parent's, recorded in the parent before it exists (write-ahead), then given its task.

use std::sync::Arc;

use rein_protocol::{
    check_objective, AgentOrigin, GoalBudget, GoalChange, GoalError, GoalOrigin, GoalStatus,
    InputPart, Item, Op, OpResult, ReasoningEffort, SessionId, SubmissionId, ThreadId,
    ThreadSettings,
};
use serde::Serialize;

use super::error::AgentError;
use super::ops::task_text;
use super::registry::{Mail, Node};
use super::AgentControl;
use crate::goal::{GoalReply, GoalRequest};
use crate::manager::{SpawnedAgent, ThreadManager, ThreadOptions, ThreadOrigin};
use crate::store::SessionMeta;
use crate::tools::{AgentEdge, ToolContext};

/// `spawn_agent`'s answer.
#[derive(Debug, Serialize)]
pub(super) struct Spawned {
    pub agent_id: ThreadId,
    pub nickname: String,
}

pub(super) struct SpawnRequest {
    pub items: Vec<InputPart>,
    pub role: Option<String>,
    pub model: Option<String>,
    pub reasoning_effort: Option<ReasoningEffort>,
    pub fork_context: bool,
    pub goal: Option<ChildGoal>,
}

/// The goal a sub-agent is spawned with: the budget it asks, before the parent's goal
/// carves it.
pub(super) struct ChildGoal {
    pub objective: String,
    pub budget: GoalBudget,
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

    pub(super) async fn spawn(
        self: &Arc<Self>,
        ctx: &ToolContext,
        req: SpawnRequest,
    ) -> Result<Spawned, AgentError> {
        let manager = self.manager()?;
        let parent = ctx.thread_id;
        self.ensure_registered(parent)?;
        let settings = self.child_settings(&ctx.settings, &req)?;
        if let Some(goal) = &req.goal {
            check_objective(&goal.objective).map_err(AgentError::Goal)?;
            if manager.store().is_none() {
                return Err(AgentError::Goal(GoalError::Ephemeral));
            }
        }
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
        // The budget is carved once the spawn is allowed, before the child exists: a
        // spawn the parent's goal cannot pay for creates nothing.
        let goal = match &req.goal {
            Some(goal) => match carve(ctx, goal).await {
                Ok(change) => Some(change),
                Err(e) => {
                    self.lock().nodes.remove(&child);
                    return Err(e);
                }
            },
            None => None,
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
        if let Some(change) = goal {
            self.set_child_goal(&manager, child, change).await?;
        }
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

    /// Set the child's goal (active; the kernel continues it once the task's turn ends).
    async fn set_child_goal(
        &self,
        manager: &ThreadManager,
        child: ThreadId,
        change: GoalChange,
    ) -> Result<(), AgentError> {
        let handle = manager.get(child).ok_or(AgentError::NotLoaded(child))?;
        match handle.submit(Op::SetGoal { change }).await? {
            OpResult::GoalRefused { error } => Err(AgentError::Goal(error)),
            _ => Ok(()),
        }
    }

    /// Record the edge in the parent, then create the child (its rollout first).
    #[allow(clippy::too_many_arguments)]
    async fn create_child(
        &self,
        ctx: &ToolContext,
        manager: &ThreadManager,
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
            let meta = child_meta(manager, child, session_id, settings, ctx.thread_id);
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
}

/// The child's goal, its budget carved out of the caller's goal (what it asked, at most
/// what is left there; all that is left where it asked nothing).
async fn carve(ctx: &ToolContext, goal: &ChildGoal) -> Result<GoalChange, AgentError> {
    let budget = match ctx.goal(GoalRequest::Carve { asked: goal.budget }).await {
        Some(Ok(GoalReply::Carved(budget))) => budget,
        Some(Err(error)) => return Err(AgentError::Goal(error)),
        // A caller that cannot answer goal requests has no goal to carve from.
        Some(Ok(_)) | None => goal.budget,
    };
    Ok(GoalChange {
        objective: Some(goal.objective.clone()),
        status: Some(GoalStatus::Active),
        budget: Some(budget),
        origin: GoalOrigin::Automatic,
        ..GoalChange::default()
    })
}

/// The first line of the child's rollout: its ids, its parent and where it runs.
fn child_meta(
    manager: &ThreadManager,
    child: ThreadId,
    session_id: SessionId,
    settings: &ThreadSettings,
    parent: ThreadId,
) -> SessionMeta {
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
    meta.parent_thread_id = Some(parent);
    meta
}
