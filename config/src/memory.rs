//! `[memory]`: what the agent keeps across threads (docs/memory.md).
//!
//! ```toml
//! [memory]
//! enabled = true          # default false: no `remember` tool, no recall
//! consent = "ask"         # repo and user memories: "ask" (default) | "auto" | "never"
//! max_tokens = 400        # the memories given to one turn, at most (estimated tokens)
//! max_unused_days = 90    # retire memories nobody used for this long (default: never)
//! extract = true          # default false: propose memories from the conversation
//! extract_after_turns = 10  # ... after every this many completed turns (default 10)
//! extract_profile = "cheap" # the extraction's model (and provider) from this profile
//! extract_model = "small"   # or: a model of the main provider (default: the thread's)
//! consolidate = true        # default false: after each extraction, write MEMORY.md files
//! ```

use serde::Deserialize;

pub use rein_protocol::MemoryConsent;

/// The default budget of one turn's memories, in estimated tokens.
pub const DEFAULT_MEMORY_TOKENS: u32 = 400;

/// How many completed turns an extraction follows by default (`extract_after_turns`).
pub const DEFAULT_EXTRACT_AFTER_TURNS: u32 = 10;

/// `[memory]` as written. An unknown `consent` fails the load.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryToml {
    pub enabled: Option<bool>,
    pub consent: Option<MemoryConsent>,
    pub max_tokens: Option<u32>,
    pub max_unused_days: Option<u32>,
    pub extract: Option<bool>,
    pub extract_after_turns: Option<u32>,
    pub extract_profile: Option<String>,
    pub extract_model: Option<String>,
    pub consolidate: Option<bool>,
}

/// `[memory]` resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemorySettings {
    pub enabled: bool,
    pub consent: MemoryConsent,
    pub max_tokens: u32,
    pub max_unused_days: Option<u32>,
    /// Propose memories from the conversation after every this many completed turns
    /// (`extract = true`); `None`: never.
    pub extract_every: Option<u32>,
    /// The model (and its provider) extraction turns ask instead of the thread's
    /// (`extract_profile` / `extract_model`, resolved with the profiles by
    /// `load_model_config`); `None`: the thread's own.
    pub extract_model: Option<(String, String)>,
    /// After each completed extraction, write the user's and the repository's
    /// `MEMORY.md` (`rein memory consolidate`).
    pub consolidate: bool,
}

impl Default for MemorySettings {
    fn default() -> Self {
        Self {
            enabled: false,
            consent: MemoryConsent::Ask,
            max_tokens: DEFAULT_MEMORY_TOKENS,
            max_unused_days: None,
            extract_every: None,
            extract_model: None,
            consolidate: false,
        }
    }
}

impl MemoryToml {
    pub fn resolve(&self) -> MemorySettings {
        let defaults = MemorySettings::default();
        MemorySettings {
            enabled: self.enabled.unwrap_or(defaults.enabled),
            consent: self.consent.unwrap_or(defaults.consent),
            max_tokens: self.max_tokens.unwrap_or(defaults.max_tokens),
            max_unused_days: self.max_unused_days,
            // Zero turns would mean "after every turn and never": read as one.
            extract_every: self.extract.unwrap_or(false).then(|| {
                self.extract_after_turns
                    .unwrap_or(DEFAULT_EXTRACT_AFTER_TURNS)
                    .max(1)
            }),
            extract_model: None,
            consolidate: self.consolidate.unwrap_or(false),
        }
    }
}

/// `[memory]` of `home`'s config.toml alone (a missing file means defaults), for commands
/// that need no model: `rein memory` applies `max_unused_days` with it.
pub fn read_memory_settings(home: &std::path::Path) -> Result<MemorySettings, crate::ConfigError> {
    let path = home.join("config.toml");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(MemorySettings::default()),
        Err(source) => return Err(crate::ConfigError::Read { path, source }),
    };
    let parse_error = |source| crate::ConfigError::Parse {
        path: path.clone(),
        source,
    };
    let mut table: toml::Table = toml::from_str(&text).map_err(parse_error)?;
    let Some(memory) = table.remove("memory") else {
        return Ok(MemorySettings::default());
    };
    let memory: MemoryToml = memory.try_into().map_err(parse_error)?;
    Ok(memory.resolve())
}
