//! The `rein` binary: a thin layer that turns command lines into kernel calls. Each
//! subcommand lives in its own module.
// Printing to stdout is this binary's job.
#![allow(clippy::print_stdout)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod acp_cmd;
mod app_server_cmd;
mod exec;
mod hooks_cmd;
mod memory_cmd;
mod mock_model_cmd;
mod replay_cmd;
mod schema_cmd;
mod serve_cmd;
mod sessions_cmd;
mod skills_cmd;
mod ws_auth;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "rein", version, about = "rein — an agent harness kernel")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an agent turn headless (Codex `exec` compatible).
    Exec(Box<exec::ExecArgs>),
    /// Serve the JSON-RPC app-server protocol (Codex app-server v2 compatible).
    AppServer(app_server_cmd::AppServerArgs),
    /// Serve the Agent Client Protocol (ACP v1) on stdio, for editors such as Zed.
    Acp(acp_cmd::AcpArgs),
    /// Serve the agent over HTTP: OpenAI's Responses API (`/v1/responses`).
    Serve(serve_cmd::ServeArgs),
    /// Serve a scripted model over HTTP (Responses and Chat Completions).
    MockModel(mock_model_cmd::MockModelArgs),
    /// List and show persisted sessions.
    Sessions(sessions_cmd::SessionsArgs),
    /// The skills of a directory, Codex's and Claude Code's.
    Skills(skills_cmd::SkillsArgs),
    /// The hooks of a directory, and trusting a project's hooks.
    Hooks(hooks_cmd::HooksArgs),
    /// The agent's memories: list, search, add, forget, purge, export, import.
    Memory(memory_cmd::MemoryArgs),
    /// Run recorded sessions again and compare each step's request and tool calls.
    Replay(replay_cmd::ReplayArgs),
    /// Write the JSON Schema of rein's wire types into a directory.
    Schema {
        #[arg(long, default_value = "schema")]
        out: std::path::PathBuf,
    },
}

fn main() -> anyhow::Result<()> {
    // A sandboxed command's trampoline: confine this fresh process and exec the command.
    rein_tools::sandbox::launch::run_if_trampoline();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    launch_commands_through_this_binary();
    raise_open_file_limit();
    let cli = Cli::parse();
    match cli.command {
        Command::Exec(args) => {
            let code = runtime()?.block_on(exec::run(*args))?;
            std::process::exit(code);
        }
        Command::AppServer(args) => runtime()?.block_on(app_server_cmd::run(args)),
        Command::Acp(args) => runtime()?.block_on(acp_cmd::run(args)),
        Command::Serve(args) => runtime()?.block_on(serve_cmd::run(args)),
        Command::MockModel(args) => runtime()?.block_on(mock_model_cmd::run(args)),
        Command::Sessions(args) => sessions_cmd::run(args),
        Command::Skills(args) => runtime()?.block_on(skills_cmd::run(args)),
        Command::Hooks(args) => hooks_cmd::run(args),
        Command::Memory(args) => memory_cmd::run(args),
        Command::Replay(args) => {
            let code = runtime()?.block_on(replay_cmd::run(args))?;
            std::process::exit(code);
        }
        Command::Schema { out } => schema_cmd::write_all(&out),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Raise the soft limit on open files to the hard limit: a server with many threads, each
/// running commands, should not fail at the common default of 1,024 when the system allows
/// more. (Idle threads hold no file; this is headroom for the busy ones.)
fn raise_open_file_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::debug!("cannot raise the open-file limit: {e}");
        }
    }
}

/// Sandboxed commands are launched through this binary re-executed as their trampoline
/// (spawned without copying the server, see `rein_tools::sandbox::launch`);
/// `REIN_SANDBOX_SPAWN=fork` keeps the older fork-with-hook launch (for comparing the two).
fn launch_commands_through_this_binary() {
    if std::env::var_os("REIN_SANDBOX_SPAWN").is_some_and(|v| v == "fork") {
        return;
    }
    // /proc/self/exe, not the path: the binary running now, even if replaced on disk.
    if let Err(why) = rein_tools::sandbox::launch::launch_through("/proc/self/exe".into()) {
        tracing::warn!("{why}");
    }
}
