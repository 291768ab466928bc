//! Human output: progress on stderr as it happens (streamed text, reasoning, tool calls
//! with their elapsed time), and — printed by the run once the turn is over — the final
//! message alone on stdout, so `rein exec "..." > answer.txt` captures just the answer
//! (on a terminal the streamed answer is not printed twice: see `print_final_message`).

use std::collections::HashMap;
use std::io::Write;
use std::time::Instant;

use rein_protocol::{
    AdvisorVerdict, AgentOp, AgentReport, Event, EventMsg, FileChangeKind, FileDiff, HookRunStatus,
    PlanStepStatus, ThreadId, TokenUsage, ToolAction, ToolOutcome,
};

use super::jsonl::abort_text;

/// How stderr may be written: ANSI styling (a terminal, or `--color always`) and a live
/// status line redrawn in place (a terminal only).
#[derive(Clone, Copy)]
pub struct Style {
    pub color: bool,
    pub live: bool,
}

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

impl Style {
    fn dim(self, s: &str) -> String {
        if self.color {
            format!("\x1b[2m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    }

    fn bold(self, s: &str) -> String {
        if self.color {
            format!("\x1b[1m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    }
}

pub struct HumanProgress<W: Write> {
    err: W,
    style: Style,
    /// What the last thing written was, to put breaks between streams.
    mid_line: bool,
    streaming: Stream,
    /// Running tool calls: summary and start, by call id.
    calls: HashMap<String, (String, Instant)>,
    /// A status line is drawn (without a newline) and must be erased before writing.
    status_drawn: bool,
    frame: usize,
    /// Tokens of the turn so far.
    usage: TokenUsage,
    /// The text of the answer streamed last (since its header), to tell whether the final
    /// message is already on stderr.
    streamed_answer: String,
    /// The task graph, when the run has one.
    graph: super::graph_view::GraphView,
    /// Calls whose approval the run denied without asking anyone, with what to say of it.
    denied_unasked: HashMap<String, &'static str>,
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Stream {
    None,
    Reasoning,
    Answer,
}

impl<W: Write> HumanProgress<W> {
    pub fn new(err: W, style: Style) -> Self {
        Self {
            err,
            style,
            mid_line: false,
            streaming: Stream::None,
            calls: HashMap::new(),
            status_drawn: false,
            frame: 0,
            usage: TokenUsage::default(),
            streamed_answer: String::new(),
            graph: super::graph_view::GraphView::default(),
            denied_unasked: HashMap::new(),
        }
    }

    /// Whether `message` is what was streamed last as the answer, i.e. already on screen
    /// when stderr is a terminal.
    pub fn streamed(&self, message: &str) -> bool {
        self.streamed_answer.trim() == message.trim()
    }

    fn erase_status(&mut self) -> std::io::Result<()> {
        if self.status_drawn {
            self.status_drawn = false;
            write!(self.err, "\r\x1b[2K")?;
        }
        Ok(())
    }

    /// Redraw the live status line: a spinner and the elapsed time of the oldest running
    /// call. Called periodically by the run loop, on a terminal only.
    pub fn tick(&mut self) -> std::io::Result<()> {
        if !self.style.live || self.mid_line {
            return Ok(());
        }
        let Some((summary, started)) = self.calls.values().min_by_key(|(_, at)| *at) else {
            return Ok(());
        };
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let text = format!(
            "\r\x1b[2K{} {summary} ({})",
            SPINNER[self.frame % SPINNER.len()],
            elapsed(ms)
        );
        self.frame += 1;
        self.status_drawn = true;
        write!(self.err, "{}", self.style.dim(&text))?;
        self.err.flush()
    }

    fn line(&mut self, text: &str) -> std::io::Result<()> {
        self.erase_status()?;
        if self.mid_line {
            writeln!(self.err)?;
        }
        self.mid_line = false;
        self.streaming = Stream::None;
        writeln!(self.err, "{text}")
    }

    fn stream(&mut self, kind: Stream, delta: &str) -> std::io::Result<()> {
        self.erase_status()?;
        if self.streaming != kind {
            let header = match kind {
                Stream::Reasoning => self.style.dim("thinking"),
                _ => self.style.bold("answer"),
            };
            self.line(&header)?;
            self.streaming = kind;
            if kind == Stream::Answer {
                self.streamed_answer.clear();
            }
        }
        if kind == Stream::Answer {
            self.streamed_answer.push_str(delta);
        }
        let text = match kind {
            Stream::Reasoning => self.style.dim(delta),
            _ => delta.to_owned(),
        };
        write!(self.err, "{text}")?;
        self.mid_line = !delta.ends_with('\n');
        self.err.flush()
    }

    /// The header of a run that continues an earlier session.
    pub fn resumed(&mut self, thread_id: ThreadId) -> std::io::Result<()> {
        let header = format!("rein exec · session {thread_id} (continued)");
        self.line(&self.style.dim(&header))?;
        self.err.flush()
    }

    /// What one kernel event shows. One match over every event kind, with no wildcard arm,
    /// on purpose: a new event does not compile until this projection decides what it shows
    /// (which is why the function is long).
    pub fn on_event(&mut self, event: &Event) -> std::io::Result<()> {
        match &event.msg {
            EventMsg::ThreadConfigured { settings, .. } => {
                let header = format!(
                    "rein exec · session {} · model {} · {}",
                    event.thread_id,
                    settings.model,
                    settings.cwd.display()
                );
                self.line(&self.style.dim(&header))?;
            }
            EventMsg::AgentMessageDelta { delta, .. } => self.stream(Stream::Answer, delta)?,
            EventMsg::ReasoningDelta { delta, .. } => self.stream(Stream::Reasoning, delta)?,
            EventMsg::ToolCallBegin {
                call_id,
                name,
                action,
                ..
            } => {
                let summary = call_summary(name, action);
                self.line(&format!("{} {summary}", self.style.bold("▶")))?;
                self.calls
                    .insert(call_id.clone(), (summary, Instant::now()));
            }
            EventMsg::ToolCallEnd {
                call_id,
                success,
                duration_ms,
                outcome,
            } => {
                let summary = self
                    .calls
                    .remove(call_id)
                    .map(|(summary, _)| summary)
                    .unwrap_or_default();
                let mark = if *success { "✓" } else { "✗" };
                let denied_unasked = self.denied_unasked.remove(call_id);
                let why = match outcome {
                    ToolOutcome::Declined { reason, .. } => match denied_unasked {
                        Some(denial) => format!(" — {denial}"),
                        None => format!(" — declined: {reason}"),
                    },
                    ToolOutcome::Exited { exit, .. } if !exit.success() => {
                        format!(" — exit {}", exit.code())
                    }
                    _ => String::new(),
                };
                let text = format!("{mark} {summary} ({}){why}", elapsed(*duration_ms));
                self.line(&self.style.dim(&text))?;
                if let ToolOutcome::Patched { changes } = outcome {
                    self.files(changes)?;
                }
                if let ToolOutcome::Agents { agents, .. } = outcome {
                    self.agents(agents)?;
                }
            }
            EventMsg::StreamRetry {
                attempt,
                max_attempts,
                message,
            } => self.line(&format!(
                "reconnecting ({attempt}/{max_attempts}): {message}"
            ))?,
            EventMsg::Warning { message } => self.line(&format!("warning: {message}"))?,
            EventMsg::HookStarted {
                event_name,
                command,
                ..
            } => self.line(
                &self
                    .style
                    .dim(&format!("hook {}: {command}", event_name.as_str())),
            )?,
            EventMsg::HookCompleted {
                status, message, ..
            } => match status {
                HookRunStatus::Completed => {}
                HookRunStatus::Blocked => self.line(&format!(
                    "hook blocked: {}",
                    message.as_deref().unwrap_or_default()
                ))?,
                HookRunStatus::Failed => self.line(&format!(
                    "hook failed: {}",
                    message.as_deref().unwrap_or_default()
                ))?,
            },
            EventMsg::ModelRerouted { from, to, reason } => self.line(&format!(
                "warning: model {from} failed ({reason}); continuing with {to}"
            ))?,
            EventMsg::ModelSwitched { from, to } => {
                self.line(&self.style.dim(&format!("model switched: {from} → {to}")))?;
            }
            EventMsg::CompactionStarted { tokens_before, .. } => self.line(
                &self
                    .style
                    .dim(&format!("compacting the context ({tokens_before} tokens)")),
            )?,
            EventMsg::Compacted { tokens_after, .. } => self.line(
                &self
                    .style
                    .dim(&format!("context compacted to {tokens_after} tokens")),
            )?,
            EventMsg::Error { message, .. } => self.line(&format!("error: {message}"))?,
            EventMsg::TurnAborted { reason } => {
                if let Some(list) = self.graph.turn_aborted(event.timestamp_ms) {
                    self.line(&list)?;
                }
                self.line(&format!("turn aborted: {}", abort_text(*reason)))?;
            }
            EventMsg::MemoryProposed { memory, .. } => self.line(&self.style.dim(&format!(
                "memory proposed ({}): {}",
                memory.scope.as_str(),
                memory.content
            )))?,
            EventMsg::MemoryAccepted { id, .. } => {
                self.line(&self.style.dim(&format!("memory kept: {id}")))?;
            }
            EventMsg::MemoryRejected { id, reason, .. } => {
                self.line(&self.style.dim(&format!("memory {id} not kept: {reason}")))?;
            }
            EventMsg::ClientRequested {
                call_id, request, ..
            } => {
                if let Some(denial) = super::headless::denial(request) {
                    self.denied_unasked.insert(call_id.clone(), denial);
                }
                self.line(&super::headless::asked(request))?;
            }
            EventMsg::TurnCompleted { .. } => {
                let u = self.usage;
                let text = format!(
                    "tokens: {} in ({} cached), {} out",
                    u.input_tokens, u.cached_input_tokens, u.output_tokens
                );
                self.line(&self.style.dim(&text))?;
            }
            EventMsg::TurnFailed { .. } => {
                if self.mid_line {
                    writeln!(self.err)?;
                    self.mid_line = false;
                }
            }
            EventMsg::TokenCount { last, .. } => self.usage.add(last),
            EventMsg::PlanUpdated { plan } => {
                self.line(&self.style.bold("plan"))?;
                for step in plan {
                    let mark = match step.status {
                        PlanStepStatus::Completed => "[x]",
                        PlanStepStatus::InProgress => "[>]",
                        PlanStepStatus::Pending => "[ ]",
                    };
                    self.line(&format!("  {mark} {}", step.step))?;
                }
            }
            EventMsg::AdvisorReviewStarted { calls, risk, .. } => {
                let risky = calls.iter().find_map(|c| c.risk.as_deref());
                let why = risky.map(|r| format!(" ({r})")).unwrap_or_default();
                let n = calls.len();
                let what = if n == 1 { "call" } else { "calls" };
                let text =
                    format!("advisor reviewing {n} tool {what}, {risk:?} risk{why}").to_lowercase();
                self.line(&self.style.dim(&text))?;
            }
            EventMsg::AdvisorReviewCompleted { verdict, .. } => match verdict {
                AdvisorVerdict::Approve { reason } => {
                    self.line(&self.style.dim(&format!("advisor approved: {reason}")))?;
                }
                AdvisorVerdict::ApproveWithWarnings { reason } => {
                    self.line(&format!("advisor warning: {reason}"))?;
                }
                AdvisorVerdict::Reject { reason } => {
                    self.line(&format!("advisor rejected the tool calls: {reason}"))?;
                }
                // Shown by the warning that comes with it.
                AdvisorVerdict::FailedOpen { .. } => {}
            },
            // Written by rein before patches were outcomes; never sent live.
            EventMsg::PatchApplied { .. } => {}
            EventMsg::TaskGraphChanged { change } => {
                if let Some(list) = self.graph.apply(change, event.timestamp_ms) {
                    self.line(&list)?;
                }
            }
            EventMsg::GoalUpdated { goal } => {
                let reason = goal
                    .reason
                    .as_deref()
                    .map_or_else(String::new, |r| format!(": {r}"));
                self.line(&format!("goal {}{reason}", goal.status.as_str()))?;
            }
            EventMsg::GoalTurnStarted { .. } => {
                self.line(&self.style.dim("goal turn (continued by the kernel)"))?;
            }
            EventMsg::GoalCheckpointed { checkpoint } => {
                let progress = if checkpoint.progress {
                    "progress"
                } else {
                    "no progress"
                };
                self.line(
                    &self
                        .style
                        .dim(&format!("checkpoint ({progress}): {}", checkpoint.note)),
                )?;
            }
            EventMsg::GoalCleared => self.line("goal cleared")?,
            EventMsg::SettingsChanged { .. }
            | EventMsg::AgentOrigin { .. }
            | EventMsg::ContextLoaded { .. }
            | EventMsg::SkillActivated { .. }
            | EventMsg::AgentSpawned { .. }
            | EventMsg::AgentTasked { .. }
            | EventMsg::AgentClosed { .. }
            | EventMsg::MailQueued { .. }
            | EventMsg::MailTaken { .. }
            | EventMsg::ThreadNamed { .. }
            | EventMsg::MemoryModeSet { .. }
            | EventMsg::TurnDiff { .. }
            | EventMsg::TurnStarted { .. }
            | EventMsg::ItemStarted { .. }
            | EventMsg::ItemCompleted { .. }
            | EventMsg::ToolOutputDelta { .. }
            | EventMsg::ClientRequestResolved { .. }
            | EventMsg::RolledBack { .. }
            | EventMsg::StepRequested { .. }
            | EventMsg::ShutdownComplete => {}
        }
        self.err.flush()
    }

    /// The files a patch changed, one line each.
    /// The agents a sub-agent call concerned, one indented line each with its status.
    fn agents(&mut self, agents: &[AgentReport]) -> std::io::Result<()> {
        for agent in agents {
            let name = agent
                .nickname
                .clone()
                .unwrap_or_else(|| agent.thread_id.to_string());
            let status = serde_json::to_value(agent.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let mut text = format!("  └ {name} [{}] {status}", agent.thread_id);
            if let Some(message) = &agent.message {
                text = format!("{text}: {}", clipped(message));
            }
            self.line(&text)?;
        }
        Ok(())
    }

    fn files(&mut self, changes: &[FileDiff]) -> std::io::Result<()> {
        for change in changes {
            let mark = match change.kind {
                FileChangeKind::Add => "A",
                FileChangeKind::Delete => "D",
                FileChangeKind::Update => "M",
            };
            let path = change.move_to.as_ref().unwrap_or(&change.path);
            self.line(&format!("  {mark} {}", path.display()))?;
        }
        Ok(())
    }
}

/// One line for a call, from what its tool said it does.
fn call_summary(tool: &str, action: &ToolAction) -> String {
    let text = match action {
        ToolAction::Exec { command, .. } => format!("$ {command}"),
        ToolAction::Stdin {
            terminal_id, chars, ..
        } if chars.is_empty() => format!("read terminal {terminal_id}"),
        ToolAction::Stdin {
            terminal_id, chars, ..
        } => format!("{terminal_id} ⟵ {}", chars.escape_debug()),
        ToolAction::Read { path } => format!("read {}", path.display()),
        ToolAction::List { path } => format!("list {}", path.display()),
        ToolAction::Search { query, path } => format!("search {query:?} in {}", path.display()),
        ToolAction::Edit { changes } => format!(
            "edit {}",
            changes
                .iter()
                .map(|c| c.path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ToolAction::Plan { .. } => "update the plan".to_owned(),
        ToolAction::Mcp {
            server,
            tool,
            arguments,
        } => format!("{server}.{tool} {arguments}"),
        ToolAction::Agent {
            op,
            targets,
            prompt,
            ..
        } => {
            let verb = match op {
                AgentOp::Spawn => "spawn an agent",
                AgentOp::Send => "message",
                AgentOp::Wait => "wait for",
                AgentOp::Close => "close",
                AgentOp::Resume => "reopen",
                AgentOp::List => "list the agents",
            };
            let who: Vec<String> = targets.iter().map(ToString::to_string).collect();
            let mut text = verb.to_owned();
            if !who.is_empty() {
                text = format!("{text} {}", who.join(", "));
            }
            match prompt {
                Some(prompt) => format!("{text}: {prompt}"),
                None => text,
            }
        }
        ToolAction::Other { arguments, .. } => format!("{tool} {arguments}"),
    };
    clipped(&text)
}

fn clipped(text: &str) -> String {
    if text.chars().count() > 120 {
        text.chars().take(117).collect::<String>() + "..."
    } else {
        text.to_owned()
    }
}

fn elapsed(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rein_protocol::{Event, EventMsg, ThreadId};

    use super::*;

    fn event(msg: EventMsg) -> Event {
        Event {
            thread_id: ThreadId::new(),
            turn_id: None,
            seq: 0,
            timestamp_ms: 0,
            msg,
        }
    }

    fn begin() -> Event {
        event(EventMsg::ToolCallBegin {
            call_id: "c".into(),
            name: "shell".into(),
            arguments: r#"{"command":"make"}"#.into(),
            action: rein_protocol::ToolAction::Exec {
                argv: vec!["sh".into(), "-c".into(), "make".into()],
                command: "make".into(),
                cwd: "/w".into(),
                background: false,
                commands: vec![],
            },
        })
    }

    #[test]
    fn a_live_status_line_is_erased_before_the_next_line() {
        let mut out = Vec::new();
        let mut p = HumanProgress::new(
            &mut out,
            Style {
                color: false,
                live: true,
            },
        );
        p.on_event(&begin()).unwrap();
        p.tick().unwrap();
        p.on_event(&event(EventMsg::ToolCallEnd {
            call_id: "c".into(),
            success: true,
            duration_ms: 1500,
            outcome: rein_protocol::ToolOutcome::unreported(true),
        }))
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("▶ $ make\n\r\x1b[2K⠋ $ make ("),
            "{text:?}"
        );
        assert!(
            text.ends_with(" ms)\r\x1b[2K✓ $ make (1.5 s)\n"),
            "{text:?}"
        );
    }

    #[test]
    fn without_a_terminal_there_is_no_status_line() {
        let mut out = Vec::new();
        let mut p = HumanProgress::new(
            &mut out,
            Style {
                color: false,
                live: false,
            },
        );
        p.on_event(&begin()).unwrap();
        p.tick().unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "▶ $ make\n");
    }
}
