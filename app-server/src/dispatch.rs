//! Handling one request: the initialization gate, then the connection's method module
//! (a jsonrpsee [`Methods`], built by [`crate::methods`]), then what must follow the answer.
//!
//! jsonrpsee requires `"jsonrpc": "2.0"`, which Codex clients omit, and takes only
//! unsigned or string ids; so each request is handed to the module re-framed, under a fixed
//! id, and its answer is sent under the client's id, without `jsonrpc`, as Codex does.
//! Param decoding happens in the callbacks with [`params`] (-32602 naming the field);
//! jsonrpsee answers unknown methods (-32601).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use jsonrpsee::Methods;
use rein_app_server_protocol::{codes, RequestId, ServerNotification};
use rein_bootstrap::Kernel;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::deferred::Release;
use crate::error::RpcError;
use crate::loaded::LoadedThreads;
use crate::outbound::Outbound;
use crate::pump::{PendingRequests, PumpCmd, PumpRequest};
use crate::subscribers::{ConnectionId, Hub, Subscriber};

/// What one connection's requests work on: the context of its method module.
pub struct ServerState {
    pub kernel: Arc<Kernel>,
    pub hub: Arc<Hub>,
    /// The server's loaded threads (the hub's), shared with every connection.
    pub threads: Arc<LoadedThreads>,
    pub connection: ConnectionId,
    pub out: Outbound,
    pub pending: Arc<PendingRequests>,
    initialized: AtomicBool,
    /// The client opted into experimental methods at `initialize`.
    experimental: AtomicBool,
    /// What the request being handled asked to send after its answer, in order.
    after_answer: Mutex<Vec<AfterAnswer>>,
    /// The skill folders this connection listed last, watched for `skills/changed`.
    pub skills_watch: crate::skills_watch::SkillsWatching,
}

/// Sent or done once a request's answer is queued.
enum AfterAnswer {
    /// A notification the client must read after the answer (`thread/started` after the
    /// answer to `thread/start`).
    Notify(Box<ServerNotification>),
    /// Let the pump that gave the answer go on.
    Release(Release),
}

impl ServerState {
    pub fn new(kernel: Arc<Kernel>, hub: Arc<Hub>, out: Outbound) -> Self {
        crate::children::install(&hub, &kernel);
        Self {
            kernel,
            threads: Arc::clone(&hub.threads),
            connection: hub.connection_id(),
            hub,
            out,
            pending: Arc::new(PendingRequests::default()),
            initialized: AtomicBool::new(false),
            experimental: AtomicBool::new(false),
            after_answer: Mutex::new(Vec::new()),
            skills_watch: crate::skills_watch::SkillsWatching::default(),
        }
    }

    /// This connection as a thread's subscriber.
    pub fn subscriber(&self) -> Subscriber {
        Subscriber {
            connection: self.connection,
            out: self.out.clone(),
            pending: Arc::clone(&self.pending),
            seen_through: None,
        }
    }

    /// `initialize` was answered (possibly before this state existed).
    pub fn mark_initialized(&self) {
        self.initialized.store(true, Ordering::Release);
    }

    pub fn set_experimental(&self, on: bool) {
        self.experimental.store(on, Ordering::Release);
    }

    pub fn experimental(&self) -> bool {
        self.experimental.load(Ordering::Acquire)
    }

    pub fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }

    /// Send `notification` right after the current request's answer.
    pub fn notify_after_answer(&self, notification: ServerNotification) {
        self.lock_after()
            .push(AfterAnswer::Notify(Box::new(notification)));
    }

    /// Let the pump that gave the current request's answer go on once it is queued.
    pub fn release_after_answer(&self, release: Release) {
        self.lock_after().push(AfterAnswer::Release(release));
    }

    fn lock_after(&self) -> std::sync::MutexGuard<'_, Vec<AfterAnswer>> {
        self.after_answer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Answer one request through `methods`, then send what it asked to follow.
    pub async fn handle_request(
        &self,
        methods: &Methods,
        id: RequestId,
        method: &str,
        params: Value,
    ) {
        let outcome = if method != "initialize" && !self.is_initialized() {
            Err(RpcError::invalid_request("Not initialized"))
        } else {
            call(methods, method, params).await
        };
        self.out.respond(id, outcome).await;
        let follow = std::mem::take(&mut *self.lock_after());
        // The answer's own notifications first (`thread/started`), then the pumps it
        // holds back go on: what they send follows all of them.
        let mut releases = Vec::new();
        for next in follow {
            match next {
                AfterAnswer::Notify(n) => self.out.notify(*n).await,
                AfterAnswer::Release(release) => releases.push(release),
            }
        }
        for release in releases {
            release.fire();
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

/// Call `method` on `methods` and read its answer back into our terms.
pub async fn call(methods: &Methods, method: &str, params: Value) -> Result<Value, RpcError> {
    let mut request = json!({ "jsonrpc": "2.0", "id": 0, "method": method });
    if !params.is_null() {
        request["params"] = params;
    }
    let (response, _) = methods
        .raw_json_request(&request.to_string(), 1)
        .await
        .map_err(RpcError::internal)?;
    let mut response: Value = serde_json::from_str(response.get()).map_err(RpcError::internal)?;
    if let Some(result) = response.get_mut("result") {
        return Ok(result.take());
    }
    let error = match response.get("error") {
        Some(object) => RpcError::from_object(object),
        None => RpcError::internal(format!("a response without result or error: {response}")),
    };
    // jsonrpsee's own -32601 does not say which method; ours does.
    if error.code == codes::METHOD_NOT_FOUND {
        return Err(RpcError::method_not_found(method));
    }
    Err(error)
}

/// The params of a module callback as a JSON value (`Null` when absent).
pub fn raw_params(params: &jsonrpsee::types::Params<'_>) -> Result<Value, RpcError> {
    match params.as_str() {
        None => Ok(Value::Null),
        Some(text) => serde_json::from_str(text).map_err(RpcError::parse_error),
    }
}

/// Decode params; absent params read as `{}` so methods whose params are all optional
/// accept a bare call. Params are an object: an array (which serde would read field by
/// field, in order) is refused.
pub fn params<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    let params = match params {
        Value::Null => Value::Object(serde_json::Map::new()),
        Value::Object(map) => Value::Object(map),
        _ => return Err(RpcError::invalid_params("params must be an object", None)),
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

/// A UUID id the client sent (`threadId`, `turnId`...), in the one spelling rein and Codex
/// send: lowercase hex, hyphenated (`01a2…-…`). Braces, `urn:uuid:`, no hyphens or
/// uppercase are refused rather than read as the same id.
pub fn wire_id<T: std::str::FromStr>(text: &str, field: &str, what: &str) -> Result<T, RpcError> {
    let canonical = text.len() == 36
        && text.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        });
    let parsed = canonical.then(|| text.parse::<T>().ok()).flatten();
    parsed.ok_or_else(|| {
        RpcError::invalid_params(
            format!("{field}: not a {what} id: {}", crate::error::quote(text)),
            Some(field.into()),
        )
    })
}

/// Refuse a string longer than `max` bytes: a value the kernel keeps (and records) must not
/// be arbitrarily large.
pub fn bounded(field: &str, value: &str, max: usize) -> Result<(), RpcError> {
    if value.len() <= max {
        return Ok(());
    }
    Err(RpcError::invalid_params(
        format!(
            "{field}: {} bytes, longer than the limit of {max}",
            value.len()
        ),
        Some(field.into()),
    ))
}

/// Longest model name accepted.
pub const MAX_MODEL_BYTES: usize = 256;
/// Longest path accepted (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest thread name accepted.
pub const MAX_NAME_BYTES: usize = 1024;

fn missing_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("missing field `")?;
    Some(rest.split('`').next()?.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonrpsee::RpcModule;
    use rein_app_server_protocol::TurnStartParams;

    /// A module with one method that echoes its params, decoded by [`params`].
    fn echo_module() -> RpcModule<()> {
        let mut module = RpcModule::new(());
        module
            .register_async_method("echo", |p, _, _| async move {
                let raw = raw_params(&p)?;
                let echoed: TurnStartParams = params(raw)?;
                Ok::<_, jsonrpsee::types::ErrorObjectOwned>(json!({ "threadId": echoed.thread_id }))
            })
            .unwrap();
        module
    }

    #[tokio::test]
    async fn a_call_without_jsonrpc_and_with_any_id_reaches_the_module() {
        let module = echo_module();
        let line = br#"{"id":-7,"method":"echo","params":{"threadId":"t","input":[]}}"#;
        let Ok(crate::message::Inbound::Request { id, method, params }) =
            crate::message::parse(line)
        else {
            panic!("not a request");
        };
        let (out, mut written) = Outbound::new(4);
        out.respond(id, call(&module, &method, params).await).await;
        assert_eq!(
            written.recv().await.unwrap(),
            r#"{"id":-7,"result":{"threadId":"t"}}"#
        );
    }

    #[tokio::test]
    async fn the_module_answers_unknown_methods_and_bad_params_with_our_errors() {
        let module = echo_module();
        let unknown = call(&module, "no/such", Value::Null).await.unwrap_err();
        assert_eq!(unknown, RpcError::method_not_found("no/such"));
        let bad = call(&module, "echo", json!({ "input": [] }))
            .await
            .unwrap_err();
        assert_eq!(bad.code, codes::INVALID_PARAMS);
        assert_eq!(bad.data, Some(json!({ "field": "threadId" })));
    }

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
    fn params_must_be_an_object() {
        let e = params::<rein_app_server_protocol::ThreadLoadedListParams>(json!([])).unwrap_err();
        assert_eq!(e.code, codes::INVALID_PARAMS);
        assert!(params::<rein_app_server_protocol::ThreadLoadedListParams>(Value::Null).is_ok());
    }

    #[test]
    fn ids_are_read_in_their_canonical_spelling_only() {
        let good = "01a22a74-0000-7000-8000-00000000000a";
        assert!(wire_id::<rein_protocol::ThreadId>(good, "threadId", "thread").is_ok());
        for bad in [
            "{01a22a74-0000-7000-8000-00000000000a}",
            "urn:uuid:01a22a74-0000-7000-8000-00000000000a",
            "01a22a7400007000800000000000000a",
            "01A22A74-0000-7000-8000-00000000000A",
            "not-an-id",
        ] {
            let e = wire_id::<rein_protocol::ThreadId>(bad, "threadId", "thread").unwrap_err();
            assert_eq!(e.data, Some(json!({ "field": "threadId" })), "{bad}");
        }
    }

    #[test]
    fn missing_field_is_named() {
        let e = params::<TurnStartParams>(serde_json::json!({"input": []})).unwrap_err();
        assert_eq!(e.data, Some(serde_json::json!({"field": "threadId"})));
    }
}
