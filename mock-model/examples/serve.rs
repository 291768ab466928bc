//! Serve a script until Ctrl-C, the way `rein mock-model` does:
//! `cargo run -p rein-mock-model --example serve -- SCRIPT.json [ADDR] [LOG.jsonl]`
//! Prints the base URL to point a provider's `base_url` at.
#![allow(clippy::print_stdout)]

use std::path::PathBuf;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let script_path = PathBuf::from(args.next().ok_or("usage: serve SCRIPT [ADDR] [LOG]")?);
    let addr = args
        .next()
        .unwrap_or_else(|| "127.0.0.1:0".into())
        .parse()?;
    let log = args.next().map(PathBuf::from);
    let script = rein_mock_model::load_script(&script_path)?;
    let server = rein_mock_model::serve(script, addr, log).await?;
    println!("{}", server.base_url());
    tokio::signal::ctrl_c().await?;
    server.shutdown().await;
    Ok(())
}
