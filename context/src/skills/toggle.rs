//! Skills switched off (or back on) by the configuration's `[[skills.config]]` entries
//! (Codex's `skills/config/write`). A disabled skill is still listed (`enabled: false`, so
//! a client can switch it back on) but is in neither the model's list nor `search_skills`,
//! and no mention attaches it.

use std::path::{Path, PathBuf};

use rein_protocol::{SkillSelector, SkillToggle};

use super::Skill;

/// A selector with its path resolved once (a client may name the folder or spell the
/// path through a link).
struct Resolved<'a> {
    toggle: &'a SkillToggle,
    canonical: Option<PathBuf>,
}

/// Set each skill's `enabled` by `toggles`. Blocking: resolves the toggles' paths.
pub(super) fn apply(toggles: &[SkillToggle], skills: &mut [Skill]) {
    if toggles.is_empty() {
        return;
    }
    let resolved: Vec<Resolved> = toggles
        .iter()
        .map(|toggle| Resolved {
            toggle,
            canonical: match &toggle.selector {
                SkillSelector::Path(p) => std::fs::canonicalize(p).ok(),
                SkillSelector::Name(_) => None,
            },
        })
        .collect();
    for skill in skills {
        let canonical = std::fs::canonicalize(&skill.path).ok();
        if let Some(last) = resolved
            .iter()
            .rev()
            .find(|r| matches(r, skill, canonical.as_deref()))
        {
            skill.enabled = last.toggle.enabled;
        }
    }
}

/// Whether the entry `r` means `skill` (whose `SKILL.md` resolves to `canonical`).
fn matches(r: &Resolved, skill: &Skill, canonical: Option<&Path>) -> bool {
    match &r.toggle.selector {
        SkillSelector::Name(name) => *name == skill.name,
        SkillSelector::Path(path) => {
            let names = |p: &Path| p == skill.path || Some(p) == skill.path.parent();
            let names_canonical =
                |p: &Path| canonical.is_some_and(|c| p == c || Some(p) == c.parent());
            names(path) || r.canonical.as_deref().is_some_and(names_canonical)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::{load, SkillsConfig};

    #[test]
    fn the_last_matching_entry_decides_and_a_disabled_skill_is_neither_implicit_nor_found() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        for name in ["pdf", "deploy", "lint"] {
            let folder = dir.path().join(".agents/skills").join(name);
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(
                folder.join("SKILL.md"),
                format!("---\nname: {name}\ndescription: d\n---\n"),
            )
            .unwrap();
        }
        let skills = dir.path().join(".agents/skills");
        let off = |selector| SkillToggle {
            selector,
            enabled: false,
        };
        let config = SkillsConfig {
            admin_root: None,
            toggles: vec![
                // The folder names the skill as well as its SKILL.md.
                off(SkillSelector::Path(skills.join("pdf"))),
                off(SkillSelector::Name("deploy".into())),
                SkillToggle {
                    selector: SkillSelector::Path(skills.join("deploy/SKILL.md")),
                    enabled: true,
                },
                off(SkillSelector::Name("lint".into())),
            ],
            ..SkillsConfig::default()
        };
        let outcome = load(&config, dir.path());
        let states: Vec<(&str, bool)> = outcome
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.enabled))
            .collect();
        assert_eq!(states, [("deploy", true), ("lint", false), ("pdf", false)]);
        let implicit: Vec<&str> = outcome.implicit().map(|s| s.name.as_str()).collect();
        assert_eq!(implicit, ["deploy"]);
        assert!(outcome.find("pdf").is_none());
        assert!(outcome.find("deploy").is_some());
    }
}
