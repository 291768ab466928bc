//! The method table: every app-server method, registered on a jsonrpsee [`RpcModule`]
//! whose context is the connection's [`ServerState`]. Each callback decodes its own
//! params with [`crate::dispatch::params`], so a bad field is named in `data.field`.

use std::future::Future;
use std::sync::Arc;

use jsonrpsee::core::RegisterMethodError;
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use serde_json::Value;

use crate::dispatch::{raw_params, ServerState};
use crate::error::RpcError;
use crate::handlers::{
    client_meta, goal, history, mcp, memory, meta, skills, thread, trajectory, turn,
};

pub type Module = RpcModule<ServerState>;

/// The methods of the connection `state`.
pub fn module(state: Arc<ServerState>) -> Result<Module, RegisterMethodError> {
    let mut m = RpcModule::from_arc(state);
    add(
        &mut m,
        "initialize",
        |s, p| async move { initialize(&s, p) },
    )?;
    add(&mut m, "model/list", |s, p| async move {
        meta::model_list(&s, p)
    })?;
    add(&mut m, "config/read", |s, p| async move {
        meta::config_read(&s, p)
    })?;
    add(&mut m, "account/read", |_, p| async move {
        meta::account_read(p)
    })?;
    add(&mut m, "permissionProfile/list", |_, p| async move {
        meta::permission_profiles(p)
    })?;
    add(&mut m, "skills/list", |s, p| async move {
        skills::list(&s, p).await
    })?;
    add(&mut m, "configRequirements/read", |_, p| async move {
        client_meta::config_requirements(p)
    })?;
    add(&mut m, "collaborationMode/list", |_, p| async move {
        client_meta::collaboration_modes(p)
    })?;
    add(&mut m, "hooks/list", |s, p| async move {
        client_meta::hooks_list(&s, p).await
    })?;
    add(&mut m, "rein/memory/list", |s, p| async move {
        memory::list(&s, p).await
    })?;
    add(&mut m, "rein/memory/read", |s, p| async move {
        memory::read(&s, p).await
    })?;
    add(&mut m, "rein/memory/update", |s, p| async move {
        memory::update(&s, p).await
    })?;
    add(&mut m, "rein/memory/forget", |s, p| async move {
        memory::forget(&s, p).await
    })?;
    add(&mut m, "plugin/installed", |_, p| async move {
        client_meta::plugins_installed(p)
    })?;
    add(
        &mut m,
        "account/bedrock/checkGovCloudRequirements",
        |_, p| async move { client_meta::gov_cloud(p) },
    )?;
    add(
        &mut m,
        "thread/backgroundTerminals/list",
        |s, p| async move { client_meta::background_terminals(&s, p).await },
    )?;
    add(&mut m, "thread/readState/update", |s, p| async move {
        client_meta::read_state_update(&s, p).await
    })?;
    add(&mut m, "thread/items/list", |s, p| async move {
        client_meta::items_list(&s, p).await
    })?;
    add(&mut m, "plugin/list", |_, p| async move {
        client_meta::plugin_list(p)
    })?;
    for empty in [
        "app/list",
        "experimentalFeature/list",
        "threadSection/list",
        "thread/attachment/list",
    ] {
        add(
            &mut m,
            empty,
            |_, p| async move { client_meta::empty_page(p) },
        )?;
    }
    add(&mut m, "thread/start", |s, p| async move {
        thread::start(&s, p).await
    })?;
    add(&mut m, "thread/loaded/list", |s, p| async move {
        thread::loaded_list(&s, p)
    })?;
    add(&mut m, "thread/name/set", |s, p| async move {
        thread::set_name(&s, p).await
    })?;
    add(&mut m, "thread/unsubscribe", |s, p| async move {
        thread::unsubscribe(&s, p)
    })?;
    add(&mut m, "turn/start", |s, p| async move {
        turn::start(&s, p).await
    })?;
    add(&mut m, "turn/steer", |s, p| async move {
        turn::steer(&s, p).await
    })?;
    add(&mut m, "turn/interrupt", |s, p| async move {
        turn::interrupt(&s, p).await
    })?;
    add(&mut m, "review/start", |s, p| async move {
        turn::review(&s, p).await
    })?;
    add(&mut m, "thread/compact/start", |s, p| async move {
        turn::compact(&s, p).await
    })?;
    add(&mut m, "thread/goal/get", |s, p| async move {
        goal::get(&s, p).await
    })?;
    add(&mut m, "thread/goal/set", |s, p| async move {
        goal::set(&s, p).await
    })?;
    add(&mut m, "thread/goal/clear", |s, p| async move {
        goal::clear(&s, p).await
    })?;
    add(&mut m, "thread/rollback", |s, p| async move {
        turn::rollback(&s, p).await
    })?;
    add(&mut m, "thread/resume", |s, p| async move {
        history::resume(&s, p).await
    })?;
    add(&mut m, "thread/fork", |s, p| async move {
        history::fork(&s, p).await
    })?;
    add(&mut m, "thread/list", |s, p| async move {
        history::list(&s, p).await
    })?;
    add(&mut m, "thread/read", |s, p| async move {
        history::read(&s, p).await
    })?;
    add(&mut m, "thread/turns/list", |s, p| async move {
        history::turns_list(&s, p).await
    })?;
    add(&mut m, "thread/archive", |s, p| async move {
        history::archive(&s, p).await
    })?;
    add(&mut m, "thread/unarchive", |s, p| async move {
        history::unarchive(&s, p).await
    })?;
    add(&mut m, trajectory::METHOD, |s, p| async move {
        trajectory::trajectory(&s, p).await
    })?;
    add(&mut m, "mcpServerStatus/list", |s, p| async move {
        mcp::status_list(&s, p)
    })?;
    add(&mut m, "config/mcpServer/reload", |s, _| async move {
        mcp::reload(&s).await
    })?;
    add(&mut m, "mcpServer/tool/call", |s, p| async move {
        mcp::tool_call(&s, p).await
    })?;
    Ok(m)
}

/// `initialize`, once per connection (the gate for every other method is in
/// [`ServerState::handle_request`]).
fn initialize(state: &ServerState, raw: Value) -> Result<Value, RpcError> {
    if state.is_initialized() {
        return Err(RpcError::invalid_request("Already initialized"));
    }
    let experimental = meta::wants_experimental(&raw);
    let result = meta::initialize_response(&state.kernel.home, &state.out, raw)?;
    state.set_experimental(experimental);
    state.mark_initialized();
    Ok(result)
}

/// Register `handler` as `name`, taking the params as JSON.
fn add<F, Fut>(
    module: &mut Module,
    name: &'static str,
    handler: F,
) -> Result<(), RegisterMethodError>
where
    F: Fn(Arc<ServerState>, Value) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
{
    module.register_async_method(name, move |params, state, _| {
        let handler = handler.clone();
        async move {
            let outcome = match raw_params(&params) {
                Ok(raw) => handler(state, raw).await,
                Err(e) => Err(e),
            };
            outcome.map_err(ErrorObjectOwned::from)
        }
    })?;
    Ok(())
}
