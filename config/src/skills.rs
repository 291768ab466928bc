//! `[[skills.config]]`: skills switched on or off by path or by name, as Codex writes them
//! (its `skills/config/write`):
//!
//! ```toml
//! [[skills.config]]
//! path = "/repo/.agents/skills/pdf/SKILL.md"   # or the skill's folder
//! enabled = false
//!
//! [[skills.config]]
//! name = "deploy"
//! enabled = false
//! ```
//!
//! The last entry that matches a skill decides; a skill no entry matches is enabled.

use std::path::PathBuf;

use rein_protocol::{SkillSelector, SkillToggle};
use serde::Deserialize;

/// `[skills]` as written. An unknown key fails the load.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsToml {
    #[serde(default)]
    pub config: Vec<SkillConfigToml>,
}

/// One `[[skills.config]]` entry as written.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillConfigToml {
    pub path: Option<PathBuf>,
    pub name: Option<String>,
    pub enabled: bool,
}

/// Why an entry was refused (the message names the entry, 1-based).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SkillConfigProblem {
    #[error("skills.config entry {0}: give `path` or `name`, not both and not neither")]
    Selector(usize),
    #[error("skills.config entry {0}: `path` must be absolute, not {1}")]
    RelativePath(usize, String),
}

impl SkillsToml {
    /// The entries in file order.
    pub fn resolve(&self) -> Result<Vec<SkillToggle>, SkillConfigProblem> {
        self.config
            .iter()
            .enumerate()
            .map(|(i, entry)| {
                let selector = match (&entry.path, &entry.name) {
                    (Some(path), None) if path.is_absolute() => SkillSelector::Path(path.clone()),
                    (Some(path), None) => {
                        return Err(SkillConfigProblem::RelativePath(
                            i + 1,
                            path.display().to_string(),
                        ))
                    }
                    (None, Some(name)) if !name.trim().is_empty() => {
                        SkillSelector::Name(name.clone())
                    }
                    _ => return Err(SkillConfigProblem::Selector(i + 1)),
                };
                Ok(SkillToggle {
                    selector,
                    enabled: entry.enabled,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_resolve_in_order_and_a_bad_selector_names_its_entry() {
        let toml: SkillsToml = toml::from_str(
            "[[config]]\npath = \"/r/pdf/SKILL.md\"\nenabled = false\n\
             [[config]]\nname = \"deploy\"\nenabled = true\n",
        )
        .unwrap();
        assert_eq!(
            toml.resolve().unwrap(),
            [
                SkillToggle {
                    selector: SkillSelector::Path("/r/pdf/SKILL.md".into()),
                    enabled: false
                },
                SkillToggle {
                    selector: SkillSelector::Name("deploy".into()),
                    enabled: true
                }
            ]
        );
        let both: SkillsToml =
            toml::from_str("[[config]]\nname = \"a\"\npath = \"/a\"\nenabled = true\n").unwrap();
        assert_eq!(both.resolve(), Err(SkillConfigProblem::Selector(1)));
        let relative: SkillsToml =
            toml::from_str("[[config]]\npath = \"a/SKILL.md\"\nenabled = true\n").unwrap();
        assert_eq!(
            relative.resolve().unwrap_err().to_string(),
            "skills.config entry 1: `path` must be absolute, not a/SKILL.md"
        );
    }
}
