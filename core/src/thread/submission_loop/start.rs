//! Opening a turn: capture its context (settings, model, fallback, tools), emit
//! `TurnStarted`, and spawn its task with a fresh cancellation token and run id.

use std::future::Future;
use std::sync::Arc;

use rein_protocol::{
    CompactionTrigger, EventMsg, Item, ItemId, RejectReason, ReviewTarget, TaskKind, TurnId,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::{RunningTurn, SubmissionLoop};
use crate::model::ModelClient;
use crate::thread::open_items::OpenItems;
use crate::turn::advisor::Advisor;
use crate::turn::compact::{CompactTask, Compaction};
use crate::turn::pending::{mail_ids, PendingEntry, PendingInput};
use crate::turn::review::{review_request, review_settings};
use crate::turn::sink::TurnSink;
use crate::turn::task::{AutoCompaction, RegularTask};
use crate::turn::tokens::estimate;
use crate::turn::tool_hooks::{HookScope, SessionSource};
use crate::turn::user_shell::UserShellTask;
use crate::turn::vision::Vision;
use crate::turn::{Fallback, TaskOutcome, TurnContext};
use rein_protocol::advisor::AdvisorMode;

/// Tools whose only job is to change files, which a review turn is not offered.
const EDIT_TOOLS: &[&str] = &["apply_patch"];
/// What a thread with memory disabled is not offered.
const MEMORY_TOOLS: &[&str] = &[crate::memory::tool::REMEMBER];
/// A review's withheld tools in a thread with memory disabled.
const EDIT_AND_MEMORY_TOOLS: &[&str] = &["apply_patch", crate::memory::tool::REMEMBER];

/// A turn whose opening events are out, ready for its task.
struct OpenedTurn {
    context: TurnContext,
    sink: TurnSink,
    cancel: CancellationToken,
    deadline: Option<Instant>,
}

/// A turn's model, its fallback and how it takes images.
type TurnModels = (Arc<dyn ModelClient>, Option<Fallback>, Vision);

impl SubmissionLoop {
    /// Steers that arrived after the task's last look are never dropped: they start the
    /// next turn, under the id of the first of them.
    pub(super) fn start_leftover_turn(&mut self) {
        let leftovers = self.pending.take_all();
        let Some(first) = leftovers.first() else {
            return;
        };
        let turn_id = if first.mail {
            super::mail::mail_turn_id()
        } else {
            TurnId::from(first.submission)
        };
        if let Err(reason) = self.start_turn(turn_id, leftovers, false, None) {
            self.emit(
                None,
                EventMsg::Warning {
                    message: format!("queued input could not start a turn: {reason}"),
                },
            );
        }
    }

    /// What the user's hooks are told about this turn. The first regular turn of the
    /// thread in this process runs its `SessionStart` hooks; the scope is kept for the
    /// thread's `SessionEnd`.
    fn hook_scope(
        &mut self,
        turn_id: TurnId,
        kind: TaskKind,
        settings: &rein_protocol::ThreadSettings,
    ) -> Option<HookScope> {
        let hooks = self.services.hooks.clone()?;
        let first = kind == TaskKind::Regular && self.session_hooks.is_none();
        let scope = HookScope {
            hooks,
            thread_id: self.thread_id,
            turn_id,
            cwd: settings.cwd.clone(),
            model: settings.model.clone(),
            permission_mode: settings.approval_policy.as_str().to_owned(),
            agent: self.state.agent.clone(),
            session_start: first.then_some(if self.state.turns.is_empty() {
                SessionSource::Startup
            } else {
                SessionSource::Resume
            }),
        };
        if kind == TaskKind::Regular {
            self.session_hooks = Some(HookScope {
                session_start: None,
                ..scope.clone()
            });
        }
        Some(scope)
    }

    fn open_turn(
        &mut self,
        turn_id: TurnId,
        kind: TaskKind,
        recovered: bool,
        output_schema: Option<Arc<serde_json::Value>>,
    ) -> Result<OpenedTurn, RejectReason> {
        let Some(mut settings) = self.state.settings.clone() else {
            return Err(RejectReason::InvalidSettings {
                message: "the thread has no settings".into(),
            });
        };
        if kind == TaskKind::Review {
            settings = review_settings(settings);
        }
        if let Some(model) = self.extraction_model() {
            // An extraction asks its own (cheaper) model; the turn's settings say which.
            settings.model = model;
        }
        let (model, fallback, vision) = self.models_for(&settings.model)?;
        let advisor = self.advisor_for(&settings.model);
        let hooks = self.hook_scope(turn_id, kind, &settings);
        self.emit(
            Some(turn_id),
            EventMsg::TurnStarted {
                kind,
                settings: settings.clone(),
                recovered,
                output_schema: output_schema.as_deref().cloned(),
            },
        );
        let run = self.next_run;
        self.next_run += 1;
        let memory_on = self.state.memory_mode == rein_protocol::ThreadMemoryMode::Enabled;
        let deadline = settings
            .budget
            .max_wall_time_ms
            .map(|ms| Instant::now() + std::time::Duration::from_millis(ms));
        Ok(OpenedTurn {
            context: TurnContext {
                thread_id: self.thread_id,
                turn_id,
                kind,
                settings: Arc::new(settings),
                // A review starts from a clean context: only its request.
                prefix: if kind == TaskKind::Review {
                    Arc::default()
                } else {
                    Arc::clone(&self.state.prefix)
                },
                skills: self
                    .state
                    .context
                    .as_ref()
                    .map(|c| c.skills.as_slice().into())
                    .unwrap_or_default(),
                model,
                fallback,
                vision,
                tools: Arc::clone(&self.tools),
                // A thread with memory disabled neither recalls nor offers `remember`.
                withheld: if memory_on { &[] } else { MEMORY_TOOLS },
                allowed_tools: None,
                parallel_tool_calls: self.services.config.parallel_tool_calls,
                output_schema,
                advisor,
                hooks,
                memory: self.services.memory.clone().filter(|_| memory_on),
            },
            sink: TurnSink::new(run, turn_id, self.task_tx.clone()),
            cancel: CancellationToken::new(),
            deadline,
        })
    }

    /// The turn's model, its fallback (if the catalog names one it has a client for) and
    /// how it takes images.
    fn models_for(&self, name: &str) -> Result<TurnModels, RejectReason> {
        let models = &self.services.models;
        let model = models
            .client(name)
            .map_err(|e| RejectReason::InvalidSettings {
                message: e.to_string(),
            })?;
        let fallback = models.fallback_for(name).and_then(|model| {
            let client = models.client(&model).ok()?;
            Some(Fallback { model, client })
        });
        Ok((model, fallback, Vision::for_model(models.as_ref(), name)))
    }

    /// The turn's advisor, if `[advisor]` asks for one: its profile's model, else the
    /// thread's. A model the catalog does not know fails open at each review.
    fn advisor_for(&self, thread_model: &str) -> Option<Arc<Advisor>> {
        let config = &self.services.config.advisor;
        if config.mode == AdvisorMode::Off {
            return None;
        }
        let model_name = config
            .model
            .as_ref()
            .map_or_else(|| thread_model.to_owned(), |(model, _)| model.clone());
        let client = self
            .services
            .models
            .client(&model_name)
            .map_err(|e| e.to_string());
        Some(Arc::new(Advisor {
            mode: config.mode,
            model_name,
            client,
            timeout: config.timeout,
        }))
    }

    fn spawn(
        &mut self,
        opened: OpenedTurn,
        task: impl Future<Output = TaskOutcome> + Send + 'static,
    ) {
        let sink = opened.sink.clone();
        let handle = AbortOnDropHandle::new(tokio::spawn(async move {
            let outcome = task.await;
            sink.finished(outcome);
        }));
        self.running = Some(RunningTurn {
            id: opened.context.turn_id,
            run: opened.sink.run,
            cancel: opened.cancel,
            handle,
            deadline: opened.deadline,
            open: OpenItems::default(),
            diff: String::new(),
        });
    }

    /// The context size now: the last report, or an estimate when there is none.
    pub(super) fn context_tokens(&self) -> u64 {
        match self.state.context_tokens {
            0 => estimate(&self.state.history),
            n => n,
        }
    }

    /// Start a regular turn with `inputs` as its first user messages; a skill they attach
    /// that allows only some tools narrows the turn's tools to those.
    pub(super) fn start_turn(
        &mut self,
        turn_id: TurnId,
        inputs: Vec<PendingEntry>,
        recovered: bool,
        output_schema: Option<Arc<serde_json::Value>>,
    ) -> Result<(), RejectReason> {
        let mut opened = self.open_turn(turn_id, TaskKind::Regular, recovered, output_schema)?;
        let turn_input_start = self.state.history.len();
        if self.open_goal_turn(turn_id) {
            // The goal's wrap-up: an answer, no more work.
            opened.context.withheld = crate::turn::ALL_TOOLS;
        }
        opened.context.allowed_tools = if self.open_extraction_turn(turn_id) {
            // A memory extraction proposes memories, nothing else (its input attaches no
            // skill).
            Some(MEMORY_TOOLS.iter().map(|t| (*t).to_owned()).collect())
        } else {
            skills_allowed_tools(&inputs)
        };
        let mut mail = mail_ids(&inputs);
        mail.retain(|id| {
            self.state
                .pending_mail
                .iter()
                .any(|m| m.submission_id == *id)
        });
        if !mail.is_empty() {
            self.emit(
                Some(turn_id),
                EventMsg::MailTaken {
                    submission_ids: mail,
                },
            );
        }
        for entry in inputs {
            self.emit(
                Some(turn_id),
                EventMsg::ItemCompleted {
                    item: Item::UserMessage {
                        id: ItemId::new(),
                        content: entry.items,
                    },
                },
            );
        }
        let config = &self.services.config;
        let window = self
            .services
            .models
            .context_window(&opened.context.settings.model);
        let task = RegularTask {
            turn: opened.context.clone(),
            compaction: AutoCompaction {
                limit: config.compaction_limit(window),
                kept_user_tokens: config.kept_user_tokens(window),
                context_tokens: self.context_tokens(),
                turn_input_start,
                recover_overflow: true,
            },
            history: self.state.history.clone(),
            pending: self.pending.clone(),
            sink: opened.sink.clone(),
            cancel: opened.cancel.clone(),
            stop_hooks: Arc::clone(&self.services.stop_hooks),
            max_stop_hook_vetoes: config.max_stop_hook_vetoes,
        };
        self.spawn(opened, task.run());
        Ok(())
    }

    /// Start a review turn: the reviewer sees only the review request (a clean context),
    /// and what it finds joins the thread's history.
    pub(super) fn start_review_turn(
        &mut self,
        turn_id: TurnId,
        target: &ReviewTarget,
    ) -> Result<(), RejectReason> {
        let mut opened = self.open_turn(turn_id, TaskKind::Review, false, None)?;
        // Not even offered: a reviewer that wants to fix something says so instead.
        opened.context.withheld = if opened.context.memory.is_some() {
            EDIT_TOOLS
        } else {
            EDIT_AND_MEMORY_TOOLS
        };
        let request = Item::UserMessage {
            id: ItemId::new(),
            content: review_request(target),
        };
        self.emit(
            Some(turn_id),
            EventMsg::ItemCompleted {
                item: request.clone(),
            },
        );
        let task = RegularTask {
            turn: opened.context.clone(),
            compaction: AutoCompaction::off(),
            history: vec![Arc::new(request)],
            // Nothing steers a review: input during it waits for the next turn.
            pending: PendingInput::default(),
            sink: opened.sink.clone(),
            cancel: opened.cancel.clone(),
            stop_hooks: Arc::from(Vec::new()),
            max_stop_hook_vetoes: 0,
        };
        self.spawn(opened, task.run());
        Ok(())
    }

    /// Start a turn that only compacts the history, with the thread's current model.
    pub(super) fn start_compact_turn(
        &mut self,
        turn_id: TurnId,
        trigger: CompactionTrigger,
    ) -> Result<(), RejectReason> {
        let opened = self.open_turn(turn_id, TaskKind::Compact, false, None)?;
        let window = self
            .services
            .models
            .context_window(&opened.context.settings.model);
        let task = CompactTask {
            turn: opened.context.clone(),
            history: self.state.history.clone(),
            sink: opened.sink.clone(),
            cancel: opened.cancel.clone(),
            plan: Compaction {
                trigger,
                tokens_before: self.context_tokens(),
                kept_user_tokens: self.services.config.kept_user_tokens(window),
                tail_from: self.state.history.len(),
            },
        };
        self.spawn(opened, task.run());
        Ok(())
    }

    /// Start a turn that runs the user's `command` as one `shell` call (no model request).
    pub(super) fn start_user_shell_turn(
        &mut self,
        turn_id: TurnId,
        command: String,
        timeout_ms: Option<u64>,
    ) -> Result<(), RejectReason> {
        let opened = self.open_turn(turn_id, TaskKind::Regular, false, None)?;
        let task = UserShellTask {
            turn: opened.context.clone(),
            history: self.state.history.clone(),
            sink: opened.sink.clone(),
            cancel: opened.cancel.clone(),
            command,
            timeout_ms,
        };
        self.spawn(opened, task.run());
        Ok(())
    }
}

/// The tools the skills attached to `inputs` allow, together (each once), when one of them
/// allows only some; a skill without `allowed-tools` narrows nothing.
fn skills_allowed_tools(inputs: &[PendingEntry]) -> Option<Arc<[String]>> {
    let mut allowed: Vec<String> = Vec::new();
    let mut narrowed = false;
    for part in inputs.iter().flat_map(|e| &e.items) {
        if let rein_protocol::InputPart::Skill { allowed_tools, .. } = part {
            narrowed |= !allowed_tools.is_empty();
            for tool in allowed_tools {
                if !allowed.contains(tool) {
                    allowed.push(tool.clone());
                }
            }
        }
    }
    narrowed.then(|| allowed.into())
}
