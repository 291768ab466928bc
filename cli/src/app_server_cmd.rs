//! `rein app-server`: JSON-RPC over stdio for IDE clients (Codex app-server v2 protocol),
//! and `rein app-server generate-json-schema --out DIR` for rein's own schema of it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use rein_app_server::ConnectionLimits;
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
    /// Where to serve: `stdio://` (the default).
    #[arg(long, default_value = "stdio://")]
    listen: String,
    /// Longest accepted message, in bytes; longer lines are answered with an error.
    #[arg(long, default_value_t = 16 * 1024 * 1024)]
    max_message_bytes: usize,
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
    if args.listen != "stdio://" {
        bail!(
            "--listen {}: only stdio:// is supported so far",
            args.listen
        );
    }
    let env = |k: &str| std::env::var(k).ok();
    let kernel = bootstrap(
        BootstrapOptions {
            demo: args.demo,
            overrides: args.overrides.clone(),
            profile: args.profile.clone(),
            ..BootstrapOptions::default()
        },
        &env,
    )
    .context(
        "setting up the model (or run `rein app-server --demo` for the built-in scripted model)",
    )?;
    let limits = ConnectionLimits {
        max_line_bytes: args.max_message_bytes,
        ..ConnectionLimits::default()
    };
    rein_app_server::serve_stdio(Arc::new(kernel), limits).await?;
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
