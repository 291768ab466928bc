//! `rein hooks list|trust [-C DIR]`: the hooks a thread in a directory would have, with
//! their trust, and trusting a project's hooks (their current hashes recorded under
//! `[hooks.state."KEY"] trusted_hash` in config.toml, as Codex records them).

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use rein_bootstrap::hooks::TrustStatus;
use rein_bootstrap::{hooks_of, BootstrapOptions};

#[derive(Args)]
pub struct HooksArgs {
    #[command(subcommand)]
    command: HooksCommand,
}

#[derive(Args)]
struct Where {
    /// The directory whose hooks to read (default: the current one).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    cd: Option<PathBuf>,
    /// Override a configuration value (`key=value`, TOML value).
    #[arg(short = 'c', long = "config")]
    overrides: Vec<String>,
}

#[derive(Subcommand)]
enum HooksCommand {
    /// List the hooks of a directory and whether each runs.
    List {
        #[command(flatten)]
        at: Where,
    },
    /// Trust the project hooks of a directory as they are now (all of them, or `--key`).
    Trust {
        #[command(flatten)]
        at: Where,
        /// Trust only this hook (its key, as `rein hooks list` prints it).
        #[arg(long)]
        key: Vec<String>,
    },
}

pub fn run(args: HooksArgs) -> anyhow::Result<()> {
    let (at, keys, trust) = match args.command {
        HooksCommand::List { at } => (at, Vec::new(), false),
        HooksCommand::Trust { at, key } => (at, key, true),
    };
    let cwd = match at.cd {
        Some(dir) => std::fs::canonicalize(&dir).with_context(|| format!("{}", dir.display()))?,
        None => std::env::current_dir()?,
    };
    let env = |k: &str| std::env::var(k).ok();
    let options = BootstrapOptions {
        overrides: at.overrides,
        ..BootstrapOptions::default()
    };
    let (found, config_path) =
        hooks_of(&options, &env, &cwd).context("reading the configuration")?;
    if !trust {
        for hook in &found.hooks {
            println!(
                "{}\t{}\t{}\t{}\n\t{}\n\t{}",
                hook.trust.as_str(),
                hook.def.event.as_str(),
                hook.def.matcher.source(),
                hook.def.command,
                hook.key,
                hook.hash
            );
        }
        for warning in &found.warnings {
            eprintln!("warning: {warning}");
        }
        return Ok(());
    }
    let entries: Vec<(String, String)> = found
        .hooks
        .iter()
        .filter(|h| h.trust != TrustStatus::Trusted)
        .filter(|h| keys.is_empty() || keys.contains(&h.key))
        .map(|h| (h.key.clone(), h.hash.clone()))
        .collect();
    for key in &keys {
        if !found.hooks.iter().any(|h| h.key == *key) {
            anyhow::bail!("no hook has the key `{key}` in {}", cwd.display());
        }
    }
    rein_config::hooks_state::trust(&config_path, &entries)
        .with_context(|| format!("writing {}", config_path.display()))?;
    for (key, hash) in &entries {
        println!("trusted {key} ({hash})");
    }
    Ok(())
}
