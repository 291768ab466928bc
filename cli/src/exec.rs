//! `rein exec`: run one turn headless. The answer streams to stdout; `--json` prints every
//! event as one JSON line instead.

use std::io::Write;

use anyhow::{bail, Context};
use clap::Args;
use rein_core::bootstrap::{bootstrap, BootstrapOptions};
use rein_core::ThreadOptions;
use rein_protocol::{ApprovalPolicy, EventMsg, InputOutcome, Op, OpResult, SandboxPolicy};

#[derive(Args)]
pub struct ExecArgs {
    /// Use the built-in scripted model (no API key needed).
    #[arg(long)]
    demo: bool,
    /// Print events as JSON lines.
    #[arg(long)]
    json: bool,
    /// Override a configuration value (`key=value`, TOML value).
    #[arg(short = 'c', long = "config")]
    overrides: Vec<String>,
    /// The prompt.
    prompt: Option<String>,
}

/// Runs the turn; returns the process exit code.
pub async fn run(args: ExecArgs) -> anyhow::Result<i32> {
    let env = |k: &str| std::env::var(k).ok();
    let kernel = bootstrap(
        BootstrapOptions {
            demo: args.demo,
            overrides: args.overrides.clone(),
            ..BootstrapOptions::default()
        },
        &env,
    )
    .context(
        "setting up the model (or run `rein exec --demo` to use the built-in scripted model)",
    )?;
    let prompt = args
        .prompt
        .clone()
        .unwrap_or_else(|| "What does rein do?".to_owned());
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let mut settings = kernel.default_settings(cwd);
    settings.approval_policy = ApprovalPolicy::Never;
    settings.sandbox_policy = SandboxPolicy::ReadOnly;
    let mut thread = kernel.manager.create_thread(ThreadOptions::new(settings))?;
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
