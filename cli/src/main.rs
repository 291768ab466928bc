//! The `rein` binary: a thin layer that turns command lines into kernel calls.
// Printing to stdout is this binary's job.
#![allow(clippy::print_stdout)]

mod demo;
mod exec;
mod schema_cmd;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "rein", version, about = "rein — an agent harness kernel")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one turn headless and print the answer.
    Exec(exec::ExecArgs),
    /// Write the JSON Schema of rein's wire types into a directory.
    Schema {
        #[arg(long, default_value = "schema")]
        out: std::path::PathBuf,
    },
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Exec(args) => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            let code = runtime.block_on(exec::run(args))?;
            std::process::exit(code);
        }
        Command::Schema { out } => schema_cmd::write_all(&out),
    }
}
