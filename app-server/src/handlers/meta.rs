//! The handshake and the read-only methods clients call at startup. rein has no account
//! or permission profiles yet, so those answer with Codex's shapes, empty.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use rein_app_server_protocol::{
    ConfigReadParams, ConfigReadResponse, GetAccountParams, GetAccountResponse, InitializeParams,
    InitializeResponse, Model, ModelListParams, ModelListResponse, PermissionProfileListParams,
    PermissionProfileListResponse, ReasoningEffortOption, CODEX_PROTOCOL_VERSION,
};
use serde_json::json;

use crate::convert::approval_policy_to_wire;
use crate::dispatch::ServerState;
use crate::error::RpcError;
use crate::outbound::Outbound;
use rein_protocol::ReasoningEffort;

/// The answer to `initialize`; applies the client's notification opt-outs to `out`.
pub fn initialize_response(home: &Path, out: &Outbound, p: InitializeParams) -> InitializeResponse {
    let caps = p.capabilities.unwrap_or_default();
    if let Some(methods) = caps.opt_out_notification_methods {
        out.set_opted_out(methods.into_iter().collect::<HashSet<_>>());
    }
    InitializeResponse {
        user_agent: user_agent(&p.client_info.name, &p.client_info.version),
        codex_home: home.display().to_string(),
        platform_family: std::env::consts::FAMILY.into(),
        platform_os: std::env::consts::OS.into(),
        rein_sandbox: Some(sandbox_status()),
    }
}

/// `rein/<protocol version> (<os>; <arch>) rein-app-server/<rein version> (<client>;
/// <client version>)`. Codex clients read the version after the first `/` as the server's
/// Codex version and warn when it is older than theirs, so it is the version of Codex's
/// app-server protocol rein implements ([`CODEX_PROTOCOL_VERSION`]), not rein's own.
pub fn user_agent(client: &str, client_version: &str) -> String {
    format!(
        "rein/{CODEX_PROTOCOL_VERSION} ({}; {}) rein-app-server/{} ({client}; {client_version})",
        std::env::consts::OS,
        std::env::consts::ARCH,
        env!("CARGO_PKG_VERSION"),
    )
}

/// The sandbox of this process (detected once, usually already at startup).
fn sandbox_status() -> rein_app_server_protocol::SandboxStatus {
    let report = rein_bootstrap::sandbox_report();
    rein_app_server_protocol::SandboxStatus {
        mechanism: report.mechanism,
        landlock_abi: report.landlock_abi,
        features: report.features,
        fallbacks: report.fallbacks,
    }
}

pub fn model_list(state: &ServerState, p: ModelListParams) -> Result<ModelListResponse, RpcError> {
    let kernel = &state.kernel;
    let default_effort = kernel
        .config
        .as_ref()
        .and_then(|c| c.reasoning_effort.clone())
        .unwrap_or(ReasoningEffort::MEDIUM);
    let mut models: Vec<Model> = kernel
        .models
        .models()
        .into_iter()
        .filter(|m| {
            p.model_provider
                .as_ref()
                .is_none_or(|want| *want == m.provider)
        })
        .map(|m| {
            // What the catalog knows of the model; a model it knows nothing of is offered
            // every common effort and images (it is tried with whatever is asked).
            let efforts = m
                .traits
                .efforts
                .clone()
                .unwrap_or_else(|| ReasoningEffort::COMMON.to_vec());
            let default_effort = if efforts.contains(&default_effort) {
                default_effort.clone()
            } else {
                efforts.first().cloned().unwrap_or(ReasoningEffort::MEDIUM)
            };
            let mut input_modalities = vec!["text".to_owned()];
            if m.traits.images != Some(false) {
                input_modalities.push("image".into());
            }
            Model {
                id: m.id.clone(),
                model: m.id.clone(),
                display_name: m.id.clone(),
                description: format!("{} via {}", m.id, m.provider),
                hidden: false,
                is_default: m.id == kernel.model,
                default_reasoning_effort: default_effort.to_string(),
                supported_reasoning_efforts: efforts
                    .iter()
                    .map(|e| ReasoningEffortOption {
                        reasoning_effort: e.to_string(),
                        description: format!("{e} reasoning effort"),
                    })
                    .collect(),
                input_modalities,
                upgrade: None,
            }
        })
        .collect();
    // The default model first: pickers preselect the head of the list.
    models.sort_by_key(|m| !m.is_default);
    let (data, next_cursor) = page(models, p.cursor.as_deref(), p.limit)?;
    Ok(ModelListResponse { data, next_cursor })
}

pub fn config_read(
    state: &ServerState,
    _: ConfigReadParams,
) -> Result<ConfigReadResponse, RpcError> {
    let kernel = &state.kernel;
    let defaults = kernel.default_settings(std::path::PathBuf::from("/"));
    let mut config = serde_json::Map::new();
    config.insert("model".into(), json!(kernel.model));
    config.insert("model_provider".into(), json!(kernel.provider));
    config.insert(
        "approval_policy".into(),
        json!(approval_policy_to_wire(defaults.approval_policy)),
    );
    config.insert(
        "sandbox_mode".into(),
        json!(defaults.sandbox_policy.as_str()),
    );
    config.insert(
        "model_reasoning_effort".into(),
        json!(defaults
            .reasoning_effort
            .as_ref()
            .map(ReasoningEffort::as_str)),
    );
    if let Some(window) = kernel.config.as_ref().and_then(|c| c.context_window) {
        config.insert("model_context_window".into(), json!(window));
    }
    Ok(ConfigReadResponse {
        config,
        origins: BTreeMap::new(),
        layers: None,
    })
}

pub fn account_read(_: GetAccountParams) -> Result<GetAccountResponse, RpcError> {
    Ok(GetAccountResponse {
        account: None,
        requires_openai_auth: false,
    })
}

pub fn permission_profiles(
    _: PermissionProfileListParams,
) -> Result<PermissionProfileListResponse, RpcError> {
    Ok(PermissionProfileListResponse {
        data: Vec::new(),
        next_cursor: None,
    })
}

/// One page of `items` after the opaque `cursor` (an index), with the next cursor.
pub fn page<T>(
    items: Vec<T>,
    cursor: Option<&str>,
    limit: Option<u32>,
) -> Result<(Vec<T>, Option<String>), RpcError> {
    let start = match cursor {
        None => 0,
        Some(c) => c.parse::<usize>().map_err(|_| {
            RpcError::invalid_params(
                format!("cursor: not a cursor: {c:?}"),
                Some("cursor".into()),
            )
        })?,
    };
    let total = items.len();
    let take = limit.map_or(usize::MAX, |l| l.max(1) as usize);
    let data: Vec<T> = items.into_iter().skip(start).take(take).collect();
    let end = start.saturating_add(data.len());
    let next = (end < total).then(|| end.to_string());
    Ok((data, next))
}
