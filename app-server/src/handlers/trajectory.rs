//! `rein/thread/trajectory` (experimental, rein's own): a thread's trajectory projected
//! from its rollout, the same value `rein sessions trajectory --json` prints. Only for
//! connections that opted into the experimental API at `initialize`.

use rein_app_server_protocol::{ThreadIdParams, TrajectoryResponse};
use rein_core::trajectory;
use rein_protocol::ThreadId;

use super::thread::store_error;
use crate::dispatch::{wire_id, ServerState};
use crate::error::RpcError;

pub const METHOD: &str = "rein/thread/trajectory";

pub async fn trajectory(
    state: &ServerState,
    p: ThreadIdParams,
) -> Result<TrajectoryResponse, RpcError> {
    if !state.experimental() {
        return Err(RpcError::invalid_request(format!(
            "{METHOD} is experimental: initialize with capabilities.experimentalApi = true"
        )));
    }
    let id: ThreadId = wire_id(&p.thread_id, "threadId", "thread")?;
    let loaded = state.kernel.store().read(id).await.map_err(store_error)?;
    let turns = trajectory::project(&loaded.events);
    Ok(TrajectoryResponse {
        thread_id: id.to_string(),
        turns: serde_json::to_value(turns).map_err(RpcError::internal)?,
    })
}
