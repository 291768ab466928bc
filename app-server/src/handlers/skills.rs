//! `skills/list {cwds, forceReload}`: the skills a thread in each directory would have,
//! in Codex's shapes. Every call reads the folders again (rein keeps no skills cache, so
//! `forceReload` changes nothing); the scan runs on a blocking thread. The skill folders of
//! the directories listed last are watched: a change is a `skills/changed` notification.

use std::path::PathBuf;

use rein_app_server_protocol::meta::{SkillsListEntry, SkillsListParams, SkillsListResponse};
use rein_app_server_protocol::skills::{
    SkillDependencies, SkillErrorInfo, SkillInterface, SkillMetadata, SkillToolDependency,
    SkillsChangedNotification, SkillsConfigWriteParams, SkillsConfigWriteResponse,
    SkillsExtraRootsSetParams, SkillsExtraRootsSetResponse,
};
use rein_app_server_protocol::ServerNotification;
use rein_bootstrap::config_write::ConfigWriteError;
use rein_bootstrap::skills::{Skill, SkillsOutcome};
use rein_bootstrap::skills_write::{ExtraRootsError, SkillTarget, SkillWriteError};

use crate::dispatch::ServerState;
use crate::error::RpcError;

pub async fn list(
    state: &ServerState,
    p: SkillsListParams,
) -> Result<SkillsListResponse, RpcError> {
    let mut cwds = p.cwds;
    if cwds.is_empty() {
        // Codex: "defaults to the current session working directory".
        let cwd = std::env::current_dir().map_err(RpcError::internal)?;
        cwds.push(cwd.display().to_string());
    }
    let mut data = Vec::with_capacity(cwds.len());
    let mut paths = Vec::with_capacity(cwds.len());
    for cwd in cwds {
        let path = PathBuf::from(&cwd);
        if !path.is_absolute() {
            return Err(RpcError::invalid_params(
                format!("cwds: must be absolute paths: {cwd}"),
                Some("cwds".into()),
            ));
        }
        let outcome = state.kernel.skills(path.clone()).await;
        data.push(entry(cwd, &outcome));
        paths.push(path);
    }
    // From now on a change under these directories' skill folders is `skills/changed`.
    crate::skills_watch::watch(state, paths).await;
    Ok(SkillsListResponse { data })
}

/// `skills/config/write {path | name, enabled}`: a `[[skills.config]]` entry of the
/// server's `config.toml`, in effect for the next listing, thread and mention; the
/// client is then sent `skills/changed`.
pub async fn config_write(
    state: &ServerState,
    p: SkillsConfigWriteParams,
) -> Result<SkillsConfigWriteResponse, RpcError> {
    let target = match (p.path, p.name) {
        (Some(path), None) => SkillTarget::Path(PathBuf::from(path)),
        (None, Some(name)) => SkillTarget::Name(name),
        _ => {
            return Err(RpcError::invalid_params(
                "give `path` or `name` of the skill, not both and not neither",
                Some("path".into()),
            ))
        }
    };
    let written = state
        .kernel
        .write_skill_config(target, p.enabled)
        .await
        .map_err(|e| match &e {
            SkillWriteError::RelativePath(_) | SkillWriteError::NotASkill(_) => {
                RpcError::invalid_params(&e, Some("path".into()))
            }
            SkillWriteError::EmptyName => RpcError::invalid_params(&e, Some("name".into())),
            SkillWriteError::Write(ConfigWriteError::Io { .. }) => RpcError::internal(e),
            SkillWriteError::Write(_) => RpcError::invalid_request(e.to_string()),
        })?;
    // What this client listed is stale now (`enabled` changed): the same signal as an
    // edit on disk, after the answer.
    state.notify_after_answer(ServerNotification::SkillsChanged(
        SkillsChangedNotification {},
    ));
    Ok(SkillsConfigWriteResponse {
        effective_enabled: written.effective_enabled,
    })
}

/// `skills/extraRoots/set {extraRoots}`: these roots (absolute folders) replace the extra
/// skill roots of this server process, for every directory, in memory only (Codex's
/// "not persisted"); the next `skills/list`, thread and mention see them. The client is
/// then sent `skills/changed`, as after a config write.
pub async fn extra_roots_set(
    state: &ServerState,
    p: SkillsExtraRootsSetParams,
) -> Result<SkillsExtraRootsSetResponse, RpcError> {
    let roots = p.extra_roots.into_iter().map(PathBuf::from).collect();
    state
        .kernel
        .set_skill_extra_roots(roots)
        .await
        .map_err(|e| match e {
            ExtraRootsError::Check(_) => RpcError::internal(e),
            _ => RpcError::invalid_params(&e, Some("extraRoots".into())),
        })?;
    state.notify_after_answer(ServerNotification::SkillsChanged(
        SkillsChangedNotification {},
    ));
    Ok(SkillsExtraRootsSetResponse {})
}

/// One directory's skills and errors as Codex lists them (`rein skills list --json` too).
pub fn entry(cwd: String, outcome: &SkillsOutcome) -> SkillsListEntry {
    SkillsListEntry {
        cwd,
        skills: outcome.skills.iter().map(metadata).collect(),
        errors: outcome
            .errors
            .iter()
            .map(|e| SkillErrorInfo {
                path: e.path.display().to_string(),
                message: e.message.clone(),
            })
            .collect(),
    }
}

fn metadata(skill: &Skill) -> SkillMetadata {
    let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
    SkillMetadata {
        name: skill.name.clone(),
        description: skill.description.clone(),
        short_description: skill.short_description.clone(),
        interface: skill.interface.as_ref().map(|i| SkillInterface {
            display_name: i.display_name.clone(),
            short_description: i.short_description.clone(),
            icon_small: path(&i.icon_small),
            icon_large: path(&i.icon_large),
            brand_color: i.brand_color.clone(),
            default_prompt: i.default_prompt.clone(),
        }),
        dependencies: skill.dependencies.as_ref().map(|tools| SkillDependencies {
            tools: tools
                .iter()
                .map(|t| SkillToolDependency {
                    kind: t.kind.clone(),
                    value: t.value.clone(),
                    description: t.description.clone(),
                    transport: t.transport.clone(),
                    command: t.command.clone(),
                    url: t.url.clone(),
                })
                .collect(),
        }),
        path: skill.path.display().to_string(),
        scope: skill.scope.as_str().to_owned(),
        enabled: skill.enabled,
    }
}
