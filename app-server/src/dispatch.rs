//! Routing one request to its handler: the initialization gate, typed param decoding
//! (-32602 naming the field), and unknown methods (-32601).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rein_core::bootstrap::Kernel;
use rein_protocol::app_server::RequestId;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::RpcError;
use crate::handlers;
use crate::loaded::LoadedThreads;
use crate::outbound::Outbound;
use crate::pump::{PendingRequests, PumpCmd, PumpRequest};
use crate::subscribers::{ConnectionId, Hub, Subscriber};

/// What one connection's requests work on.
pub struct ServerState {
    pub kernel: Arc<Kernel>,
    pub hub: Arc<Hub>,
    /// The server's loaded threads (the hub's), shared with every connection.
    pub threads: Arc<LoadedThreads>,
    pub connection: ConnectionId,
    pub out: Outbound,
    pub pending: Arc<PendingRequests>,
    initialized: AtomicBool,
}

/// A handler's answer: now, or later by a thread's pump (ordered with its events).
pub enum Reply {
    Now(Result<Value, RpcError>),
    Deferred,
}

impl ServerState {
    pub fn new(kernel: Arc<Kernel>, hub: Arc<Hub>, out: Outbound) -> Self {
        Self {
            kernel,
            threads: Arc::clone(&hub.threads),
            connection: hub.connection_id(),
            hub,
            out,
            pending: Arc::new(PendingRequests::default()),
            initialized: AtomicBool::new(false),
        }
    }

    /// This connection as a thread's subscriber.
    pub fn subscriber(&self) -> Subscriber {
        Subscriber {
            connection: self.connection,
            out: self.out.clone(),
            pending: Arc::clone(&self.pending),
        }
    }

    /// `initialize` was answered before this state existed.
    pub fn mark_initialized(&self) {
        self.initialized.store(true, Ordering::Release);
    }

    pub async fn handle_request(&self, id: RequestId, method: &str, params: Value) {
        let reply = if method == "initialize" {
            if self.initialized.load(Ordering::Acquire) {
                Reply::Now(Err(RpcError::invalid_request("Already initialized")))
            } else {
                let reply = handlers::meta::initialize(self, params);
                if matches!(reply, Reply::Now(Ok(_))) {
                    self.initialized.store(true, Ordering::Release);
                }
                reply
            }
        } else if !self.initialized.load(Ordering::Acquire) {
            Reply::Now(Err(RpcError::invalid_request("Not initialized")))
        } else {
            self.route(id.clone(), method, params).await
        };
        if let Reply::Now(outcome) = reply {
            self.out.respond(id, outcome).await;
        }
    }

    async fn route(&self, id: RequestId, method: &str, params: Value) -> Reply {
        use handlers::{history, meta, thread, turn};
        match method {
            "model/list" => meta::model_list(self, params),
            "config/read" => meta::config_read(self, params),
            "account/read" => meta::account_read(params),
            "permissionProfile/list" => meta::permission_profiles(params),
            "skills/list" => meta::skills_list(params),
            "thread/start" => thread::start(self, id, params).await,
            "thread/loaded/list" => thread::loaded_list(self, params),
            "thread/name/set" => thread::set_name(self, id, params).await,
            "thread/unsubscribe" => thread::unsubscribe(self, params),
            "turn/start" => turn::start(self, id, params).await,
            "turn/steer" => turn::steer(self, id, params).await,
            "turn/interrupt" => turn::interrupt(self, id, params).await,
            "thread/compact/start" => turn::compact(self, id, params).await,
            "thread/rollback" => turn::rollback(self, id, params).await,
            "thread/resume" => history::resume(self, id, params).await,
            "thread/fork" => history::fork(self, id, params).await,
            "thread/list" => history::list(self, params),
            "thread/read" => history::read(self, params).await,
            "thread/turns/list" => history::turns_list(self, params).await,
            "thread/archive" => history::archive(self, id, params).await,
            "thread/unarchive" => history::unarchive(self, id, params).await,
            _ => Reply::Now(Err(RpcError::method_not_found(method))),
        }
    }

    /// A client's answer to one of our requests goes to the pump that asked.
    pub async fn handle_response(&self, id: RequestId, outcome: Result<Value, Value>) {
        match self.pending.take(&id) {
            Some(pump) => {
                let _ = pump
                    .send(PumpRequest {
                        from: self.subscriber(),
                        cmd: PumpCmd::Answer {
                            request_id: id,
                            outcome,
                        },
                    })
                    .await;
            }
            // Late answers are normal: another subscriber may have answered first.
            None => tracing::debug!("ignoring a response to unknown request id {id}"),
        }
    }
}

/// Decode params; absent params read as `{}` so methods whose params are all optional
/// accept a bare call.
pub fn params<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    let params = match params {
        Value::Null => Value::Object(serde_json::Map::new()),
        other => other,
    };
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // A missing field is reported by serde at its parent; name it from the message.
        let field = match (path.as_str(), missing_field(&inner)) {
            (".", Some(f)) => Some(f),
            (".", None) => None,
            (p, Some(f)) => Some(format!("{p}.{f}")),
            (p, None) => Some(p.to_owned()),
        };
        let detail = match &field {
            Some(f) => format!("{f}: {inner}"),
            None => inner,
        };
        RpcError::invalid_params(detail, field)
    })
}

fn missing_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("missing field `")?;
    Some(rest.split('`').next()?.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::app_server::{codes, TurnStartParams};

    #[test]
    fn wrong_type_names_the_nested_field() {
        let e = params::<TurnStartParams>(serde_json::json!({
            "threadId": "t", "input": [{"type": "text", "text": 5}]
        }))
        .unwrap_err();
        assert_eq!(e.code, codes::INVALID_PARAMS);
        assert_eq!(e.data, Some(serde_json::json!({"field": "input[0]"})));
    }

    #[test]
    fn missing_field_is_named() {
        let e = params::<TurnStartParams>(serde_json::json!({"input": []})).unwrap_err();
        assert_eq!(e.data, Some(serde_json::json!({"field": "threadId"})));
    }
}
