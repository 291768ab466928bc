//! rein's configuration for model providers: `$REIN_HOME/config.toml`, refined by a
//! profile and by `-c key=value` overrides, resolved into a [`ModelConfig`] — which model
//! to run, on which provider, and what to fall back to.
//!
//! ```toml
//! model = "gpt-5"
//! model_provider = "openai"
//! model_context_window = 272000
//! profile = "local"                  # optional: the profile used by default
//!
//! [model_providers.vllm]
//! name = "vLLM"
//! base_url = "http://127.0.0.1:8000/v1"
//! wire_api = "chat"                  # or "responses"
//! env_key = "VLLM_API_KEY"           # omit for servers without keys
//! http_headers = { "X-Team" = "core" }
//! env_http_headers = { "OpenAI-Organization" = "OPENAI_ORGANIZATION" }   # value from the env
//! query_params = { "api-version" = "2025-04-01" }
//! request_max_retries = 4
//! stream_max_retries = 5
//! stream_idle_timeout_ms = 300000
//!
//! [profiles.local]
//! model = "qwen3-coder"
//! model_provider = "ollama"
//! fallback_model = "gpt-5-mini"
//! fallback_provider = "openai"       # defaults to the profile's provider
//! ```
//!
//! Architecture invariant: the environment is passed in (`env`), never read here, so tests
//! need no `std::env::set_var` and keys stay where the caller keeps them.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod acp;
pub mod advisor;
pub mod agents;
pub mod error;
pub mod goals;
pub mod hooks_state;
pub mod mcp;
pub mod memory;
pub mod overrides;
pub mod policy;
pub mod project_doc;
pub mod provider;
pub mod skills;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rein_protocol::{ApprovalPolicy, ReasoningEffort, SandboxPolicy};
use serde::Deserialize;

use policy::Policy;

pub use acp::{AcpSettings, AcpToml};
pub use advisor::{AdvisorConfig, AdvisorMode, AdvisorToml};
pub use error::{ConfigError, OverrideProblem};
pub use overrides::Override;
pub use policy::{Fallback, ModelTable, ModelToml, ENV_VARS};
pub use project_doc::{ProjectDocSettings, ProjectDocToml};
pub use provider::{ProviderInfo, ProviderToml, ThinkingOff, WireApi};

/// The model used when neither the file nor a profile names one.
pub const DEFAULT_MODEL: &str = "gpt-5";
pub const DEFAULT_PROVIDER: &str = "openai";

/// The file as written (after overrides). Keys rein does not know are ignored, so one
/// file can carry settings for other parts of rein.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ConfigToml {
    pub model: Option<String>,
    pub model_provider: Option<String>,
    pub model_context_window: Option<u64>,
    pub model_auto_compact_token_limit: Option<u64>,
    pub model_reasoning_effort: Option<ReasoningEffort>,
    /// Codex's keys and values (`read-only`, `workspace-write`, `danger-full-access`;
    /// `untrusted`, `on-failure`, `on-request`, `never`); any other value fails the load.
    pub sandbox_mode: Option<SandboxPolicy>,
    pub approval_policy: Option<ApprovalPolicy>,
    /// The model a request carrying images goes to when `model` is not known to read them.
    pub multimodal_model: Option<String>,
    pub multimodal_provider: Option<String>,
    pub fallback_model: Option<String>,
    pub fallback_provider: Option<String>,
    /// `[models.NAME]`: what a model accepts, over what rein's catalog knows of it.
    #[serde(default)]
    pub models: ModelTable,
    pub profile: Option<String>,
    /// A file whose text is the instructions every new thread sends (relative paths are
    /// read from `$REIN_HOME`).
    pub model_instructions_file: Option<PathBuf>,
    #[serde(default)]
    pub model_providers: BTreeMap<String, ProviderToml>,
    #[serde(default)]
    pub profiles: BTreeMap<String, ProfileToml>,
    #[serde(default)]
    pub agents: agents::AgentsToml,
    #[serde(default)]
    pub features: agents::FeaturesToml,
    pub advisor: Option<AdvisorToml>,
    #[serde(default)]
    pub acp: AcpToml,
    /// `[mcp_servers.NAME]`, read by [`mcp::parse`] once the overrides are applied.
    #[serde(default)]
    pub mcp_servers: toml::Table,
    /// Codex's `AGENTS.md` keys.
    pub project_doc_max_bytes: Option<usize>,
    pub project_doc_fallback_filenames: Option<Vec<String>>,
    pub project_root_markers: Option<Vec<String>>,
    #[serde(default)]
    pub project_doc: ProjectDocToml,
    /// MCP tools offered directly at most; past it they are behind `tool_search`.
    pub mcp_tool_budget: Option<usize>,
    /// `[hooks]`: event tables in Claude Code's shape, `state` (trust) and settings, read
    /// by `rein-hooks`.
    #[serde(default)]
    pub hooks: toml::Table,
    /// `[memory]`.
    #[serde(default)]
    pub memory: memory::MemoryToml,
    /// `[goals]`.
    #[serde(default)]
    pub goals: goals::GoalsToml,
    /// `[[skills.config]]`: skills switched on or off.
    #[serde(default)]
    pub skills: skills::SkillsToml,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct ProfileToml {
    pub model: Option<String>,
    pub model_provider: Option<String>,
    pub model_context_window: Option<u64>,
    pub model_auto_compact_token_limit: Option<u64>,
    pub model_reasoning_effort: Option<ReasoningEffort>,
    pub sandbox_mode: Option<SandboxPolicy>,
    pub approval_policy: Option<ApprovalPolicy>,
    pub multimodal_model: Option<String>,
    pub multimodal_provider: Option<String>,
    pub fallback_model: Option<String>,
    pub fallback_provider: Option<String>,
}

/// The resolved model configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelConfig {
    pub model: String,
    pub provider: String,
    pub context_window: Option<u64>,
    /// Compact once the context passes this many tokens (default: 90% of the window).
    pub auto_compact_token_limit: Option<u64>,
    pub reasoning_effort: Option<ReasoningEffort>,
    /// `sandbox_mode` and `approval_policy` (the profile's, else the file's, `-c` applied):
    /// what a new thread gets unless its front end or request says otherwise.
    pub sandbox_mode: Option<SandboxPolicy>,
    pub approval_policy: Option<ApprovalPolicy>,
    /// The text of `model_instructions_file`, read when the configuration was loaded.
    pub instructions: Option<String>,
    /// The model to try once when the main one fails recoverably after its retries.
    pub fallback: Option<Fallback>,
    /// Where requests carrying images go when the model is not known to read them.
    pub multimodal: Option<Fallback>,
    /// `[models.NAME]` as written.
    pub models: ModelTable,
    /// The active profile, if any.
    pub profile: Option<String>,
    /// Every known provider: built-ins refined by the file, plus the file's own.
    pub providers: BTreeMap<String, ProviderInfo>,
    /// Where the configuration was read from (it need not exist).
    pub config_path: PathBuf,
    /// Sub-agents: on or off, and the limits of a tree.
    pub agents: agents::AgentsSettings,
    pub advisor: AdvisorConfig,
    /// `[acp]`: what `rein acp` asks of the editor.
    pub acp: AcpSettings,
    /// `[mcp_servers]` (after overrides), checked, in name order.
    pub mcp_servers: Vec<mcp::McpServerConfig>,
    /// How `AGENTS.md` files are found and capped.
    pub project_doc: ProjectDocSettings,
    /// `mcp_tool_budget`, if set.
    pub mcp_tool_budget: Option<usize>,
    /// `[hooks]` as written (after overrides).
    pub hooks: toml::Table,
    /// `[hooks] max_continuations`: how many times `Stop` / `SubagentStop` hooks may continue
    /// one turn (the kernel's default when unset).
    pub hook_continuations: Option<u32>,
    /// `[memory]`, resolved.
    pub memory: memory::MemorySettings,
    /// `[goals]` as written (the kernel's defaults fill in the rest).
    pub goals: goals::GoalsToml,
    /// The model and provider of `[goals] evaluator_profile`, which answers a goal's
    /// evaluator verifiers; `None`: the thread's model.
    pub goal_evaluator: Option<(String, String)>,
    /// `[[skills.config]]`, in file order (the last entry matching a skill decides).
    pub skill_toggles: Vec<rein_protocol::SkillToggle>,
}

/// What to load: where, which profile, which overrides.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// `$REIN_HOME`; the file is `config.toml` inside it.
    pub home: PathBuf,
    /// Overrides the file's `profile` key.
    pub profile: Option<String>,
    /// `-c key=value` arguments, applied in order.
    pub overrides: Vec<String>,
    /// `-m`: the model, over the environment, the profile and the file.
    pub model: Option<String>,
}

/// `$REIN_HOME`, else `~/.rein`.
pub fn rein_home(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(home) = env("REIN_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home));
    }
    env("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| Path::new(&h).join(".rein"))
}

/// Read `config.toml` from `options.home` (a missing file means defaults) and resolve it.
pub fn load(
    options: &LoadOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ModelConfig, ConfigError> {
    let path = options.home.join("config.toml");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(ConfigError::Read { path, source }),
    };
    resolve(&text, &path, options, env)
}

/// Refused unless `id` is one of `providers`, naming the known ones.
fn known_provider(
    providers: &BTreeMap<String, ProviderInfo>,
    id: &str,
    path: &Path,
) -> Result<(), ConfigError> {
    if providers.contains_key(id) {
        return Ok(());
    }
    Err(ConfigError::UnknownProvider {
        id: id.to_owned(),
        known: join_keys(providers),
        config_path: path.to_owned(),
    })
}

/// The profile `name` of the file, or an error naming the known ones.
fn profile_named(file: &ConfigToml, name: &str, path: &Path) -> Result<ProfileToml, ConfigError> {
    file.profiles
        .get(name)
        .cloned()
        .ok_or_else(|| ConfigError::UnknownProfile {
            name: name.to_owned(),
            known: join_keys(&file.profiles),
            config_path: path.to_owned(),
        })
}

/// `model_instructions_file`, relative to the configuration file's directory.
fn read_instructions(config_path: &Path, file: &Path) -> Result<String, ConfigError> {
    let at = config_path.parent().unwrap_or(Path::new("")).join(file);
    std::fs::read_to_string(&at).map_err(|source| ConfigError::Read { path: at, source })
}

/// Resolve configuration `text` as if read from `path`.
pub fn resolve(
    text: &str,
    path: &Path,
    options: &LoadOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ModelConfig, ConfigError> {
    let parse_error = |source| ConfigError::Parse {
        path: path.to_owned(),
        source,
    };
    let mut table: toml::Table = toml::from_str(text).map_err(parse_error)?;
    for arg in &options.overrides {
        Override::parse(arg)?.apply(&mut table, arg)?;
    }
    let file: ConfigToml = toml::Value::Table(table).try_into().map_err(parse_error)?;
    let mut providers = ProviderInfo::built_ins(env);
    for (id, t) in &file.model_providers {
        let p = ProviderInfo::from_toml(id, providers.get(id), t)?;
        providers.insert(id.clone(), p);
    }
    let profile_name = options.profile.clone().or_else(|| file.profile.clone());
    let profile = match &profile_name {
        None => ProfileToml::default(),
        Some(name) => profile_named(&file, name, path)?,
    };
    let policy = Policy::resolve(options, env, &profile, &file);
    let provider = policy.provider.clone();
    let known = |id: &str| known_provider(&providers, id, path);
    known(&provider)?;
    for second in [&policy.fallback, &policy.multimodal].into_iter().flatten() {
        known(&second.provider)?;
    }
    let advisor = resolve_advisor(&file, &provider, path, &known)?;
    let memory = resolve_memory(&file, &provider, path, &known)?;
    let goal_evaluator = match &file.goals.evaluator_profile {
        Some(name) => profile_model(&file, name, &provider, path, &known)?,
        None => None,
    };
    let instructions = file
        .model_instructions_file
        .as_deref()
        .map(|file| read_instructions(path, file))
        .transpose()?;
    let project_doc = project_doc_settings(&file);
    Ok(ModelConfig {
        model: policy.model,
        provider,
        context_window: profile.model_context_window.or(file.model_context_window),
        auto_compact_token_limit: profile
            .model_auto_compact_token_limit
            .or(file.model_auto_compact_token_limit),
        sandbox_mode: profile.sandbox_mode.or(file.sandbox_mode),
        approval_policy: profile.approval_policy.or(file.approval_policy),
        reasoning_effort: policy.effort,
        instructions,
        fallback: policy.fallback,
        multimodal: policy.multimodal,
        models: file.models,
        profile: profile_name,
        providers,
        config_path: path.to_owned(),
        agents: agents::agents_settings(&file.agents, &file.features),
        advisor,
        acp: file.acp.resolve(),
        project_doc,
        mcp_servers: mcp::parse(&file.mcp_servers).map_err(|source| ConfigError::McpServer {
            config_path: path.to_owned(),
            source,
        })?,
        mcp_tool_budget: file.mcp_tool_budget,
        hook_continuations: hook_continuations(&file.hooks, path)?,
        memory,
        goals: file.goals.clone(),
        goal_evaluator,
        skill_toggles: file
            .skills
            .resolve()
            .map_err(|problem| ConfigError::SkillConfig {
                problem,
                config_path: path.to_owned(),
            })?,
        hooks: file.hooks,
    })
}

/// `[hooks] max_continuations`, checked: a cap that is not a small whole number would
/// either loop a turn for ever or say nothing.
fn hook_continuations(hooks: &toml::Table, path: &Path) -> Result<Option<u32>, ConfigError> {
    let Some(value) = hooks.get("max_continuations") else {
        return Ok(None);
    };
    match value.as_integer().map(u32::try_from) {
        Some(Ok(n)) if n <= 100 => Ok(Some(n)),
        _ => Err(ConfigError::HookContinuations {
            value: value.to_string(),
            config_path: path.to_owned(),
        }),
    }
}

fn project_doc_settings(file: &ConfigToml) -> ProjectDocSettings {
    let defaults = ProjectDocSettings::default();
    ProjectDocSettings {
        max_bytes: file.project_doc_max_bytes.unwrap_or(defaults.max_bytes),
        fallback_filenames: file
            .project_doc_fallback_filenames
            .clone()
            .unwrap_or(defaults.fallback_filenames),
        root_markers: file
            .project_root_markers
            .clone()
            .unwrap_or(defaults.root_markers),
        read_codex_home: file.project_doc.read_codex_home.unwrap_or(false),
    }
}

/// `[advisor]` resolved: its profile's model (and provider, by default the main one).
fn resolve_advisor(
    file: &ConfigToml,
    main_provider: &str,
    path: &Path,
    known: &dyn Fn(&str) -> Result<(), ConfigError>,
) -> Result<AdvisorConfig, ConfigError> {
    let Some(advisor) = &file.advisor else {
        return Ok(AdvisorConfig::default());
    };
    let model = match &advisor.profile {
        None => None,
        Some(name) => profile_model(file, name, main_provider, path, known)?,
    };
    Ok(AdvisorConfig {
        mode: advisor.mode,
        model,
        timeout: advisor.timeout_ms.map_or(
            advisor::DEFAULT_ADVISOR_TIMEOUT,
            std::time::Duration::from_millis,
        ),
    })
}

/// The model (and provider, by default the main one) of profile `name`, for a second
/// model (the advisor, a goal's evaluator, the memory extraction); an unknown profile
/// fails the load.
fn profile_model(
    file: &ConfigToml,
    name: &str,
    main_provider: &str,
    path: &Path,
    known: &dyn Fn(&str) -> Result<(), ConfigError>,
) -> Result<Option<(String, String)>, ConfigError> {
    let profile = file
        .profiles
        .get(name)
        .ok_or_else(|| ConfigError::UnknownProfile {
            name: name.to_owned(),
            known: join_keys(&file.profiles),
            config_path: path.to_owned(),
        })?;
    let provider = profile
        .model_provider
        .clone()
        .unwrap_or_else(|| main_provider.to_owned());
    known(&provider)?;
    Ok(profile.model.clone().map(|m| (m, provider)))
}

/// `[memory]` resolved, with the extraction's model from its profile (`extract_profile`)
/// or the main provider (`extract_model`).
fn resolve_memory(
    file: &ConfigToml,
    main_provider: &str,
    path: &Path,
    known: &dyn Fn(&str) -> Result<(), ConfigError>,
) -> Result<memory::MemorySettings, ConfigError> {
    let toml = &file.memory;
    let mut settings = toml.resolve();
    settings.extract_model = match (&toml.extract_profile, &toml.extract_model) {
        (Some(_), Some(_)) => {
            return Err(ConfigError::MemoryExtractModel {
                config_path: path.to_owned(),
            })
        }
        (Some(name), None) => profile_model(file, name, main_provider, path, known)?,
        (None, Some(model)) => Some((model.clone(), main_provider.to_owned())),
        (None, None) => None,
    };
    Ok(settings)
}

fn join_keys<V>(map: &BTreeMap<String, V>) -> String {
    if map.is_empty() {
        return "none".into();
    }
    map.keys().cloned().collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
