//! `[advisor]`: a second model that reviews the model's batches of tool calls before the
//! policy engine judges them.
//!
//! ```toml
//! [advisor]
//! mode = "lightweight"   # "off" (default) | "lightweight" (high-risk batches) | "full"
//! profile = "reviewer"   # the advisor's model comes from this profile; default the thread's
//! timeout_ms = 20000     # past this the batch goes on without the advisor
//! ```

use std::time::Duration;

use serde::Deserialize;

/// How long the advisor may take before the batch goes on without it.
pub const DEFAULT_ADVISOR_TIMEOUT: Duration = Duration::from_secs(30);

/// Which batches the advisor reviews.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdvisorMode {
    #[default]
    Off,
    /// Only batches with a high-risk call.
    Lightweight,
    /// Every batch.
    Full,
}

/// `[advisor]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct AdvisorToml {
    #[serde(default)]
    pub mode: AdvisorMode,
    pub profile: Option<String>,
    pub timeout_ms: Option<u64>,
}

/// The resolved advisor configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdvisorConfig {
    pub mode: AdvisorMode,
    /// The advisor's model and its provider, from its profile; `None`: the thread's model.
    pub model: Option<(String, String)>,
    pub timeout: Duration,
}

impl Default for AdvisorConfig {
    fn default() -> Self {
        Self {
            mode: AdvisorMode::Off,
            model: None,
            timeout: DEFAULT_ADVISOR_TIMEOUT,
        }
    }
}
