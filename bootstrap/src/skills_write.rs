//! `skills/config/write`: switch a skill off or back on, by its path or its name, as a
//! `[[skills.config]]` entry of the server's `config.toml` (Codex's shape). The file is
//! edited with `toml_edit` like every other config write (comments and order survive, an
//! edit that does not load is refused); the entries naming the same skill the same way
//! are replaced by one new entry at the end, so it is the one that decides. The kernel
//! keeps the entries last loaded, which every new listing, thread and mention reads.

use std::path::{Path, PathBuf};

use rein_config::ModelConfig;
use rein_context::ContextConfig;
use rein_protocol::SkillSelector;
use toml_edit::{ArrayOfTables, DocumentMut, Item, Table};

use crate::config_write::{edit_blocking, joined, ConfigWriteError, ConfigWritten};
use crate::Kernel;

/// Which skill a `skills/config/write` means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkillTarget {
    /// Its `SKILL.md` or its folder; must be absolute and exist.
    Path(PathBuf),
    Name(String),
}

#[derive(Debug, thiserror::Error)]
pub enum SkillWriteError {
    #[error("path: must be an absolute path, not {0}")]
    RelativePath(String),
    #[error("path: {0} is neither a SKILL.md nor a folder holding one")]
    NotASkill(String),
    #[error("name: must not be empty")]
    EmptyName,
    #[error(transparent)]
    Write(#[from] ConfigWriteError),
}

/// What was written and whether the skill is now enabled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillWritten {
    pub written: ConfigWritten,
    pub effective_enabled: bool,
}

impl Kernel {
    /// Record that `target` is `enabled`; the next `skills/list`, thread and mention see it
    /// (a running thread keeps the list it was started with). Blocking I/O runs on a
    /// blocking thread.
    pub async fn write_skill_config(
        &self,
        target: SkillTarget,
        enabled: bool,
    ) -> Result<SkillWritten, SkillWriteError> {
        let options = self.load_options.clone().ok_or(ConfigWriteError::NoFile)?;
        let join = tokio::task::spawn_blocking(move || {
            let selector = checked(target)?;
            let (written, loaded) = edit_blocking(&options, None, None, &mut |doc| {
                replace_entry(doc, &selector, enabled)
            })?;
            Ok::<_, SkillWriteError>((selector, written, loaded))
        });
        let (selector, written, loaded) = join.await.map_err(joined)??;
        self.set_skill_toggles(&loaded);
        let effective_enabled = loaded
            .skill_toggles
            .iter()
            .rev()
            .find(|t| t.selector == selector)
            .is_none_or(|t| t.enabled);
        Ok(SkillWritten {
            written,
            effective_enabled,
        })
    }
}

/// What of the skills' configuration changes while the process runs: the
/// `[[skills.config]]` entries as last loaded (at start, then after each config write) and
/// the roots a client added with `skills/extraRoots/set` (kept in memory only, as Codex
/// does: a restarted server has none).
#[derive(Debug, Default)]
pub(crate) struct LiveSkills {
    toggles: Vec<rein_protocol::SkillToggle>,
    extra_roots: Vec<PathBuf>,
}

impl LiveSkills {
    pub(crate) fn new(toggles: Vec<rein_protocol::SkillToggle>) -> std::sync::RwLock<Self> {
        std::sync::RwLock::new(Self {
            toggles,
            extra_roots: Vec::new(),
        })
    }
}

/// Why `skills/extraRoots/set` refused its roots.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExtraRootsError {
    #[error("extraRoots: must be absolute paths, not {0}")]
    RelativePath(String),
    #[error("extraRoots: {0} is not a folder")]
    NotAFolder(String),
    #[error("extraRoots: could not be checked: {0}")]
    Check(String),
}

impl Kernel {
    /// How a new thread's context is read now: [`Self::context`] with the skills switched
    /// off or on as the configuration says at this moment, and the client's extra roots.
    pub fn context_config(&self) -> ContextConfig {
        let mut context = self.context.clone();
        let live = self
            .live_skills
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        context.skills.toggles.clone_from(&live.toggles);
        context.skills.extra_roots.clone_from(&live.extra_roots);
        context
    }

    /// Take the `[[skills.config]]` of a configuration just written.
    pub(crate) fn set_skill_toggles(&self, config: &ModelConfig) {
        self.live_skills
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .toggles = skill_toggles(config);
    }

    /// `skills/extraRoots/set`: `roots` replace the extra skill roots of every directory
    /// for the next listing, thread and mention (a running thread keeps its list). Each
    /// must be absolute; one that exists must be a folder (one not created yet holds no
    /// skills until it is). Nothing changes when one is refused.
    pub async fn set_skill_extra_roots(&self, roots: Vec<PathBuf>) -> Result<(), ExtraRootsError> {
        let checked = tokio::task::spawn_blocking(move || {
            for root in &roots {
                if !root.is_absolute() {
                    return Err(ExtraRootsError::RelativePath(root.display().to_string()));
                }
                if root.exists() && !root.is_dir() {
                    return Err(ExtraRootsError::NotAFolder(root.display().to_string()));
                }
            }
            let mut unique: Vec<PathBuf> = Vec::with_capacity(roots.len());
            for root in roots {
                if !unique.contains(&root) {
                    unique.push(root);
                }
            }
            Ok(unique)
        })
        .await
        .unwrap_or_else(|e| Err(ExtraRootsError::Check(e.to_string())))?;
        self.live_skills
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extra_roots = checked;
        Ok(())
    }
}

/// `[[skills.config]]`, as the loader applies it.
pub(crate) fn skill_toggles(config: &ModelConfig) -> Vec<rein_protocol::SkillToggle> {
    config.skill_toggles.clone()
}

/// The selector to write: a path must name an existing skill (its `SKILL.md`, or a folder
/// holding one) and is written as given, so the file says what the client said.
fn checked(target: SkillTarget) -> Result<SkillSelector, SkillWriteError> {
    match target {
        SkillTarget::Name(name) if name.trim().is_empty() => Err(SkillWriteError::EmptyName),
        SkillTarget::Name(name) => Ok(SkillSelector::Name(name)),
        SkillTarget::Path(path) if !path.is_absolute() => {
            Err(SkillWriteError::RelativePath(path.display().to_string()))
        }
        SkillTarget::Path(path) => {
            let is_skill_md = path.file_name().is_some_and(|n| n == "SKILL.md") && path.is_file();
            if is_skill_md || path.join("SKILL.md").is_file() {
                Ok(SkillSelector::Path(path))
            } else {
                Err(SkillWriteError::NotASkill(path.display().to_string()))
            }
        }
    }
}

/// Drop the entries selecting the same skill the same way and append the new one.
fn replace_entry(
    doc: &mut DocumentMut,
    selector: &SkillSelector,
    enabled: bool,
) -> Result<(), ConfigWriteError> {
    let not_a = |key: &str, what: &str| ConfigWriteError::KeyPath {
        key: key.into(),
        why: format!("is not {what} in config.toml; fix it by hand first"),
    };
    let skills = doc
        .as_table_mut()
        .entry("skills")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
        .ok_or_else(|| not_a("skills", "a table"))?;
    let list = skills
        .entry("config")
        .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()))
        .as_array_of_tables_mut()
        .ok_or_else(|| not_a("skills.config", "a list of tables"))?;
    list.retain(|entry| !same_selector(entry, selector));
    let mut entry = Table::new();
    match selector {
        SkillSelector::Path(path) => entry.insert("path", path.display().to_string().into()),
        SkillSelector::Name(name) => entry.insert("name", name.as_str().into()),
    };
    entry.insert("enabled", enabled.into());
    // A blank line before each entry, as a person would write it.
    entry.decor_mut().set_prefix("\n");
    list.push(entry);
    Ok(())
}

fn same_selector(entry: &Table, selector: &SkillSelector) -> bool {
    let text = |key: &str| entry.get(key).and_then(Item::as_str);
    match selector {
        SkillSelector::Name(name) => text("name") == Some(name.as_str()),
        SkillSelector::Path(path) => text("path").is_some_and(|p| same_path(Path::new(p), path)),
    }
}

/// The same file or folder, spelt alike or resolving alike.
fn same_path(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_replaces_the_ones_naming_the_skill_alike_and_keeps_the_rest() {
        let mut doc: DocumentMut = "# mine\nmodel = \"m\"\n\n[[skills.config]]\nname = \"pdf\"\nenabled = false\n\n[[skills.config]]\nname = \"deploy\"\nenabled = false\n"
            .parse()
            .unwrap();
        replace_entry(&mut doc, &SkillSelector::Name("pdf".into()), true).unwrap();
        assert_eq!(
            doc.to_string(),
            "# mine\nmodel = \"m\"\n\n[[skills.config]]\nname = \"deploy\"\nenabled = false\n\n[[skills.config]]\nname = \"pdf\"\nenabled = true\n"
        );
        let mut bad: DocumentMut = "[skills]\nconfig = 1\n".parse().unwrap();
        let refused = replace_entry(&mut bad, &SkillSelector::Name("pdf".into()), true);
        assert_eq!(
            refused.unwrap_err().to_string(),
            "keyPath \"skills.config\": is not a list of tables in config.toml; fix it by hand first"
        );
    }

    #[test]
    fn a_path_must_be_absolute_and_name_a_skill() {
        assert!(matches!(
            checked(SkillTarget::Path("a/SKILL.md".into())),
            Err(SkillWriteError::RelativePath(_))
        ));
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            checked(SkillTarget::Path(dir.path().to_owned())),
            Err(SkillWriteError::NotASkill(_))
        ));
        std::fs::write(dir.path().join("SKILL.md"), "---\n---\n").unwrap();
        assert_eq!(
            checked(SkillTarget::Path(dir.path().to_owned())).unwrap(),
            SkillSelector::Path(dir.path().to_owned())
        );
        assert!(matches!(
            checked(SkillTarget::Name(" ".into())),
            Err(SkillWriteError::EmptyName)
        ));
    }
}
