//! What can be wrong with the configuration. Each message says what to set, and where.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("could not read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not valid: {source}", path.display())]
    Parse {
        path: PathBuf,
        source: toml::de::Error,
    },
    #[error("bad override `-c {arg}`: {problem}")]
    Override {
        arg: String,
        problem: OverrideProblem,
    },
    #[error(
        "unknown model provider `{id}`: set `model_provider` to one of {known}, \
         or define [model_providers.{id}] with a `base_url` in {}",
        config_path.display()
    )]
    UnknownProvider {
        id: String,
        known: String,
        config_path: PathBuf,
    },
    #[error(
        "unknown profile `{name}`: define [profiles.{name}] in {} (known: {known})",
        config_path.display()
    )]
    UnknownProfile {
        name: String,
        known: String,
        config_path: PathBuf,
    },
    #[error("the model provider `{provider}` needs an API key: set the environment variable {env_key}{}",
        instructions.as_deref().map(|i| format!(" ({i})")).unwrap_or_default())]
    MissingApiKey {
        provider: String,
        env_key: String,
        instructions: Option<String>,
    },
    #[error(
        "the model provider `{provider}` has no base_url: set model_providers.{provider}.base_url"
    )]
    MissingBaseUrl { provider: String },
    #[error("the model provider `{provider}` has an invalid base_url `{url}`: {reason}")]
    InvalidBaseUrl {
        provider: String,
        url: String,
        reason: String,
    },
    #[error("the model provider `{provider}` has an invalid HTTP header `{name}` in http_headers")]
    InvalidHeader { provider: String, name: String },
    #[error(
        "{message}: set model_reasoning_effort to one of those (or list the model's efforts \
         in [models.NAME] reasoning_efforts) in {}",
        config_path.display()
    )]
    UnsupportedEffort {
        message: String,
        config_path: PathBuf,
    },
    #[error("{}: {source}", config_path.display())]
    McpServer {
        config_path: PathBuf,
        source: crate::mcp::McpServerError,
    },
    #[error(
        "{}: `hooks.max_continuations` must be a whole number from 0 to 100, not {value}",
        config_path.display()
    )]
    HookContinuations { value: String, config_path: PathBuf },
    #[error(
        "{}: `[memory]` names the extraction's model twice: give `extract_profile` (a profile's \
         model and provider) or `extract_model` (a model of the main provider), not both",
        config_path.display()
    )]
    MemoryExtractModel { config_path: PathBuf },
    #[error("{}: {problem}", config_path.display())]
    SkillConfig {
        problem: crate::skills::SkillConfigProblem,
        config_path: PathBuf,
    },
    #[error("could not set up the HTTP client: {0}")]
    HttpClient(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Why a `-c key=value` argument was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OverrideProblem {
    #[error("expected key=value")]
    MissingEquals,
    #[error("the key must be dot-separated names, e.g. model_providers.ollama.base_url")]
    BadKey,
    #[error("`{key}` is a value, not a table")]
    NotATable { key: String },
}
