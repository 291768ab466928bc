//! `rein skills list [--json] [-C DIR]`: the skills a thread in a directory would have,
//! Codex's and Claude Code's, and the ones that could not be read. `--json` prints the
//! `skills/list` entry of the app-server.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use rein_bootstrap::{list_skills, skills_config, BootstrapOptions};

#[derive(Args)]
pub struct SkillsArgs {
    #[command(subcommand)]
    command: SkillsCommand,
}

#[derive(Subcommand)]
enum SkillsCommand {
    /// List the skills of a directory (default: the current one).
    List {
        /// Print the `skills/list` entry as JSON.
        #[arg(long)]
        json: bool,
        /// The directory whose skills to list.
        #[arg(short = 'C', long = "cd", value_name = "DIR")]
        cd: Option<PathBuf>,
        /// Override a configuration value (`key=value`, TOML value).
        #[arg(short = 'c', long = "config")]
        overrides: Vec<String>,
    },
}

pub async fn run(args: SkillsArgs) -> anyhow::Result<()> {
    let SkillsCommand::List {
        json,
        cd,
        overrides,
    } = args.command;
    let cwd = match cd {
        Some(dir) => std::fs::canonicalize(&dir).with_context(|| format!("{}", dir.display()))?,
        None => std::env::current_dir()?,
    };
    let env = |k: &str| std::env::var(k).ok();
    let config = skills_config(
        &BootstrapOptions {
            overrides,
            ..BootstrapOptions::default()
        },
        &env,
    )
    .context("reading the configuration")?;
    let outcome = list_skills(config, cwd.clone()).await;
    if json {
        let entry = rein_app_server::handlers::skills::entry(cwd.display().to_string(), &outcome);
        println!("{}", serde_json::to_string(&entry)?);
    } else {
        for skill in &outcome.skills {
            let invocation = match (skill.enabled, skill.allow_implicit) {
                (false, _) => " (disabled)",
                (true, true) => "",
                (true, false) => " (explicit only)",
            };
            println!(
                "{}\t{}{invocation}\t{}\n\t{}",
                skill.name,
                skill.scope.as_str(),
                skill.path.display(),
                skill.description
            );
        }
        for error in &outcome.errors {
            eprintln!("error: {}: {}", error.path.display(), error.message);
        }
    }
    Ok(())
}
