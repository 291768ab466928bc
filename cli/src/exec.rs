//! `rein exec`: run one turn headless. The answer streams to stdout; `--json` prints every
//! event as one JSON line instead.

use std::io::Write;

use anyhow::{bail, Context};
use clap::Args;
use rein_core::{ThreadManager, ThreadOptions};
use rein_protocol::{
    ApprovalPolicy, EventMsg, InputOutcome, Op, OpResult, SandboxPolicy, ThreadSettings, TurnBudget,
};

use crate::demo;

#[derive(Args)]
pub struct ExecArgs {
    /// Use the built-in scripted model (no API key needed).
    #[arg(long)]
    demo: bool,
    /// Print events as JSON lines.
    #[arg(long)]
    json: bool,
    /// The prompt.
    prompt: Option<String>,
}

/// Runs the turn; returns the process exit code.
pub async fn run(args: ExecArgs) -> anyhow::Result<i32> {
    if !args.demo {
        bail!("no model provider is configured yet; run `rein exec --demo` to use the built-in scripted model");
    }
    let prompt = args
        .prompt
        .clone()
        .unwrap_or_else(|| "What does rein do?".to_owned());
    let manager = ThreadManager::builder(demo::catalog(&prompt)).build();
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let settings = ThreadSettings {
        model: demo::DEMO_MODEL.into(),
        cwd,
        approval_policy: ApprovalPolicy::Never,
        sandbox_policy: SandboxPolicy::ReadOnly,
        reasoning_effort: None,
        budget: TurnBudget::default(),
        instructions: String::new(),
    };
    let mut thread = manager.create_thread(ThreadOptions::new(settings))?;
    let res = thread.handle.submit(Op::user_text(prompt)).await?;
    if let OpResult::Input(InputOutcome::Rejected { reason }) = res {
        bail!("the prompt was rejected: {reason}");
    }
    let mut stdout = std::io::stdout().lock();
    let mut code = 0;
    while let Some(event) = thread.events.recv().await {
        if args.json {
            serde_json::to_writer(&mut stdout, event.as_ref())?;
            writeln!(stdout)?;
        }
        match &event.msg {
            EventMsg::AgentMessageDelta { delta, .. } if !args.json => {
                write!(stdout, "{delta}")?;
                stdout.flush()?;
            }
            EventMsg::TurnCompleted { .. } => break,
            EventMsg::TurnFailed { message, .. } => {
                eprintln!("error: {message}");
                code = 1;
                break;
            }
            EventMsg::TurnAborted { reason } => {
                eprintln!("turn aborted: {reason:?}");
                code = 1;
                break;
            }
            _ => {}
        }
    }
    if !args.json {
        writeln!(stdout)?;
    }
    drop(stdout);
    thread.handle.shutdown().await?;
    Ok(code)
}
