//! Human output: progress on stderr as it happens (streamed text, reasoning, tool calls
//! with their elapsed time), and — printed by the run once the turn is over — the final
//! message alone on stdout, so `rein exec "..." > answer.txt` captures just the answer.

use std::collections::HashMap;
use std::io::Write;

use rein_protocol::{Event, EventMsg, PlanStepStatus};

use super::jsonl::abort_text;

/// ANSI styling, used only when stderr is a terminal (or `--color always`).
#[derive(Clone, Copy)]
pub struct Style {
    pub color: bool,
}

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
    calls: HashMap<String, String>,
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
        }
    }

    fn line(&mut self, text: &str) -> std::io::Result<()> {
        if self.mid_line {
            writeln!(self.err)?;
        }
        self.mid_line = false;
        self.streaming = Stream::None;
        writeln!(self.err, "{text}")
    }

    fn stream(&mut self, kind: Stream, delta: &str) -> std::io::Result<()> {
        if self.streaming != kind {
            let header = match kind {
                Stream::Reasoning => self.style.dim("thinking"),
                _ => self.style.bold("answer"),
            };
            self.line(&header)?;
            self.streaming = kind;
        }
        let text = match kind {
            Stream::Reasoning => self.style.dim(delta),
            _ => delta.to_owned(),
        };
        write!(self.err, "{text}")?;
        self.mid_line = !delta.ends_with('\n');
        self.err.flush()
    }

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
                arguments,
            } => {
                let summary = call_summary(name, arguments);
                self.line(&format!("{} {summary}", self.style.bold("▶")))?;
                self.calls.insert(call_id.clone(), summary);
            }
            EventMsg::ToolCallEnd {
                call_id,
                success,
                duration_ms,
            } => {
                let summary = self.calls.remove(call_id).unwrap_or_default();
                let mark = if *success { "✓" } else { "✗" };
                let text = format!("{mark} {summary} ({})", elapsed(*duration_ms));
                self.line(&self.style.dim(&text))?;
            }
            EventMsg::StreamRetry {
                attempt,
                max_attempts,
                message,
            } => self.line(&format!(
                "reconnecting ({attempt}/{max_attempts}): {message}"
            ))?,
            EventMsg::Warning { message } => self.line(&format!("warning: {message}"))?,
            EventMsg::Error { message, .. } => self.line(&format!("error: {message}"))?,
            EventMsg::TurnAborted { reason } => {
                self.line(&format!("turn aborted: {}", abort_text(*reason)))?;
            }
            EventMsg::ApprovalRequested { request, .. } => self.line(&format!(
                "approval needed but rein exec cannot ask; denied: {request:?}"
            ))?,
            EventMsg::TurnCompleted { .. } | EventMsg::TurnFailed { .. } => {
                if self.mid_line {
                    writeln!(self.err)?;
                    self.mid_line = false;
                }
            }
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
            EventMsg::SettingsChanged { .. }
            | EventMsg::TurnStarted { .. }
            | EventMsg::ItemStarted { .. }
            | EventMsg::ItemCompleted { .. }
            | EventMsg::ToolOutputDelta { .. }
            | EventMsg::ApprovalResolved { .. }
            | EventMsg::TokenCount { .. }
            | EventMsg::RolledBack { .. }
            | EventMsg::ShutdownComplete => {}
        }
        self.err.flush()
    }
}

fn call_summary(name: &str, arguments: &str) -> String {
    let args: serde_json::Value = serde_json::from_str(arguments).unwrap_or_default();
    match (name, &args["command"]) {
        ("shell", serde_json::Value::String(s)) => format!("$ {s}"),
        ("shell", serde_json::Value::Array(argv)) => format!(
            "$ {}",
            argv.iter()
                .filter_map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        ),
        _ => {
            let mut text = format!("{name} {arguments}");
            if text.chars().count() > 120 {
                text = text.chars().take(117).collect::<String>() + "...";
            }
            text
        }
    }
}

fn elapsed(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}
