//! `rein exec`: run one turn headless, the way `codex exec` does, so scripts, CI and the
//! Codex SDKs can drive rein. Map: `args` (the command line), `options` (flags and `-c`
//! keys → policies, provider environment, warnings), `prompt` (argument / stdin / images),
//! `turn` (submit, follow events, Ctrl-C), `jsonl` (rein events → `--json` lines),
//! `human` (progress on stderr), `output_schema` (`--output-schema` check).

mod args;
mod events;
mod goal;
pub(crate) mod graph_view;
mod headless;
mod human;
mod jsonl;
mod options;
mod output_schema;
mod prompt;
mod session;
mod turn;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use rein_bootstrap::{bootstrap, BootstrapOptions, Kernel};
use rein_protocol::{InputPart, SettingsChange, ThreadId};
use rein_tools::BuiltinConfig;

pub use args::ExecArgs;
use args::{ColorMode, ExecCommand};
use human::Style;
pub(crate) use options::RunOptions;
use output_schema::OutputSchema;
use session::{ResumeTarget, SessionStart};
use turn::{Outcome, OutputMode, TurnInput};

/// Runs the command; returns the process exit code. A setup failure is reported on
/// stderr with its causes (and no backtrace: it is the user's problem to fix, not a bug)
/// and exits 1.
pub async fn run(args: ExecArgs) -> anyhow::Result<i32> {
    match run_exec(args).await {
        Ok(code) => Ok(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            Ok(1)
        }
    }
}

/// What `rein exec --demo` asks when no prompt is given.
const DEMO_PROMPT: &str = "What does rein do?";

async fn run_exec(args: ExecArgs) -> anyhow::Result<i32> {
    let common = &args.common;
    let mut opts = RunOptions::from_args(common);
    for warning in &opts.warnings {
        eprintln!("warning: {warning}");
    }
    let schema = common
        .output_schema
        .as_deref()
        .map(OutputSchema::load)
        .transpose()?;
    let cwd = working_dir(common.cd.as_deref())?;
    let (start, mut input) = exec_input(&args)?;

    let kernel = start_kernel(common, &opts, &cwd)?;
    // The configured policies (file, profile, `-c`) where no flag chose.
    let configured = kernel.config.as_ref();
    let said = opts.warnings.len();
    opts.apply_configured(
        configured.and_then(|c| c.sandbox_mode),
        configured.and_then(|c| c.approval_policy),
    );
    for warning in &opts.warnings[said..] {
        eprintln!("warning: {warning}");
    }
    let mut settings = kernel.default_settings(cwd.clone());
    settings.approval_policy = opts.approval_policy;
    settings.sandbox_policy = opts.sandbox_policy;
    if let Some(schema) = &schema {
        settings.instructions = join_instructions(&settings.instructions, &schema.instructions());
    }
    let change = continued_change(&start, common, &opts, &cwd);
    let announce = !matches!(start, SessionStart::New);
    if let (Some(schema), true) = (&schema, announce) {
        // A continued thread keeps its own instructions, so the schema rides with the input.
        input.push(InputPart::text(schema.instructions()));
    }
    // `$name` attaches a skill, explicit-only ones too.
    kernel
        .attach_mentioned_skills(cwd.clone(), &mut input)
        .await;
    let thread = session::open(&kernel, &start, settings, common.ephemeral).await?;
    if let Err(e) = wait_for_mcp(&kernel, &cwd).await {
        kernel.shutdown().await;
        return Err(e);
    }

    let mode = output_mode(common);
    if let Some(objective) = &args.goal.goal {
        let change = goal::change(&args.goal, objective.clone());
        let ended = goal::drive_goal(thread, change, mode).await?;
        kernel.shutdown().await;
        let code = ended.exit_code();
        finish(&ended.outcome, common, None)?;
        return Ok(code);
    }
    let outcome = turn::drive(
        thread,
        TurnInput {
            parts: input,
            settings: change,
            announce,
            output_schema: schema.as_ref().map(|s| s.schema.clone()),
        },
        mode,
    )
    .await?;
    // Every thread shut down and everything written durable before the process exits,
    // and no MCP server left running.
    kernel.shutdown().await;
    finish(&outcome, common, schema.as_ref())
}

/// How the session starts and the turn's input: the prompt (or `--goal`'s objective, or the
/// demo's question), the images and what stdin adds.
fn exec_input(args: &ExecArgs) -> anyhow::Result<(SessionStart, Vec<InputPart>)> {
    let common = &args.common;
    let (start, mut prompt_arg) = session_start(args)?;
    if let Some(objective) = &args.goal.goal {
        if prompt_arg.is_some() {
            bail!("--goal takes the objective; give no prompt with it");
        }
        // The kernel starts the goal's turns itself; the objective is their input.
        prompt_arg = Some(objective.as_str());
    }
    // The demo should run on a fresh machine with nothing typed or piped.
    if common.demo && prompt_arg.is_none() && std::io::stdin().is_terminal() {
        prompt_arg = Some(DEMO_PROMPT);
    }
    let stdin_extra = if common.experimental_json {
        prompt::StdinUse::PromptOnly
    } else {
        prompt::StdinUse::PromptOrExtra
    };
    let input = match prompt::resolve(prompt_arg, &common.images, stdin_extra) {
        // Nothing piped either (a closed or empty stdin, as in a script): the demo still
        // runs, with its own prompt.
        Err(prompt::PromptError::Missing) if common.demo && prompt_arg.is_none() => {
            prompt::resolve(
                Some(DEMO_PROMPT),
                &common.images,
                prompt::StdinUse::PromptOnly,
            )?
        }
        other => other?,
    };
    Ok((start, input))
}

/// The kernel as the command line and the configuration choose it.
fn start_kernel(
    common: &args::CommonArgs,
    opts: &RunOptions,
    cwd: &Path,
) -> anyhow::Result<Kernel> {
    let env = opts.provider_env();
    // The sandbox verdict cached in rein's home spares this start the probe.
    if let Some(home) = rein_config::rein_home(&|k: &str| std::env::var(k).ok()) {
        rein_tools::sandbox::Sandbox::cache_verdict_in(&home);
    }
    let kernel = bootstrap(
        BootstrapOptions {
            demo: common.demo,
            profile: common.profile.clone(),
            overrides: opts
                .overrides
                .iter()
                .cloned()
                .chain(
                    common
                        .strategy
                        .map(|s| format!("agents.strategy=\"{}\"", s.name())),
                )
                .collect(),
            model: common.model.clone(),
            tools: BuiltinConfig {
                extra_writable_roots: add_dirs(cwd, &common.add_dirs)?,
                network_access: opts.network_access,
                ..BuiltinConfig::default()
            },
            no_project_doc: common.no_project_doc,
            ..BootstrapOptions::default()
        },
        &env,
    )
    .context(
        "setting up the model (or run `rein exec --demo` to use the built-in scripted model)",
    )?;
    drop(env);
    Ok(kernel)
}

/// A `required` MCP server that cannot start fails the run before its turn, as in Codex. A
/// one-shot run may have one step only: the other servers are waited for too (each within
/// its startup_timeout), so that step offers their tools.
async fn wait_for_mcp(kernel: &Kernel, cwd: &Path) -> anyhow::Result<()> {
    let Some(mcp) = &kernel.mcp else {
        return Ok(());
    };
    mcp.wait_required(cwd).await.map_err(anyhow::Error::msg)?;
    let starting = mcp.starting(cwd);
    if !starting.is_empty() {
        eprintln!("waiting for MCP servers to start: {}", starting.join(", "));
    }
    for (server, error) in mcp.wait_started(cwd).await {
        eprintln!("MCP server '{server}' did not start, its tools are not offered: {error}");
    }
    Ok(())
}

/// A continued thread keeps its settings, except what this command line sets: the
/// policies always (a headless run cannot ask), the model and cwd when given.
fn continued_change(
    start: &SessionStart,
    common: &args::CommonArgs,
    opts: &RunOptions,
    cwd: &Path,
) -> SettingsChange {
    match start {
        SessionStart::New => SettingsChange::default(),
        _ => SettingsChange {
            model: common.model.clone(),
            cwd: common.cd.as_ref().map(|_| cwd.to_path_buf()),
            approval_policy: Some(opts.approval_policy),
            sandbox_policy: Some(opts.sandbox_policy),
            ..SettingsChange::default()
        },
    }
}

/// JSON lines with `--json`, else the human view (colour and live lines on a terminal).
fn output_mode(common: &args::CommonArgs) -> OutputMode {
    if common.json || common.experimental_json {
        OutputMode::Json
    } else {
        OutputMode::Human(Style {
            color: use_color(common.color),
            live: std::io::stderr().is_terminal(),
        })
    }
}

/// After the turn: the final message to stdout (human mode), `-o`, the schema check.
fn finish(
    outcome: &Outcome,
    common: &args::CommonArgs,
    schema: Option<&OutputSchema>,
) -> anyhow::Result<i32> {
    if let Some(signal) = outcome.interrupted_by {
        // A partial answer is not an answer: print nothing a script could mistake for one.
        eprintln!("interrupted");
        return Ok(signal.exit_code());
    }
    let message = outcome.final_message.as_deref();
    if let Some(path) = &common.output_last_message {
        std::fs::write(path, message.unwrap_or_default())
            .with_context(|| format!("writing the last message to {}", path.display()))?;
    }
    if !(common.json || common.experimental_json) {
        if let Some(text) = message {
            print_final_message(text, outcome.final_message_streamed)?;
        }
    }
    if !outcome.completed {
        return Ok(1);
    }
    if let Some(schema) = schema {
        if let Err(e) = schema.check(message) {
            eprintln!("error: {e}");
            return Ok(1);
        }
    }
    Ok(0)
}

/// The final message of a human-mode run. Captured (stdout a pipe or a file), it goes to
/// stdout alone, so `rein exec "..." > answer.txt` holds just the answer. When stdout and
/// stderr are the same terminal, the answer streamed on stderr is already on screen, so it
/// is not printed again (as `codex exec` does); if it was not streamed, it is shown once,
/// on stderr with the rest of the progress.
fn print_final_message(text: &str, streamed: bool) -> std::io::Result<()> {
    let on_one_screen = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    if !on_one_screen {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{text}")?;
        return stdout.flush();
    }
    if !streamed {
        eprintln!("{text}");
    }
    Ok(())
}

/// The session to work on and the prompt argument, from the subcommand.
fn session_start(args: &ExecArgs) -> anyhow::Result<(SessionStart, Option<&str>)> {
    let parse = |id: &str| -> anyhow::Result<ThreadId> {
        id.parse()
            .map_err(|_| anyhow::anyhow!("`{id}` is not a session id (see `rein sessions list`)"))
    };
    Ok(match &args.command {
        None => (SessionStart::New, args.prompt.as_deref()),
        Some(ExecCommand::Resume(r)) => {
            if r.last {
                // With `--last` the one positional argument is the prompt, as in Codex.
                let prompt = r.prompt.as_deref().or(r.session_id.as_deref());
                if r.prompt.is_some() && r.session_id.is_some() {
                    bail!("give either a session id or --last, not both");
                }
                (
                    SessionStart::Resume(ResumeTarget::Last { all: r.all }),
                    prompt,
                )
            } else {
                let Some(id) = &r.session_id else {
                    bail!("name the session to resume, or use --last");
                };
                (
                    SessionStart::Resume(ResumeTarget::Id(parse(id)?)),
                    r.prompt.as_deref(),
                )
            }
        }
        Some(ExecCommand::Fork(f)) => {
            let at_turn = match f.at {
                Some(0) => bail!("--at counts turns from 1"),
                Some(n) => Some(n as usize - 1),
                None => None,
            };
            (
                SessionStart::Fork {
                    parent: parse(&f.session_id)?,
                    at_turn,
                },
                f.prompt.as_deref(),
            )
        }
    })
}

fn working_dir(cd: Option<&Path>) -> anyhow::Result<PathBuf> {
    let here = std::env::current_dir().context("reading the current directory")?;
    let Some(dir) = cd else { return Ok(here) };
    let dir = here.join(dir);
    if !dir.is_dir() {
        bail!("--cd {}: not a directory", dir.display());
    }
    dir.canonicalize()
        .with_context(|| format!("resolving --cd {}", dir.display()))
}

/// `--add-dir` directories, absolute; each must exist.
fn add_dirs(cwd: &Path, dirs: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    dirs.iter()
        .map(|d| {
            let dir = cwd.join(d);
            dir.canonicalize()
                .with_context(|| format!("--add-dir {}", dir.display()))
        })
        .collect()
}

fn join_instructions(base: &str, extra: &str) -> String {
    if base.trim().is_empty() {
        extra.to_owned()
    } else {
        format!("{base}\n\n{extra}")
    }
}

fn use_color(mode: ColorMode) -> bool {
    match mode {
        ColorMode::Always => true,
        ColorMode::Never => false,
        ColorMode::Auto => {
            std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
        }
    }
}
