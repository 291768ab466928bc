//! `rein app-server`: JSON-RPC over stdio for IDE clients (Codex app-server v2 protocol),
//! and `rein app-server generate-json-schema --out DIR` for rein's own schema of it.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use std::net::SocketAddr;

use rein_app_server::{ws, ConnectionLimits, KernelSource};
use rein_core::bootstrap::{bootstrap, BootstrapOptions};

#[derive(Args)]
pub struct AppServerArgs {
    #[command(subcommand)]
    command: Option<AppServerCommand>,
    /// Use the built-in scripted model (no API key needed).
    #[arg(long)]
    demo: bool,
    /// Override a configuration value (`key=value`, TOML value).
    #[arg(short = 'c', long = "config")]
    overrides: Vec<String>,
    /// The configuration profile to use.
    #[arg(long)]
    profile: Option<String>,
    /// Where to serve: `stdio://` (the default) or `ws://HOST:PORT` (port 0 picks one; the
    /// bound URL is printed as the first line of stdout).
    #[arg(long, default_value = "stdio://")]
    listen: String,
    /// WebSocket only: a file holding the bearer token clients must send.
    #[arg(long)]
    ws_token_file: Option<PathBuf>,
    /// Longest accepted message, in bytes; longer lines are answered with an error.
    #[arg(long, default_value_t = 16 * 1024 * 1024)]
    max_message_bytes: usize,
    /// How long a thread stays loaded, idle, after its last subscriber leaves (0: unload
    /// as soon as it is idle).
    #[arg(long, default_value_t = 30_000)]
    idle_unload_ms: u64,
    /// Messages queued for one client before it counts as lagging (WebSocket: it is
    /// disconnected; stdio: the server waits). Small values let tests reach the limit fast.
    #[arg(long, hide = true, default_value_t = ConnectionLimits::default().outbound_queue)]
    outbound_queue: usize,
}

#[derive(Subcommand)]
enum AppServerCommand {
    /// Write the JSON Schema of rein's app-server messages into a directory.
    GenerateJsonSchema {
        #[arg(long)]
        out: PathBuf,
    },
}

pub async fn run(args: AppServerArgs) -> anyhow::Result<()> {
    if let Some(AppServerCommand::GenerateJsonSchema { out }) = &args.command {
        return write_schema(out);
    }
    let ws_addr: Option<SocketAddr> = match args.listen.as_str() {
        "stdio://" => None,
        other => match other.strip_prefix("ws://") {
            Some(addr) => Some(
                addr.trim_end_matches('/')
                    .parse()
                    .with_context(|| format!("--listen {other}: expected ws://IP:PORT"))?,
            ),
            None => bail!("--listen {other}: expected stdio:// or ws://IP:PORT"),
        },
    };
    let token = match &args.ws_token_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading the token file {}", path.display()))?
                .trim()
                .to_owned(),
        ),
        None => None,
    };
    let env = |k: &str| std::env::var(k).ok();
    let home = rein_core::config::rein_home(&env)
        .context("cannot find rein's home: set REIN_HOME or HOME")?;
    let options = BootstrapOptions {
        demo: args.demo,
        overrides: args.overrides.clone(),
        profile: args.profile.clone(),
        home: Some(home.clone()),
        ..BootstrapOptions::default()
    };
    // Built while the first request (`initialize`) is read and answered.
    let kernel = KernelSource::building(home, move || {
        let env = |k: &str| std::env::var(k).ok();
        bootstrap(options, &env).map_err(|e| {
            format!("{e} (or run `rein app-server --demo` for the built-in scripted model)")
        })
    });
    let limits = ConnectionLimits {
        max_line_bytes: args.max_message_bytes,
        idle_unload: std::time::Duration::from_millis(args.idle_unload_ms),
        outbound_queue: args.outbound_queue,
        ..ConnectionLimits::default()
    };
    let Some(addr) = ws_addr else {
        rein_app_server::serve_stdio(kernel, limits).await?;
        return Ok(());
    };
    if !addr.ip().is_loopback() && token.is_none() {
        tracing::warn!("serving {addr} beyond loopback without --ws-token-file");
    }
    let listener = ws::bind(addr).await?;
    // The first line of stdout is the bound URL, so a parent process can read it.
    println!("ws://{}", listener.local_addr()?);
    ws::serve_ws(kernel, listener, ws::WsOptions { limits, token }).await?;
    Ok(())
}

fn write_schema(out: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    for (name, text) in rein_protocol::app_server::schema::rendered() {
        let path = out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(())
}
