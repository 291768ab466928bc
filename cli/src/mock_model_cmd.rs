//! `rein mock-model --script FILE --listen ADDR [--log FILE]`: the HTTP face of the
//! scripted model, for end-to-end tests and benchmarks (of rein and of Codex alike).

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

#[derive(Args)]
pub struct MockModelArgs {
    /// The script to play (JSON; see docs/scripted-model.md).
    #[arg(long)]
    script: PathBuf,
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Append every request body received to this JSONL file.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Answer every request whose input ends with a tool's output with this reply (a
    /// scripted reply as JSON) instead of the next one of the script.
    #[arg(long, value_name = "JSON")]
    after_tool_output: Option<String>,
}

pub async fn run(args: MockModelArgs) -> anyhow::Result<()> {
    let script = rein_mock_model::load_script(&args.script)
        .with_context(|| format!("loading the script {}", args.script.display()))?;
    let server = rein_mock_model::serve(script, args.listen, args.log)
        .await
        .context("starting the mock model server")?;
    if let Some(json) = &args.after_tool_output {
        let reply = serde_json::from_str(json).context("--after-tool-output: a scripted reply")?;
        server.answer_tool_outputs_with(reply);
    }
    // The first line of stdout is the base URL, so a parent process can read it.
    println!("{}", server.base_url());
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    server.shutdown().await;
    Ok(())
}
