//! Assembling a ready kernel from the user's configuration: the part `rein exec` and
//! `rein app-server` share. Loads `$REIN_HOME/config.toml` (with profile and `-c`
//! overrides), builds the model catalog, and registers the built-in tools.
//!
//! `demo` mode swaps the configured providers for the built-in scripted model, so a fresh
//! machine with no API key can run a real turn through the whole kernel.
//!
//! Architecture invariant: this is the only library crate that sees every leaf (config,
//! model providers, tools, the session store) and the kernel; front ends build their
//! kernel here and never wire leaves themselves.

pub mod admission;
pub mod client_mcp;
pub mod command_exec;
pub mod config_write;
pub mod file_search;
pub mod memory;
pub mod replay;
pub mod sessions;
mod skills_attach;
mod skills_tool;
pub mod skills_write;

/// What front ends show of skills (the loader itself stays behind [`Kernel::skills`]).
pub use rein_context::skills;
/// What `rein hooks` shows of hooks (the runner stays behind the kernel's port).
pub use rein_hooks as hooks;

use std::path::PathBuf;
use std::sync::Arc;

use rein_protocol::script::{Script, ScriptedReply, WhenExhausted};
use rein_protocol::{ApprovalPolicy, SandboxPolicy, ThreadSettings, TurnBudget};

use rein_config::{self as config, ConfigError, LoadOptions, ModelConfig};
use rein_context::{ContextConfig, ProjectDocConfig, SkillsConfig};
use rein_core::agents::{AgentRole, AgentsConfig, Strategy};
use rein_core::kernel_config::KernelConfig;
use rein_core::manager::ThreadManager;
use rein_core::model::scripted::ScriptedModel;
use rein_core::model::{ModelCatalog, ModelInfo, StaticCatalog};
use rein_core::store::SessionStore;
use rein_providers::catalog::ProviderCatalog;
use rein_rollout::writer::Durability;
use rein_rollout::{RolloutService, ServiceOptions};
use rein_tools::{builtin_tools, BuiltinConfig};

/// The model name of the built-in scripted model.
pub const DEMO_MODEL: &str = "rein-demo";

#[derive(Clone, Debug, Default)]
pub struct BootstrapOptions {
    /// `$REIN_HOME`; `None` reads it from the environment (default `~/.rein`).
    pub home: Option<PathBuf>,
    pub profile: Option<String>,
    /// `-c key=value` overrides, in order.
    pub overrides: Vec<String>,
    /// `-m`: the model, over the environment, the profile and the file.
    pub model: Option<String>,
    /// Use the built-in scripted model instead of the configured providers.
    pub demo: bool,
    pub kernel: KernelConfig,
    /// How the built-in tools (shell, apply_patch, files, plan) are set up.
    pub tools: BuiltinConfig,
    pub durability: Durability,
    /// Send no `AGENTS.md` (`rein exec --no-project-doc`).
    pub no_project_doc: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    #[error("cannot find rein's home: set REIN_HOME or HOME")]
    NoHome,
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// A kernel ready to create threads.
pub struct Kernel {
    pub manager: Arc<ThreadManager>,
    pub home: PathBuf,
    /// The model the configuration selects (the demo model in demo mode).
    pub model: String,
    pub provider: String,
    pub models: Arc<dyn ModelCatalog>,
    pub config: Option<ModelConfig>,
    /// How durable rollouts are.
    pub durability: Durability,
    /// Where persisted threads live (the manager's store).
    pub store: Arc<dyn SessionStore>,
    /// The MCP servers of `[mcp_servers]` (none in demo mode).
    pub mcp: Option<Arc<rein_mcp::McpManager>>,
    /// How a new thread's context (`AGENTS.md`) is read from files; its skills' toggles
    /// are those of [`Self::context_config`], which follow `skills/config/write`.
    pub context: ContextConfig,
    /// `[[skills.config]]` as last loaded and the client's extra skill roots.
    live_skills: std::sync::RwLock<skills_write::LiveSkills>,
    /// The user's and the projects' hooks (none in demo mode).
    pub hooks: Option<Arc<rein_hooks::UserHooks>>,
    /// The memory store of `$REIN_HOME` (`rein/memory/*` methods manage it even when `[memory]`
    /// is off; opened on first use).
    pub memory: Arc<dyn rein_core::memory::MemoryStore>,
    /// How the configuration was loaded, to load it again (`reload_mcp`).
    load_options: Option<LoadOptions>,
}

impl Kernel {
    /// A kernel assembled by the caller (tests, embedders with their own catalog): no
    /// configuration file, no MCP servers.
    pub fn from_parts(
        manager: Arc<ThreadManager>,
        home: PathBuf,
        model: String,
        provider: String,
        models: Arc<dyn ModelCatalog>,
        durability: Durability,
        store: Arc<dyn SessionStore>,
    ) -> Self {
        Self {
            memory: Arc::new(rein_rollout::memory::SqliteMemoryStore::in_home(&home)),
            manager,
            home,
            model,
            provider,
            models,
            config: None,
            durability,
            store,
            mcp: None,
            context: ContextConfig::default(),
            live_skills: Default::default(),
            hooks: None,
            load_options: None,
        }
    }

    /// Settings for a new thread in `cwd` with this kernel's model, and the configured
    /// `sandbox_mode` and `approval_policy` (else workspace-write, on-request).
    pub fn default_settings(&self, cwd: PathBuf) -> ThreadSettings {
        let config = self.config.as_ref();
        ThreadSettings {
            model: self.model.clone(),
            cwd,
            approval_policy: config
                .and_then(|c| c.approval_policy)
                .unwrap_or(ApprovalPolicy::OnRequest),
            sandbox_policy: config
                .and_then(|c| c.sandbox_mode)
                .unwrap_or(SandboxPolicy::WorkspaceWrite),
            sandbox_options: None,
            reasoning_effort: self
                .config
                .as_ref()
                .and_then(|c| c.reasoning_effort.clone()),
            budget: TurnBudget::default(),
            instructions: self
                .config
                .as_ref()
                .and_then(|c| c.instructions.clone())
                .unwrap_or_default(),
        }
    }

    /// Read `[mcp_servers]` again from the configuration: changed and removed servers
    /// stop, new ones start for threads at their next step, failed ones are retried.
    pub async fn reload_mcp(&self) -> Result<(), ConfigError> {
        let (Some(mcp), Some(options)) = (&self.mcp, &self.load_options) else {
            return Ok(());
        };
        let env = |k: &str| std::env::var(k).ok();
        let config = config::load(options, &env)?;
        mcp.reload(&config.mcp_servers).await;
        Ok(())
    }

    /// The skills a thread in `cwd` would have (`skills/list`), read on a blocking thread.
    pub async fn skills(&self, cwd: PathBuf) -> rein_context::SkillsOutcome {
        list_skills(self.context_config().skills, cwd).await
    }

    /// Watch the skill roots of `cwds` (`skills/changed`): `changed` runs after each change
    /// under them, until the watch is dropped. Set up on a blocking thread (a recursive
    /// watch walks the folders).
    pub async fn watch_skills(
        &self,
        cwds: Vec<PathBuf>,
        changed: impl Fn() + Send + 'static,
    ) -> Result<skills::watch::SkillsWatch, skills::watch::WatchError> {
        let config = self.context_config().skills;
        tokio::task::spawn_blocking(move || skills::watch::watch(&config, &cwds, changed))
            .await
            .unwrap_or_else(|e| Err(skills::watch::WatchError::Setup(e.to_string())))
    }

    /// Shut every thread down (everything durable), then stop the MCP servers (no server
    /// process is left behind): what a front end runs before the process exits.
    pub async fn shutdown(&self) {
        self.manager.shutdown_all().await;
        if let Some(mcp) = &self.mcp {
            mcp.shutdown().await;
        }
    }
}

pub fn bootstrap(
    options: BootstrapOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Kernel, BootstrapError> {
    // The provider keys are in this process's environment and memory: no command it runs
    // may read them through /proc.
    rein_tools::sandbox::protect_this_process();
    let home = match options.home.clone() {
        Some(home) => home,
        None => config::rein_home(env).ok_or(BootstrapError::NoHome)?,
    };
    let (models, model, provider, config): (
        Arc<dyn ModelCatalog>,
        String,
        String,
        Option<ModelConfig>,
    ) = if options.demo {
        (demo_catalog(), DEMO_MODEL.into(), "scripted".into(), None)
    } else {
        let config = config::load(&load_options(&home, &options), env)?;
        let catalog = ProviderCatalog::from_config(&config, env)?;
        (
            Arc::new(catalog),
            config.model.clone(),
            config.provider.clone(),
            Some(config),
        )
    };
    let reload_with = (!options.demo).then(|| load_options(&home, &options));
    let kernel_config = kernel_config(options.kernel, config.as_ref());
    let store: Arc<dyn SessionStore> = RolloutService::start(
        home.clone(),
        ServiceOptions {
            durability: options.durability,
            ..ServiceOptions::default()
        },
    );
    let agents = agents_config(config.as_ref().map(|c| &c.agents));
    let hooks = config.as_ref().map(|c| user_hooks(&home, c, env));
    let mut builder = ThreadManager::builder(Arc::clone(&models))
        .tools(builtin_tools(options.tools))
        .config(kernel_config)
        .store(Arc::clone(&store))
        .agents(agents);
    if let Some(hooks) = &hooks {
        builder = builder.hooks(Arc::clone(hooks) as Arc<dyn rein_core::hooks::Hooks>);
    }
    let (memory, kernel_memory) = memory::wire(&home, config.as_ref().map(|c| &c.memory));
    if let Some(kernel_memory) = kernel_memory {
        builder = builder.memory(kernel_memory);
    }
    let manager = builder.build_shared();
    let mcp = config.as_ref().map(mcp_manager);
    if let Some(mcp) = &mcp {
        manager.add_thread_tool_source(Arc::clone(mcp) as _);
    }
    let context = context_config(&home, config.as_ref(), options.no_project_doc, env);
    let live_skills = skills_write::LiveSkills::new(context.skills.toggles.clone());
    Ok(Kernel {
        manager,
        home,
        model,
        provider,
        models,
        config,
        durability: options.durability,
        store,
        mcp,
        context,
        live_skills,
        hooks,
        memory,
        load_options: reload_with,
    })
}

/// Where skills are looked for, from the configuration alone: listing skills
/// (`rein skills list`) needs no model provider or API key.
pub fn skills_config(
    options: &BootstrapOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<SkillsConfig, BootstrapError> {
    let home = match &options.home {
        Some(home) => home.clone(),
        None => config::rein_home(env).ok_or(BootstrapError::NoHome)?,
    };
    let config = config::load(&load_options(&home, options), env)?;
    Ok(context_config(&home, Some(&config), false, env).skills)
}

/// The hooks a thread in `cwd` would have (`rein hooks list`), from the configuration
/// alone, and the config file their trust is recorded in. Reads files: call it off the
/// executor.
pub fn hooks_of(
    options: &BootstrapOptions,
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &std::path::Path,
) -> Result<(hooks::Discovered, PathBuf), BootstrapError> {
    let home = match &options.home {
        Some(home) => home.clone(),
        None => config::rein_home(env).ok_or(BootstrapError::NoHome)?,
    };
    let config = config::load(&load_options(&home, options), env)?;
    let found = rein_hooks::discover(&user_hooks_options(&home, &config, env), cwd);
    Ok((found, config.config_path))
}

/// The skills of `cwd` under `config`, read on a blocking thread.
pub async fn list_skills(config: SkillsConfig, cwd: PathBuf) -> rein_context::SkillsOutcome {
    tokio::task::spawn_blocking(move || rein_context::skills::load(&config, &cwd))
        .await
        .unwrap_or_default()
}

/// Where a new thread's `AGENTS.md` comes from: `$REIN_HOME`'s global file (and
/// `$CODEX_HOME`'s, default `~/.codex`, when `[project_doc] read_codex_home`), then the
/// project's, as the configuration's Codex keys say.
fn context_config(
    home: &std::path::Path,
    config: Option<&ModelConfig>,
    no_project_doc: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> ContextConfig {
    let settings = config.map(|c| c.project_doc.clone()).unwrap_or_default();
    let mut global_dirs = vec![home.to_owned()];
    if settings.read_codex_home {
        let codex_home = env("CODEX_HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".codex")));
        global_dirs.extend(codex_home.filter(|c| c != home));
    }
    ContextConfig {
        skills: SkillsConfig {
            rein_home: Some(home.to_owned()),
            home: env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from),
            root_markers: settings.root_markers.clone(),
            toggles: config.map(skills_write::skill_toggles).unwrap_or_default(),
            ..SkillsConfig::default()
        },
        project_doc: ProjectDocConfig {
            enabled: !no_project_doc,
            global_dirs,
            max_bytes: settings.max_bytes,
            fallback_filenames: settings.fallback_filenames,
            root_markers: settings.root_markers,
        },
    }
}

/// Where hooks are read from: `$REIN_HOME/hooks.json`, config.toml's `[hooks]`, and on
/// request `$CODEX_HOME/hooks.json` (default `~/.codex`) and `~/.claude/settings.json`;
/// plus each project's files.
fn user_hooks(
    home: &std::path::Path,
    config: &ModelConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Arc<rein_hooks::UserHooks> {
    rein_hooks::UserHooks::new(user_hooks_options(home, config, env))
}

fn user_hooks_options(
    home: &std::path::Path,
    config: &ModelConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> rein_hooks::HooksOptions {
    let user_home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let codex_home = env("CODEX_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| user_home.as_ref().map(|h| h.join(".codex")));
    let config_table = (!config.hooks.is_empty())
        .then(|| serde_json::to_value(&config.hooks).ok())
        .flatten();
    rein_hooks::HooksOptions {
        rein_home: home.to_owned(),
        config_table,
        config_path: config.config_path.clone(),
        codex_home: codex_home.filter(|c| c != home),
        home: user_home,
    }
}

/// The kernel's settings: `base` refined by what the configuration says.
fn kernel_config(base: KernelConfig, config: Option<&ModelConfig>) -> KernelConfig {
    let mut kernel_config = base;
    if let Some(config) = config {
        if let Some(limit) = config.auto_compact_token_limit {
            kernel_config.auto_compact_token_limit = Some(limit);
        }
        kernel_config.advisor = config.advisor.clone();
        if let Some(cap) = config.hook_continuations {
            kernel_config.max_stop_hook_vetoes = cap;
        }
        goal_config(&mut kernel_config, &config.goals);
        kernel_config.goal_evaluator_model = config.goal_evaluator.clone().map(|(model, _)| model);
    }
    kernel_config
}

/// `[goals]` over the kernel's defaults.
fn goal_config(kernel: &mut KernelConfig, goals: &rein_config::goals::GoalsToml) {
    if let Some(on) = goals.auto_resume {
        kernel.goal_auto_resume = on;
    }
    if let Some(ms) = goals.backoff_ms {
        kernel.goal_backoff = std::time::Duration::from_millis(ms);
    }
    if let Some(n) = goals.usage_limit_retries {
        kernel.goal_usage_retries = n;
    }
    if let Some(ms) = goals.usage_limit_retry_ms {
        kernel.goal_usage_retry = std::time::Duration::from_millis(ms);
    }
    if let Some(ms) = goals.evaluator_timeout_ms {
        kernel.goal_evaluator_timeout = std::time::Duration::from_millis(ms);
    }
}

/// The MCP servers of `[mcp_servers]`, not started yet.
fn mcp_manager(config: &ModelConfig) -> Arc<rein_mcp::McpManager> {
    // Servers get a minimal environment drawn from rein's own, plus what their
    // configuration names (`env_vars`).
    let process_env: rein_mcp::Env = Arc::new(|k: &str| std::env::var(k).ok());
    let manager = rein_mcp::McpManager::new(&config.mcp_servers, process_env);
    if let Some(budget) = config.mcp_tool_budget {
        manager.set_tool_budget(budget);
    }
    manager
}

fn load_options(home: &std::path::Path, options: &BootstrapOptions) -> LoadOptions {
    LoadOptions {
        home: home.to_owned(),
        profile: options.profile.clone(),
        overrides: options.overrides.clone(),
        model: options.model.clone(),
    }
}

/// The sandbox this process confines commands with (detected once), as front ends report
/// it: they name the sandbox through bootstrap, never through `rein-tools`.
pub fn sandbox_report() -> rein_tools::sandbox::SandboxReport {
    rein_tools::sandbox::Sandbox::detected().report()
}

/// The built-in scripted model: it looks at the working directory with the shell tool
/// (a real, sandboxed process), then streams an answer; later prompts are echoed.
pub fn demo_catalog() -> Arc<StaticCatalog> {
    let mut look = ScriptedReply::text("Let me look at the working directory first.")
        .with_tool_call("shell", serde_json::json!({ "command": ["ls", "-a"] }));
    look.delay_ms = 15;
    look.deltas = Some(4);
    let mut reply = ScriptedReply::text(
        "Hello from rein. This answer was streamed by the built-in scripted model through \
         the whole kernel: the thread's submission loop routed your input, started a turn, \
         froze a step snapshot, sampled the model, ran its shell call in the sandbox, fed the \
         output back and folded every event into the thread's state.",
    )
    .with_deltas(12);
    reply.reasoning = Some("The user wants to see rein run a turn; answer plainly.".into());
    reply.delay_ms = 15;
    let model = ScriptedModel::new(Script {
        replies: vec![look, reply],
        when_exhausted: WhenExhausted::Echo,
        asides: Vec::new(),
    });
    Arc::new(StaticCatalog::new().with(
        ModelInfo {
            id: DEMO_MODEL.into(),
            provider: "scripted".into(),
            context_window: Some(128_000),
            traits: Default::default(),
        },
        model,
    ))
}

/// The kernel's sub-agent limits: what the configuration says over the kernel's defaults.
fn agents_config(file: Option<&rein_config::agents::AgentsSettings>) -> AgentsConfig {
    let defaults = AgentsConfig::default();
    let Some(file) = file else {
        return defaults;
    };
    AgentsConfig {
        enabled: file.enabled.unwrap_or(defaults.enabled),
        max_depth: file.max_depth.unwrap_or(defaults.max_depth),
        max_threads: file.max_threads.unwrap_or(defaults.max_threads),
        max_concurrent_turns: file.max_concurrent_turns.or(defaults.max_concurrent_turns),
        max_tree_tokens: file.max_tree_tokens.or(defaults.max_tree_tokens),
        roles: merged_roles(defaults.roles.clone(), &file.roles),
        strategy: match file.strategy {
            Some(rein_config::agents::Strategy::Planner) => Strategy::Planner,
            Some(rein_config::agents::Strategy::Single) => Strategy::Single,
            None => defaults.strategy,
        },
        max_review_rounds: file.max_review_rounds.unwrap_or(defaults.max_review_rounds),
        max_retries: file.max_retries.unwrap_or(defaults.max_retries),
        retry_backoff_ms: file.retry_backoff_ms.unwrap_or(defaults.retry_backoff_ms),
        ..defaults
    }
}

/// The built-in roles with `[agents.roles]` over them (field by field).
fn merged_roles(
    mut roles: std::collections::BTreeMap<String, AgentRole>,
    file: &std::collections::BTreeMap<String, rein_config::agents::RoleToml>,
) -> std::collections::BTreeMap<String, AgentRole> {
    for (name, toml) in file {
        let role = roles.entry(name.clone()).or_insert_with(|| AgentRole {
            may_spawn: true,
            ..AgentRole::default()
        });
        if let Some(d) = &toml.description {
            role.description.clone_from(d);
        }
        if toml.model.is_some() {
            role.model.clone_from(&toml.model);
        }
        if toml.reasoning_effort.is_some() {
            role.reasoning_effort.clone_from(&toml.reasoning_effort);
        }
        if let Some(i) = &toml.instructions {
            role.instructions.clone_from(i);
        }
        if toml.tools.is_some() {
            role.tools.clone_from(&toml.tools);
        }
        if toml.sandbox_mode.is_some() {
            role.sandbox = toml.sandbox_mode;
        }
        if let Some(m) = toml.may_spawn {
            role.may_spawn = m;
        }
    }
    roles
}
