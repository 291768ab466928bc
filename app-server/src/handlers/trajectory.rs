//! `rein/thread/trajectory` (experimental, rein's own): a thread's trajectory projected
//! from its rollout, the same value `rein sessions trajectory --json` prints. Only for
//! connections that opted into the experimental API at `initialize`.

use rein_app_server_protocol::ThreadIdParams;
use rein_core::trajectory;
use rein_protocol::ThreadId;
use serde_json::{json, Value};

use super::thread::store_error;
use crate::dispatch::{params, wire_id, ServerState};
use crate::error::RpcError;

pub const METHOD: &str = "rein/thread/trajectory";

pub async fn trajectory(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    if !state.experimental() {
        return Err(RpcError::invalid_request(format!(
            "{METHOD} is experimental: initialize with capabilities.experimentalApi = true"
        )));
    }
    let p: ThreadIdParams = params(raw)?;
    let id: ThreadId = wire_id(&p.thread_id, "threadId", "thread")?;
    let loaded = state.kernel.store().read(id).await.map_err(store_error)?;
    let turns = trajectory::project(&loaded.events);
    Ok(json!({ "threadId": id.to_string(), "turns": turns }))
}
