//! One turn, headless: submit the input, follow the thread's events to the end of the
//! turn, print them in the chosen format, and answer what a headless run cannot ask —
//! approvals are denied so the tool fails back to the model with the reason.
//!
//! Ctrl-C (or SIGTERM) interrupts the turn through the kernel (`Op::Interrupt`) and waits
//! for `TurnAborted`, so the history and rollout close cleanly and `exec resume` continues
//! the session; a second signal stops waiting.

use std::io::Write;
use std::time::Duration;

use super::events::ExecEvent;
use anyhow::{bail, Context};
use rein_core::{EventStream, NewThread, ThreadHandle};
use rein_protocol::{
    EventMsg, InputMode, InputOutcome, InputPart, Item, Op, OpResult, SettingsChange, ThreadId,
};
use tokio::signal::unix::{signal, Signal, SignalKind};

use super::human::{HumanProgress, Style};
use super::jsonl::JsonlMapper;

pub enum OutputMode {
    Json,
    Human(Style),
}

/// What to submit.
pub struct TurnInput {
    pub parts: Vec<InputPart>,
    /// Applied with the input (all or nothing).
    pub settings: SettingsChange,
    /// Announce the thread first: a resumed or forked thread emits no `ThreadConfigured`.
    pub announce: bool,
    /// `--output-schema`: sent to the model as structured output for this turn.
    pub output_schema: Option<serde_json::Value>,
}

/// A signal that stops a headless run: Ctrl-C, or a supervisor's SIGTERM (the Codex SDK
/// sends one when its abort signal fires).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopSignal {
    Interrupt,
    Terminate,
}

impl StopSignal {
    /// The exit code shells report for a process that signal ended.
    pub fn exit_code(self) -> i32 {
        match self {
            StopSignal::Interrupt => 130,
            StopSignal::Terminate => 143,
        }
    }
}

/// How the turn ended.
#[derive(Debug, Default)]
pub struct Outcome {
    pub completed: bool,
    /// The signal that interrupted the turn, if one did.
    pub interrupted_by: Option<StopSignal>,
    pub final_message: Option<String>,
    /// The final message was streamed on stderr as it came (human mode).
    pub final_message_streamed: bool,
}

pub(super) enum Printer {
    Json(JsonlMapper),
    Human(HumanProgress<std::io::Stderr>),
}

impl Printer {
    /// The printer of `mode`, and whether it redraws live lines.
    fn for_mode(mode: OutputMode) -> (Self, bool) {
        match mode {
            OutputMode::Json => (Printer::Json(JsonlMapper::new()), false),
            OutputMode::Human(style) => (
                Printer::Human(HumanProgress::new(std::io::stderr(), style)),
                style.live,
            ),
        }
    }

    pub(super) fn new(mode: OutputMode) -> Self {
        match mode {
            OutputMode::Json => Printer::Json(JsonlMapper::new()),
            OutputMode::Human(style) => {
                Printer::Human(HumanProgress::new(std::io::stderr(), style))
            }
        }
    }

    /// Whether `message` was streamed on stderr as it came (human mode).
    pub(super) fn streamed(&self, message: Option<&str>) -> bool {
        match (self, message) {
            (Printer::Human(progress), Some(message)) => progress.streamed(message),
            _ => false,
        }
    }

    pub(super) fn print(&mut self, event: &rein_protocol::Event) -> std::io::Result<()> {
        match self {
            Printer::Json(mapper) => {
                let lines = mapper.map(event);
                if lines.is_empty() {
                    return Ok(());
                }
                let mut out = std::io::stdout().lock();
                for line in lines {
                    serde_json::to_writer(&mut out, &line)?;
                    out.write_all(b"\n")?;
                }
                out.flush()
            }
            Printer::Human(progress) => progress.on_event(event),
        }
    }

    fn announce(&mut self, thread_id: ThreadId) -> std::io::Result<()> {
        match self {
            Printer::Json(_) => {
                let line = ExecEvent::ThreadStarted {
                    thread_id: thread_id.to_string(),
                };
                let mut out = std::io::stdout().lock();
                serde_json::to_writer(&mut out, &line)?;
                out.write_all(b"\n")?;
                out.flush()
            }
            Printer::Human(progress) => progress.resumed(thread_id),
        }
    }

    fn tick(&mut self) -> std::io::Result<()> {
        match self {
            Printer::Json(_) => Ok(()),
            Printer::Human(progress) => progress.tick(),
        }
    }
}

/// Submit the turn's input; a rejected prompt is an error.
async fn start_turn(handle: &ThreadHandle, input: TurnInput) -> anyhow::Result<()> {
    let submitted = handle
        .submit(Op::UserInput {
            items: input.parts,
            mode: InputMode::StartIfIdle,
            settings: input.settings,
            output_schema: input.output_schema,
        })
        .await?;
    if let OpResult::Input(InputOutcome::Rejected { reason }) = submitted {
        bail!("the prompt was rejected: {reason}");
    }
    Ok(())
}

pub async fn drive(
    thread: NewThread,
    input: TurnInput,
    mode: OutputMode,
) -> anyhow::Result<Outcome> {
    let NewThread {
        handle, mut events, ..
    } = thread;
    // Installed before the turn starts, so no Ctrl-C can kill the process uncleanly.
    let mut sigint = signal(SignalKind::interrupt()).context("installing the Ctrl-C handler")?;
    let mut sigterm = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let (mut printer, live) = Printer::for_mode(mode);
    // Redraws the spinner of running tool calls; only polled on a terminal.
    let mut ticker = tokio::time::interval(Duration::from_millis(100));
    if input.announce {
        printer.announce(handle.id()).context("writing output")?;
    }
    start_turn(&handle, input).await?;
    let mut outcome = Outcome::default();
    let mut last_message = None;
    loop {
        tokio::select! {
            event = events.recv() => {
                let Some(event) = event else { break };
                printer.print(&event).context("writing output")?;
                match &event.msg {
                    EventMsg::ItemCompleted { item: Item::AgentMessage { text, .. } } => {
                        last_message = Some(text.clone());
                    }
                    // Headless: nobody can approve or answer.
                    EventMsg::ClientRequested { request_id, request, .. } => {
                        handle.submit(Op::Respond {
                            request_id: request_id.clone(),
                            response: request.unanswered(),
                        }).await?;
                    }
                    EventMsg::TurnCompleted { last_agent_message } => {
                        outcome.completed = true;
                        if last_agent_message.is_some() {
                            last_message.clone_from(last_agent_message);
                        }
                        break;
                    }
                    EventMsg::TurnFailed { .. } | EventMsg::TurnAborted { .. } => break,
                    _ => {}
                }
            }
            _ = ticker.tick(), if live => printer.tick().context("writing output")?,
            stop = async {
                tokio::select! {
                    _ = sigint.recv() => StopSignal::Interrupt,
                    _ = sigterm.recv() => StopSignal::Terminate,
                }
            } => {
                // A second signal stops waiting for the turn to wind down.
                if outcome.interrupted_by.is_some() {
                    break;
                }
                outcome.interrupted_by = Some(stop);
                handle.submit(Op::Interrupt).await?;
            }
        }
    }
    outcome.final_message = last_message.filter(|m| !m.is_empty());
    outcome.final_message_streamed = match (&printer, &outcome.final_message) {
        (Printer::Human(progress), Some(message)) => progress.streamed(message),
        _ => false,
    };
    shut_down(
        &handle,
        &mut events,
        &mut printer,
        (&mut sigint, &mut sigterm),
    )
    .await?;
    Ok(outcome)
}

/// Shut the thread down, still following its events until its last: the kernel may first
/// extract memories from the session's turns (docs/memory.md), a turn of its own that is
/// printed like any other, whose consent questions a headless run answers no, and which
/// Ctrl-C (or SIGTERM) interrupts. Returns once the thread is shut down and all it said is
/// printed.
pub(super) async fn shut_down(
    handle: &ThreadHandle,
    events: &mut EventStream,
    printer: &mut Printer,
    signals: (&mut Signal, &mut Signal),
) -> anyhow::Result<()> {
    let (sigint, sigterm) = signals;
    let shutdown = handle.shutdown();
    tokio::pin!(shutdown);
    let mut shut = false;
    loop {
        tokio::select! {
            result = &mut shutdown, if !shut => {
                result?;
                shut = true;
            }
            _ = async { tokio::select! { _ = sigint.recv() => (), _ = sigterm.recv() => () } } => {
                // Refused once the thread is gone: there is nothing left to stop.
                let _ = handle.submit(Op::Interrupt).await;
            }
            event = events.recv() => {
                let Some(event) = event else { break };
                printer.print(&event).context("writing output")?;
                if let EventMsg::ClientRequested { request_id, request, .. } = &event.msg {
                    // Refused once the thread is gone: its request was closed with it.
                    let _ = handle.submit(Op::Respond {
                        request_id: request_id.clone(),
                        response: request.unanswered(),
                    }).await;
                }
            }
        }
    }
    if !shut {
        shutdown.await?;
    }
    Ok(())
}
