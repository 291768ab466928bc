//! `rein app-server`: JSON-RPC over stdio for IDE clients (Codex app-server v2 protocol),
//! and `rein app-server generate-json-schema --out DIR` for rein's own schema of it.
//!
//! SIGTERM and SIGINT end the server the way the end of its input does: every thread is
//! shut down (its turn aborted, its commands and background terminals killed, its rollout
//! flushed) and the process exits 0. A second signal exits at once.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use std::net::SocketAddr;

use rein_app_server::{ws, ConnectionLimits, KernelSource};
use rein_bootstrap::{bootstrap, BootstrapOptions};
use rein_tools::sandbox::Sandbox;
use tokio::io::{AsyncBufRead, AsyncRead, ReadBuf};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::Notify;

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
    /// WebSocket only: a file holding the bearer token clients must send (by default,
    /// rein's own token in `$REIN_HOME/app-server-ws-token`, made on first start).
    #[arg(long)]
    ws_token_file: Option<PathBuf>,
    /// WebSocket on loopback only: accept clients without a token.
    #[arg(long)]
    no_auth: bool,
    /// WebSocket only: a host name clients may give in `Host` besides the bound address
    /// (and `localhost` on loopback); repeatable.
    #[arg(long = "ws-allow-host")]
    ws_allow_hosts: Vec<String>,
    /// WebSocket only: sockets open at once (handshaking or not); one more is answered 503.
    #[arg(long, default_value_t = ws::WsOptions::default().max_connections)]
    max_connections: usize,
    /// WebSocket only: how long a socket may take to finish its upgrade, and then to send
    /// its first message, before it is closed.
    #[arg(long, default_value_t = 10_000)]
    handshake_timeout_ms: u64,
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
    let ws_addr = listen_addr(&args.listen)?;
    if ws_addr.is_none() && (args.no_auth || args.ws_token_file.is_some()) {
        bail!("--no-auth and --ws-token-file apply to --listen ws://… only");
    }
    let stop = stop_on_signals()?;
    let env = |k: &str| std::env::var(k).ok();
    let home =
        rein_config::rein_home(&env).context("cannot find rein's home: set REIN_HOME or HOME")?;
    // Which sandbox is active is said once, at startup; `initialize` answers it too, from
    // the verdict cached in the home when it is still good.
    Sandbox::cache_verdict_in(&home);
    std::thread::spawn(|| eprintln!("rein: {}", Sandbox::detected().report().summary()));
    let auth = match ws_addr {
        Some(addr) => Some(crate::ws_auth::resolve(
            addr,
            &home,
            args.ws_token_file.as_deref(),
            args.no_auth,
        )?),
        None => None,
    };
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
    let (Some(addr), Some(auth)) = (ws_addr, auth) else {
        return serve_stdio(kernel, limits, stop).await;
    };
    let listener = ws::bind(addr).await?;
    let url = format!("ws://{}", listener.local_addr()?);
    eprintln!("{}", auth.announce(&url));
    // The first line of stdout is the bound URL, so a parent process can read it.
    println!("{url}");
    let options = ws::WsOptions {
        limits,
        token: auth.token(),
        allowed_hosts: args.ws_allow_hosts.clone(),
        max_connections: args.max_connections.max(1),
        handshake_timeout: std::time::Duration::from_millis(args.handshake_timeout_ms),
    };
    tokio::select! {
        served = ws::serve_ws(kernel.clone(), listener, options) => served?,
        // Rollouts are durable event by event; sandboxed commands die with the process.
        () = stop.notified() => {}
    }
    stop_mcp_servers(&kernel).await;
    Ok(())
}

/// `--listen`: `stdio://` (none) or `ws://IP:PORT`.
fn listen_addr(listen: &str) -> anyhow::Result<Option<SocketAddr>> {
    match listen {
        "stdio://" => Ok(None),
        other => match other.strip_prefix("ws://") {
            Some(addr) => {
                Ok(Some(addr.trim_end_matches('/').parse().with_context(
                    || format!("--listen {other}: expected ws://IP:PORT"),
                )?))
            }
            None => bail!("--listen {other}: expected stdio:// or ws://IP:PORT"),
        },
    }
}

/// One connection on stdin and stdout, until it ends or a signal stops it.
async fn serve_stdio(
    kernel: KernelSource,
    limits: ConnectionLimits,
    stop: Arc<Notify>,
) -> anyhow::Result<()> {
    let stdin = tokio::io::BufReader::with_capacity(64 * 1024, tokio::io::stdin());
    let input = UntilStopped::new(stdin, stop);
    rein_app_server::serve(kernel.clone(), input, tokio::io::stdout(), limits).await?;
    stop_mcp_servers(&kernel).await;
    if STOPPED.load(Ordering::SeqCst) {
        // Every thread is shut down and every answer written; what is left is the
        // runtime's thread blocked reading stdin, which would hold the exit forever.
        std::process::exit(0);
    }
    Ok(())
}

/// Stop the MCP servers of a kernel that was built, so none outlives the process.
async fn stop_mcp_servers(kernel: &KernelSource) {
    if let Ok(kernel) = kernel.get().await {
        if let Some(mcp) = &kernel.mcp {
            mcp.shutdown().await;
        }
    }
}

/// Set by the first SIGTERM or SIGINT.
static STOPPED: AtomicBool = AtomicBool::new(false);

/// A notification raised by the first SIGTERM or SIGINT; the second exits at once.
fn stop_on_signals() -> anyhow::Result<Arc<Notify>> {
    let mut sigterm = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut sigint = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let stop = Arc::new(Notify::new());
    let raised = Arc::clone(&stop);
    tokio::spawn(async move {
        let first = tokio::select! {
            _ = sigterm.recv() => 143,
            _ = sigint.recv() => 130,
        };
        tracing::info!("signal received: shutting down");
        STOPPED.store(true, Ordering::SeqCst);
        // `notify_one` keeps the permit for a waiter that comes later.
        raised.notify_one();
        tokio::select! {
            _ = sigterm.recv() => {}
            _ = sigint.recv() => {}
        }
        std::process::exit(first);
    });
    Ok(stop)
}

/// The client's input, ended early (as if the client had closed it) once `stop` fires.
struct UntilStopped<R> {
    inner: R,
    stop: Pin<Box<dyn Future<Output = ()> + Send>>,
    stopped: bool,
}

impl<R> UntilStopped<R> {
    fn new(inner: R, stop: Arc<Notify>) -> Self {
        Self {
            inner,
            stop: Box::pin(async move { stop.notified().await }),
            stopped: false,
        }
    }

    fn poll_stopped(&mut self, cx: &mut TaskContext<'_>) -> bool {
        if !self.stopped && self.stop.as_mut().poll(cx).is_ready() {
            self.stopped = true;
        }
        self.stopped
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for UntilStopped<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.poll_stopped(cx) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<R: AsyncBufRead + Unpin> AsyncBufRead for UntilStopped<R> {
    fn poll_fill_buf(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<std::io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.poll_stopped(cx) {
            return Poll::Ready(Ok(&[]));
        }
        Pin::new(&mut this.inner).poll_fill_buf(cx)
    }

    fn consume(mut self: Pin<&mut Self>, amt: usize) {
        Pin::new(&mut self.inner).consume(amt);
    }
}

fn write_schema(out: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    for (name, text) in rein_app_server_protocol::schema::rendered() {
        let path = out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(())
}
