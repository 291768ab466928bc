//! Codex's project-instruction keys: `project_doc_max_bytes`,
//! `project_doc_fallback_filenames`, `project_root_markers` (top level, as Codex writes
//! them) and rein's `[project_doc] read_codex_home`.

use serde::Deserialize;

/// `[project_doc]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectDocToml {
    /// Also read `$CODEX_HOME/AGENTS.md` (after `$REIN_HOME`'s), so one global file
    /// serves both tools.
    pub read_codex_home: Option<bool>,
}

/// The keys resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectDocSettings {
    pub max_bytes: usize,
    pub fallback_filenames: Vec<String>,
    pub root_markers: Vec<String>,
    pub read_codex_home: bool,
}

impl Default for ProjectDocSettings {
    fn default() -> Self {
        Self {
            // Codex's default.
            max_bytes: 32 * 1024,
            fallback_filenames: Vec::new(),
            root_markers: vec![".git".into()],
            read_codex_home: false,
        }
    }
}
