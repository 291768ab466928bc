//! `rein serve`: the agent over HTTP (OpenAI's Responses API, `rein_serve`). Same
//! configuration, home and sessions as the other front ends. A bearer token is always
//! required: rein's own, made on first start into `$REIN_HOME/serve-token` (mode 0600), or
//! the one in `--token-file`. The bound URL is the first line of stdout.
//!
//! SIGTERM and SIGINT stop the server: every thread is shut down (a running turn aborted,
//! its rollout flushed) and the process exits 0.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use rein_bootstrap::{bootstrap, BootstrapOptions};
use rein_serve::ServeOptions;
use tokio::signal::unix::{signal, SignalKind};

use crate::ws_auth::{self, WsAuth};

/// Where the server keeps its own token, under rein's home.
const TOKEN_FILE: &str = "serve-token";

#[derive(Args)]
pub struct ServeArgs {
    /// The address to listen on (port 0 picks one).
    #[arg(long, default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
    /// Use the built-in scripted model (no API key needed).
    #[arg(long)]
    demo: bool,
    /// Override a configuration value (`key=value`, TOML value).
    #[arg(short = 'c', long = "config")]
    overrides: Vec<String>,
    /// The configuration profile to use.
    #[arg(long)]
    profile: Option<String>,
    /// The working directory of the threads the server starts (default: the current one).
    #[arg(long = "cd", short = 'C')]
    cd: Option<PathBuf>,
    /// A file holding the bearer token clients must send (by default rein's own, in
    /// `$REIN_HOME/serve-token`, made on first start).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// A host name clients may give in `Host` besides the bound address (and `localhost`
    /// on loopback); repeatable.
    #[arg(long = "allow-host")]
    allow_hosts: Vec<String>,
    /// Turns running at once; a request for one more is answered 429.
    #[arg(long, default_value_t = 64)]
    max_runs: usize,
    /// How long a thread stays loaded after its turn, idle; then its session is free for
    /// `rein exec resume` and the other front ends.
    #[arg(long, default_value_t = 30_000)]
    idle_unload_ms: u64,
    /// Who answers a command's or patch's approval request: `decline` (nobody: declined at
    /// once) or `http` (the client, at `POST /v1/responses/{id}/approvals/{request_id}`;
    /// the turn waits).
    #[arg(long, default_value = "decline", value_parser = ["decline", "http"])]
    approvals: String,
    /// How long a client may take to send a request's headers (then the connection is
    /// closed), and then its body (then it is answered 400).
    #[arg(long, default_value_t = 30_000)]
    read_timeout_ms: u64,
    /// Longest accepted request body, in bytes (413 beyond).
    #[arg(long, default_value_t = 16 * 1024 * 1024)]
    max_body_bytes: usize,
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let env = |k: &str| std::env::var(k).ok();
    let home =
        rein_config::rein_home(&env).context("cannot find rein's home: set REIN_HOME or HOME")?;
    rein_tools::sandbox::Sandbox::cache_verdict_in(&home);
    let auth = ws_auth::resolve_named(
        args.listen,
        &home,
        args.token_file.as_deref(),
        false,
        TOKEN_FILE,
    )?;
    let WsAuth::Token { token, .. } = &auth else {
        anyhow::bail!("rein serve always requires a token");
    };
    let cwd = match &args.cd {
        Some(dir) => dir
            .canonicalize()
            .with_context(|| format!("--cd {}", dir.display()))?,
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let kernel = bootstrap(
        BootstrapOptions {
            demo: args.demo,
            overrides: args.overrides.clone(),
            profile: args.profile.clone(),
            home: Some(home),
            ..BootstrapOptions::default()
        },
        &env,
    )
    .context("setting up the model (or run `rein serve --demo` for the built-in scripted model)")?;
    let kernel = Arc::new(kernel);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let url = format!("http://{}", listener.local_addr()?);
    eprintln!("{}", auth.announce(&format!("{url}/v1")));
    // The first line of stdout is the bound URL, so a parent process can read it.
    println!("{url}");
    let mut options = ServeOptions::new(token.clone(), cwd);
    options.allowed_hosts = args.allow_hosts.clone();
    options.max_runs = args.max_runs.max(1);
    options.max_body_bytes = args.max_body_bytes;
    options.idle_unload = std::time::Duration::from_millis(args.idle_unload_ms);
    options.read_timeout = std::time::Duration::from_millis(args.read_timeout_ms.max(1));
    options.approvals = match args.approvals.as_str() {
        "http" => rein_serve::Approvals::Http,
        _ => rein_serve::Approvals::Decline,
    };
    let mut sigterm = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut sigint = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    tokio::select! {
        served = rein_serve::serve(Arc::clone(&kernel), listener, options) => served?,
        _ = sigterm.recv() => {}
        _ = sigint.recv() => {}
    }
    // Every thread shut down and its rollout durable; no MCP server left running.
    kernel.shutdown().await;
    Ok(())
}
