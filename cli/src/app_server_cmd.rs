//! `rein app-server`: JSON-RPC over stdio for IDE clients.

use clap::Args;

#[derive(Args)]
pub struct AppServerArgs {}

pub async fn run(_args: AppServerArgs) -> anyhow::Result<()> {
    anyhow::bail!("the app-server is not implemented yet")
}
