//! What the Codex TUI asks around a session, answered with what rein has: no config
//! requirements, the default collaboration mode only, the directory's hooks, no plugins,
//! not a Bedrock GovCloud account, no goal; the thread's background terminals; a
//! thread's items page by page; read state kept as "all read".

use rein_app_server_protocol::{
    AnyParams, BackgroundTerminalsListParams, CollaborationModeListParams,
    CollaborationModeListResponse, CollaborationModeMask, ConfigRequirementsReadResponse,
    EmptyPage, GovCloudRequirementsParams, GovCloudRequirementsResponse, HookMetadata,
    HooksListEntry, HooksListParams, HooksListResponse, PluginInstalledParams,
    PluginInstalledResponse, PluginListResponse, SortDirection, ThreadItemEntry,
    ThreadItemsListParams, ThreadItemsListResponse, ThreadReadState, ThreadReadStateUpdateParams,
    ThreadReadStateUpdateResponse,
};
use rein_bootstrap::hooks::{Discovered, TrustStatus};
use rein_protocol::HookSource;
use std::path::Path;

use super::history::{folded_state, thread_id};
use super::meta::page;
use crate::dispatch::ServerState;
use crate::error::RpcError;
use crate::turns::turns_from_state;

pub fn config_requirements(_p: AnyParams) -> Result<ConfigRequirementsReadResponse, RpcError> {
    // No params in Codex's schema; whatever object comes is ignored, as Codex does.
    Ok(ConfigRequirementsReadResponse {
        requirements: None,
        // As Codex 0.169: speed-mode requirements (none here) are enforced independently.
        supports_independent_speed_modes: Some(true),
    })
}

/// Only the default mode: rein has no plan mode, so offering one would be a lie the
/// first turn in it would show.
pub fn collaboration_modes(
    _: CollaborationModeListParams,
) -> Result<CollaborationModeListResponse, RpcError> {
    Ok(CollaborationModeListResponse {
        data: vec![CollaborationModeMask {
            name: "Default".into(),
            mode: Some("default".into()),
            model: None,
            reasoning_effort: None,
        }],
    })
}

/// One entry per asked directory (or the thread's): the hooks a thread there runs, or
/// would run once trusted, read as threads read them (`rein hooks list` shows the same).
/// `PostToolUseFailure` hooks have no name on Codex's wire: they are said in `warnings`.
pub async fn hooks_list(
    state: &ServerState,
    p: HooksListParams,
) -> Result<HooksListResponse, RpcError> {
    let mut cwds = p.cwds;
    if let Some(thread) = &p.thread_id {
        let loaded = super::loaded(state, thread)?;
        cwds = vec![loaded.meta().settings.cwd.display().to_string()];
    }
    let mut data = Vec::with_capacity(cwds.len());
    for cwd in cwds {
        let entry = match &state.kernel.hooks {
            Some(hooks) => {
                let found = hooks.load(Path::new(&cwd)).await;
                hooks_entry(cwd, found.as_ref())
            }
            None => HooksListEntry {
                cwd,
                hooks: Vec::new(),
                warnings: Vec::new(),
                errors: Vec::new(),
            },
        };
        data.push(entry);
    }
    Ok(HooksListResponse { data })
}

fn hooks_entry(cwd: String, found: &Discovered) -> HooksListEntry {
    let mut warnings = found.warnings.clone();
    let mut hooks = Vec::new();
    for (order, hook) in found.hooks.iter().enumerate() {
        let Some(event_name) = crate::event_map::codex_event_name(hook.def.event) else {
            warnings.push(format!(
                "{} ({}): a {} hook, which Codex's hooks/list cannot name",
                hook.key,
                hook.path.display(),
                hook.def.event.as_str()
            ));
            continue;
        };
        let matcher = hook.def.matcher.source();
        hooks.push(HookMetadata {
            key: hook.key.clone(),
            event_name: event_name.to_owned(),
            matcher: (!matcher.is_empty()).then(|| matcher.to_owned()),
            handler_type: "command".to_owned(),
            command: hook.def.command.clone(),
            is_async: false,
            source: match hook.source {
                HookSource::User => "user",
                HookSource::Project => "project",
            }
            .to_owned(),
            source_path: hook.path.display().to_string(),
            current_hash: hook.hash.clone(),
            trust_status: hook.trust.as_str().to_owned(),
            enabled: hook.trust == TrustStatus::Trusted,
            is_managed: false,
            display_order: i64::try_from(order).unwrap_or(i64::MAX),
            timeout_sec: hook.def.timeout.as_secs(),
        });
    }
    HooksListEntry {
        cwd,
        hooks,
        warnings,
        errors: Vec::new(),
    }
}

pub fn plugins_installed(_: PluginInstalledParams) -> Result<PluginInstalledResponse, RpcError> {
    Ok(PluginInstalledResponse {
        marketplaces: Vec::new(),
        marketplace_load_errors: Vec::new(),
    })
}

/// rein has no Bedrock account, so none in GovCloud and nothing to warn about.
pub fn gov_cloud(_: GovCloudRequirementsParams) -> Result<GovCloudRequirementsResponse, RpcError> {
    Ok(GovCloudRequirementsResponse {
        is_gov_cloud: false,
        should_warn: false,
    })
}

/// The thread's background terminals. rein's terminals live in the thread's tools, which
/// no kernel port lists yet, so the list is empty (the TUI shows no terminals).
pub async fn background_terminals(
    state: &ServerState,
    p: BackgroundTerminalsListParams,
) -> Result<EmptyPage, RpcError> {
    let id = thread_id(&p.thread_id)?;
    folded_state(state, id).await?;
    // The cursor is still checked, so a client's bad cursor is an error here as anywhere.
    let (data, next_cursor) = page(Vec::new(), p.cursor.as_deref(), p.limit)?;
    Ok(EmptyPage { data, next_cursor })
}

/// rein keeps no unread marks: every thread is read, at one fixed revision.
pub async fn read_state_update(
    state: &ServerState,
    p: ThreadReadStateUpdateParams,
) -> Result<ThreadReadStateUpdateResponse, RpcError> {
    folded_state(state, thread_id(&p.thread_id)?).await?;
    Ok(ThreadReadStateUpdateResponse {
        read_state: all_read(),
    })
}

/// The read state of every rein thread.
pub fn all_read() -> ThreadReadState {
    ThreadReadState {
        first_unread: None,
        revision: "read".into(),
    }
}

/// A thread's items (of one turn, or all), oldest first unless `desc`, a page at a time.
pub async fn items_list(
    state: &ServerState,
    p: ThreadItemsListParams,
) -> Result<ThreadItemsListResponse, RpcError> {
    let id = thread_id(&p.thread_id)?;
    let turns = turns_from_state(&folded_state(state, id).await?);
    if let Some(turn) = &p.turn_id {
        if !turns.iter().any(|t| &t.id == turn) {
            return Err(RpcError::invalid_request(format!(
                "turn {turn} is not in thread {id}"
            )));
        }
    }
    let mut entries: Vec<ThreadItemEntry> = turns
        .into_iter()
        .filter(|t| p.turn_id.as_ref().is_none_or(|want| *want == t.id))
        .flat_map(|t| {
            let turn_id = t.id;
            t.items.into_iter().map(move |item| ThreadItemEntry {
                turn_id: turn_id.clone(),
                item,
                started_at_ms: None,
                completed_at_ms: None,
            })
        })
        .collect();
    if p.sort_direction == Some(SortDirection::Desc) {
        entries.reverse();
    }
    let (data, next_cursor) = page(entries, p.cursor.as_deref(), p.limit)?;
    Ok(ThreadItemsListResponse {
        data,
        next_cursor,
        backwards_cursor: None,
    })
}

/// `plugin/list`: no marketplaces.
pub fn plugin_list(_: AnyParams) -> Result<PluginListResponse, RpcError> {
    Ok(PluginListResponse {
        marketplaces: Vec::new(),
        marketplace_load_errors: Vec::new(),
        featured_plugin_ids: Vec::new(),
    })
}

/// A list rein has nothing in: `app/list`, `experimentalFeature/list`,
/// `threadSection/list`, `thread/attachment/list`.
pub fn empty_page() -> EmptyPage {
    EmptyPage {
        data: Vec::new(),
        next_cursor: None,
    }
}
