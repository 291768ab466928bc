//! `rein acp`: an Agent Client Protocol (ACP v1) agent on stdio, for editors (Zed,
//! JetBrains, Neovim). Same configuration, home and sessions as `exec` and `app-server`.
//! Stdout carries the protocol only; everything else goes to stderr.

use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use rein_bootstrap::{bootstrap, BootstrapOptions};
use rein_tools::sandbox::Sandbox;

#[derive(Args)]
pub struct AcpArgs {
    /// Use the built-in scripted model (no API key needed).
    #[arg(long)]
    demo: bool,
    /// Override a configuration value (`key=value`, TOML value).
    #[arg(short = 'c', long = "config")]
    overrides: Vec<String>,
    /// The configuration profile to use.
    #[arg(long)]
    profile: Option<String>,
}

pub async fn run(args: AcpArgs) -> anyhow::Result<()> {
    if let Some(home) = rein_config::rein_home(&|k: &str| std::env::var(k).ok()) {
        Sandbox::cache_verdict_in(&home);
    }
    std::thread::spawn(|| eprintln!("rein: {}", Sandbox::detected().report().summary()));
    let options = BootstrapOptions {
        demo: args.demo,
        overrides: args.overrides,
        profile: args.profile,
        ..BootstrapOptions::default()
    };
    let env = |k: &str| std::env::var(k).ok();
    let kernel = bootstrap(options, &env).context(
        "starting the kernel (or run `rein acp --demo` for the built-in scripted model)",
    )?;
    rein_acp::serve(Arc::new(kernel), rein_acp::Stdio::new()).await?;
    Ok(())
}
