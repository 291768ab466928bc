//! `[advisor]`: a second model that reviews the model's batches of tool calls before the
//! policy engine judges them.
//!
//! ```toml
//! [advisor]
//! mode = "lightweight"   # "off" (default) | "lightweight" (high-risk batches) | "full"
//! profile = "reviewer"   # the advisor's model comes from this profile; default the thread's
//! timeout_ms = 20000     # past this the batch goes on without the advisor
//! ```

use serde::Deserialize;

pub use rein_protocol::advisor::{AdvisorConfig, AdvisorMode, DEFAULT_ADVISOR_TIMEOUT};

/// `[advisor]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct AdvisorToml {
    #[serde(default)]
    pub mode: AdvisorMode,
    pub profile: Option<String>,
    pub timeout_ms: Option<u64>,
}
