//! The methods of the typed table (`rein_app_server_protocol::client_request`), each
//! registered on a jsonrpsee [`RpcModule`] whose context is the connection's
//! [`ServerState`]: a handler takes its method's `Params` and returns its `Response`; the
//! callback decodes the params with [`crate::dispatch::decode`], so a bad field is named in
//! `data.field`.

use std::future::Future;
use std::sync::Arc;

use jsonrpsee::core::RegisterMethodError;
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use rein_app_server_protocol::{method, ClientMethod, InitializeParams, InitializeResponse};

use crate::dispatch::{decode, ServerState};
use crate::error::RpcError;
use crate::handlers::{
    client_meta, goal, history, ide, mcp, memory, meta, skills, thread, trajectory, turn,
};

pub type Module = RpcModule<ServerState>;

/// The methods of the connection `state`: the method table, one registration per method
/// (long because the wire has that many methods; each handler lives in `handlers/`).
pub fn module(state: Arc<ServerState>) -> Result<Module, RegisterMethodError> {
    let mut m = RpcModule::from_arc(state);
    add::<method::Initialize, _, _>(&mut m, |s, p| async move { initialize(&s, p) })?;
    add::<method::ModelList, _, _>(&mut m, |s, p| async move { meta::model_list(&s, p) })?;
    add::<method::ConfigRead, _, _>(&mut m, |s, p| async move { meta::config_read(&s, p) })?;
    add::<method::AccountRead, _, _>(&mut m, |_, p| async move { meta::account_read(p) })?;
    add::<method::PermissionProfileList, _, _>(&mut m, |_, p| async move {
        meta::permission_profiles(p)
    })?;
    add::<method::SkillsList, _, _>(&mut m, |s, p| async move { skills::list(&s, p).await })?;
    add::<method::SkillsConfigWrite, _, _>(&mut m, |s, p| async move {
        skills::config_write(&s, p).await
    })?;
    add::<method::SkillsExtraRootsSet, _, _>(&mut m, |s, p| async move {
        skills::extra_roots_set(&s, p).await
    })?;
    add::<method::ConfigRequirementsRead, _, _>(&mut m, |_, p| async move {
        client_meta::config_requirements(p)
    })?;
    add::<method::CollaborationModeList, _, _>(&mut m, |_, p| async move {
        client_meta::collaboration_modes(p)
    })?;
    add::<method::HooksList, _, _>(&mut m, |s, p| async move {
        client_meta::hooks_list(&s, p).await
    })?;
    add::<method::ReinMemoryList, _, _>(&mut m, |s, p| async move { memory::list(&s, p).await })?;
    add::<method::ReinMemoryRead, _, _>(&mut m, |s, p| async move { memory::read(&s, p).await })?;
    add::<method::ReinMemoryUpdate, _, _>(
        &mut m,
        |s, p| async move { memory::update(&s, p).await },
    )?;
    add::<method::ReinMemoryForget, _, _>(
        &mut m,
        |s, p| async move { memory::forget(&s, p).await },
    )?;
    add::<method::PluginInstalled, _, _>(&mut m, |_, p| async move {
        client_meta::plugins_installed(p)
    })?;
    add::<method::GovCloudRequirements, _, _>(
        &mut m,
        |_, p| async move { client_meta::gov_cloud(p) },
    )?;
    add::<method::BackgroundTerminalsList, _, _>(&mut m, |s, p| async move {
        client_meta::background_terminals(&s, p).await
    })?;
    add::<method::ThreadReadStateUpdate, _, _>(&mut m, |s, p| async move {
        client_meta::read_state_update(&s, p).await
    })?;
    add::<method::ThreadItemsList, _, _>(&mut m, |s, p| async move {
        client_meta::items_list(&s, p).await
    })?;
    add::<method::PluginList, _, _>(&mut m, |_, p| async move { client_meta::plugin_list(p) })?;
    add::<method::AppList, _, _>(&mut m, |_, _| async move { Ok(client_meta::empty_page()) })?;
    add::<method::ExperimentalFeatureList, _, _>(&mut m, |_, _| async move {
        Ok(client_meta::empty_page())
    })?;
    add::<method::ThreadSectionList, _, _>(
        &mut m,
        |_, _| async move { Ok(client_meta::empty_page()) },
    )?;
    add::<method::ThreadAttachmentList, _, _>(&mut m, |_, _| async move {
        Ok(client_meta::empty_page())
    })?;
    add::<method::ThreadStart, _, _>(&mut m, |s, p| async move { thread::start(&s, p).await })?;
    add::<method::ThreadLoadedList, _, _>(
        &mut m,
        |s, p| async move { thread::loaded_list(&s, p) },
    )?;
    add::<method::ThreadSetName, _, _>(
        &mut m,
        |s, p| async move { thread::set_name(&s, p).await },
    )?;
    add::<method::ThreadMemoryModeSet, _, _>(&mut m, |s, p| async move {
        thread::set_memory_mode(&s, p).await
    })?;
    add::<method::ThreadUnsubscribe, _, _>(
        &mut m,
        |s, p| async move { thread::unsubscribe(&s, p) },
    )?;
    add::<method::TurnStart, _, _>(&mut m, |s, p| async move { turn::start(&s, p).await })?;
    add::<method::TurnSteer, _, _>(&mut m, |s, p| async move { turn::steer(&s, p).await })?;
    add::<method::TurnInterrupt, _, _>(&mut m, |s, p| async move { turn::interrupt(&s, p).await })?;
    add::<method::ReviewStart, _, _>(&mut m, |s, p| async move { turn::review(&s, p).await })?;
    add::<method::ThreadCompactStart, _, _>(
        &mut m,
        |s, p| async move { turn::compact(&s, p).await },
    )?;
    add::<method::ThreadGoalGet, _, _>(&mut m, |s, p| async move { goal::get(&s, p).await })?;
    add::<method::ThreadGoalSet, _, _>(&mut m, |s, p| async move { goal::set(&s, p).await })?;
    add::<method::ThreadGoalClear, _, _>(&mut m, |s, p| async move { goal::clear(&s, p).await })?;
    add::<method::ThreadRollback, _, _>(&mut m, |s, p| async move { turn::rollback(&s, p).await })?;
    add::<method::ThreadResume, _, _>(&mut m, |s, p| async move { history::resume(&s, p).await })?;
    add::<method::ThreadFork, _, _>(&mut m, |s, p| async move { history::fork(&s, p).await })?;
    add::<method::ThreadList, _, _>(&mut m, |s, p| async move { history::list(&s, p).await })?;
    add::<method::ThreadRead, _, _>(&mut m, |s, p| async move { history::read(&s, p).await })?;
    add::<method::ThreadTurnsList, _, _>(&mut m, |s, p| async move {
        history::turns_list(&s, p).await
    })?;
    add::<method::ThreadArchive, _, _>(
        &mut m,
        |s, p| async move { history::archive(&s, p).await },
    )?;
    add::<method::ThreadUnarchive, _, _>(
        &mut m,
        |s, p| async move { history::unarchive(&s, p).await },
    )?;
    add::<method::ReinThreadTrajectory, _, _>(&mut m, |s, p| async move {
        trajectory::trajectory(&s, p).await
    })?;
    add::<method::FuzzyFileSearch, _, _>(&mut m, |s, p| async move { ide::fuzzy(&s, p).await })?;
    add::<method::ConfigValueWrite, _, _>(
        &mut m,
        |s, p| async move { ide::value_write(&s, p).await },
    )?;
    add::<method::ConfigBatchWrite, _, _>(
        &mut m,
        |s, p| async move { ide::batch_write(&s, p).await },
    )?;
    add::<method::ThreadShellCommand, _, _>(&mut m, |s, p| async move {
        ide::shell_command(&s, p).await
    })?;
    add::<method::CommandExec, _, _>(&mut m, |s, p| async move { ide::command_exec(&s, p).await })?;
    add::<method::McpServerStatusList, _, _>(
        &mut m,
        |s, p| async move { mcp::status_list(&s, p) },
    )?;
    add::<method::McpServerReload, _, _>(&mut m, |s, _| async move { mcp::reload(&s).await })?;
    add::<method::McpServerToolCall, _, _>(
        &mut m,
        |s, p| async move { mcp::tool_call(&s, p).await },
    )?;
    Ok(m)
}

/// `initialize`, once per connection (the gate for every other method is in
/// [`ServerState::handle_request`]).
fn initialize(state: &ServerState, p: InitializeParams) -> Result<InitializeResponse, RpcError> {
    if state.is_initialized() {
        return Err(RpcError::invalid_request("Already initialized"));
    }
    let experimental = p.capabilities.as_ref().is_some_and(|c| c.experimental_api);
    let result = meta::initialize_response(&state.kernel.home, &state.out, p);
    state.set_experimental(experimental);
    state.mark_initialized();
    Ok(result)
}

/// Register `handler` as method `M`: its params decoded into `M::Params` (a bad field is
/// named in `data.field`), its answer serialized from `M::Response` by jsonrpsee.
fn add<M, F, Fut>(module: &mut Module, handler: F) -> Result<(), RegisterMethodError>
where
    M: ClientMethod,
    F: Fn(Arc<ServerState>, M::Params) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<M::Response, RpcError>> + Send + 'static,
{
    module.register_async_method(M::METHOD, move |params, state, _| {
        let handler = handler.clone();
        async move {
            let outcome = match decode::<M::Params>(params.as_str()) {
                Ok(p) => handler(state, p).await,
                Err(e) => Err(e),
            };
            outcome.map_err(ErrorObjectOwned::from)
        }
    })?;
    Ok(())
}
