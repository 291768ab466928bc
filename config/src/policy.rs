//! The model policy: which model, provider, reasoning effort, multimodal model and
//! fallback model a run uses. Each is taken from the first layer that sets it:
//!
//! 1. request parameters (`rein exec -m`, [`LoadOptions::model`]; a turn's own settings
//!    win over all of this later, in the kernel),
//! 2. environment variables (`REIN_MODEL`, … — see [`ENV_VARS`]),
//! 3. the active profile (`[profiles.NAME]`),
//! 4. the file's top level (after `-c key=value` overrides, which edit the file),
//! 5. built-in defaults.
//!
//! A provider left unset in every layer is the main provider for the multimodal and
//! fallback models, so `multimodal_model = "qwen2.5-vl"` alone runs on the same server.

use std::collections::BTreeMap;

use rein_protocol::ReasoningEffort;
use serde::Deserialize;

use super::{ConfigToml, LoadOptions, ProfileToml, DEFAULT_MODEL, DEFAULT_PROVIDER};

pub const ENV_MODEL: &str = "REIN_MODEL";
pub const ENV_PROVIDER: &str = "REIN_MODEL_PROVIDER";
pub const ENV_EFFORT: &str = "REIN_REASONING_EFFORT";
pub const ENV_MULTIMODAL_MODEL: &str = "REIN_MULTIMODAL_MODEL";
pub const ENV_MULTIMODAL_PROVIDER: &str = "REIN_MULTIMODAL_PROVIDER";
pub const ENV_FALLBACK_MODEL: &str = "REIN_FALLBACK_MODEL";
pub const ENV_FALLBACK_PROVIDER: &str = "REIN_FALLBACK_PROVIDER";

/// Every environment variable of the policy, for docs and `--help`.
pub const ENV_VARS: &[&str] = &[
    ENV_MODEL,
    ENV_PROVIDER,
    ENV_EFFORT,
    ENV_MULTIMODAL_MODEL,
    ENV_MULTIMODAL_PROVIDER,
    ENV_FALLBACK_MODEL,
    ENV_FALLBACK_PROVIDER,
];

/// A second model and the provider serving it (the fallback, the multimodal model).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fallback {
    pub model: String,
    pub provider: String,
}

/// `[models.NAME]`: what rein should believe of a model, over what its catalog knows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct ModelToml {
    /// `["text", "image"]` for a model that reads images, `["text"]` for one that does not.
    pub input_modalities: Option<Vec<String>>,
    /// The efforts the model accepts; others are refused before any request.
    pub reasoning_efforts: Option<Vec<ReasoningEffort>>,
}

/// One layer's say on the policy.
#[derive(Default)]
struct Layer {
    model: Option<String>,
    provider: Option<String>,
    effort: Option<ReasoningEffort>,
    multimodal_model: Option<String>,
    multimodal_provider: Option<String>,
    fallback_model: Option<String>,
    fallback_provider: Option<String>,
}

/// The policy resolved.
pub(crate) struct Policy {
    pub model: String,
    pub provider: String,
    pub effort: Option<ReasoningEffort>,
    pub multimodal: Option<Fallback>,
    pub fallback: Option<Fallback>,
}

impl Policy {
    pub(crate) fn resolve(
        options: &LoadOptions,
        env: &dyn Fn(&str) -> Option<String>,
        profile: &ProfileToml,
        file: &ConfigToml,
    ) -> Self {
        let layers = [
            Layer {
                model: options.model.clone(),
                ..Layer::default()
            },
            env_layer(env),
            Layer {
                model: profile.model.clone(),
                provider: profile.model_provider.clone(),
                effort: profile.model_reasoning_effort.clone(),
                multimodal_model: profile.multimodal_model.clone(),
                multimodal_provider: profile.multimodal_provider.clone(),
                fallback_model: profile.fallback_model.clone(),
                fallback_provider: profile.fallback_provider.clone(),
            },
            Layer {
                model: file.model.clone(),
                provider: file.model_provider.clone(),
                effort: file.model_reasoning_effort.clone(),
                multimodal_model: file.multimodal_model.clone(),
                multimodal_provider: file.multimodal_provider.clone(),
                fallback_model: file.fallback_model.clone(),
                fallback_provider: file.fallback_provider.clone(),
            },
        ];
        let first = |pick: fn(&Layer) -> Option<String>| layers.iter().find_map(pick);
        let provider = first(|l| l.provider.clone()).unwrap_or_else(|| DEFAULT_PROVIDER.into());
        let second = |model: Option<String>, own: Option<String>| {
            model.map(|model| Fallback {
                model,
                provider: own.unwrap_or_else(|| provider.clone()),
            })
        };
        Self {
            model: first(|l| l.model.clone()).unwrap_or_else(|| DEFAULT_MODEL.into()),
            effort: layers.iter().find_map(|l| l.effort.clone()),
            multimodal: second(
                first(|l| l.multimodal_model.clone()),
                first(|l| l.multimodal_provider.clone()),
            ),
            fallback: second(
                first(|l| l.fallback_model.clone()),
                first(|l| l.fallback_provider.clone()),
            ),
            provider,
        }
    }
}

/// The environment's layer; empty variables are unset.
fn env_layer(env: &dyn Fn(&str) -> Option<String>) -> Layer {
    let var = |name: &str| {
        env(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    Layer {
        model: var(ENV_MODEL),
        provider: var(ENV_PROVIDER),
        // Trimmed and non-empty, so always a valid name.
        effort: var(ENV_EFFORT).and_then(|name| ReasoningEffort::new(&name).ok()),
        multimodal_model: var(ENV_MULTIMODAL_MODEL),
        multimodal_provider: var(ENV_MULTIMODAL_PROVIDER),
        fallback_model: var(ENV_FALLBACK_MODEL),
        fallback_provider: var(ENV_FALLBACK_PROVIDER),
    }
}

/// `[models]` as written.
pub type ModelTable = BTreeMap<String, ModelToml>;
