//! An explicit mention attaches a skill: `$name` in a prompt (Codex's syntax) puts the
//! skill's `SKILL.md`, read when the input is submitted, into that input, whether or not
//! the skill may be used implicitly: explicit-only skills are meant for exactly this.

use std::path::{Path, PathBuf};

use rein_protocol::InputPart;

use super::{Skill, SkillsOutcome};

/// The `$name` mentions of `text`, in order, each once. A name is what a skill's name may
/// hold: letters, digits, `-`, `_`, `.` and `:`.
pub fn mentions(text: &str) -> Vec<&str> {
    let mut found: Vec<&str> = Vec::new();
    for (i, _) in text.match_indices('$') {
        let rest = &text[i + 1..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')))
            .unwrap_or(rest.len());
        // A trailing dot ends the sentence, not the name.
        let name = rest[..end].trim_end_matches('.');
        if !name.is_empty() && !found.contains(&name) {
            found.push(name);
        }
    }
    found
}

/// The input part that attaches `skill`, its `SKILL.md` read now as `bytes`: the text the
/// model reads and the activation's record (name, path, hash).
pub fn part(skill: &Skill, bytes: &[u8]) -> InputPart {
    let mut part = part_of(
        &skill.name,
        &skill.path,
        bytes,
        rein_tools_of(&skill.allowed_tools),
    );
    if let InputPart::Skill { fork, .. } = &mut part {
        *fork = skill.fork;
    }
    part
}

/// The input part attaching the skill `name` whose `SKILL.md` at `path` holds `bytes`
/// and which allows `allowed_tools` (rein's names; empty: every tool).
pub fn part_of(name: &str, path: &Path, bytes: &[u8], allowed_tools: Vec<String>) -> InputPart {
    let contents = String::from_utf8_lossy(bytes);
    InputPart::Skill {
        allowed_tools,
        fork: false,
        name: name.to_owned(),
        path: path.to_owned(),
        sha256: crate::hash::sha256_hex(bytes),
        text: format!(
            "<skill>\n<name>{name}</name>\n<path>{}</path>\n{}\n</skill>",
            path.display(),
            contents.trim_end()
        ),
    }
}

/// rein's tools for a skill's `allowed-tools` (Claude Code's names, a rule's pattern such
/// as `Bash(git:*)` taken as its tool; rein's own names as they are), each once. A name
/// neither knows is kept: it matches no tool, so it offers nothing.
pub fn rein_tools_of(allowed: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for entry in allowed {
        let tool = entry.split('(').next().unwrap_or(entry).trim();
        let rein: &[&str] = match tool {
            "Bash" => &["shell", "write_stdin"],
            "Read" => &["read_file"],
            "Grep" => &["grep"],
            "Glob" | "LS" => &["list_dir"],
            "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => &["apply_patch"],
            "TodoWrite" => &["update_plan"],
            other => &[other][..],
        };
        for name in rein {
            if !name.is_empty() && !out.iter().any(|o| o == name) {
                out.push((*name).to_owned());
            }
        }
    }
    out
}

/// Why a skill a client named (Codex's `skill` input item) cannot be attached.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AttachError {
    #[error("no skill named {name} in {cwd}")]
    Unknown { name: String, cwd: PathBuf },
    #[error("the skill {name} is at {found}, not {asked}")]
    OtherPath {
        name: String,
        found: PathBuf,
        asked: PathBuf,
    },
    #[error("the skill {name} could not be read at {path}: {message}")]
    Unreadable {
        name: String,
        path: PathBuf,
        message: String,
    },
}

/// A skill a client names explicitly, with the path it says it is at (if any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedSkill {
    pub name: String,
    pub path: Option<PathBuf>,
}

/// The parts attaching the skills `named` (each must be one of `outcome`'s: a client cannot
/// name an arbitrary file) and then those `mentions` names that are skills (a `$5` that
/// names none is just text), each skill once. Blocking: reads each `SKILL.md`.
pub fn resolve(
    outcome: &SkillsOutcome,
    cwd: &Path,
    named: &[NamedSkill],
    mentions: &[&str],
) -> Result<Vec<InputPart>, AttachError> {
    let mut parts = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for asked in named {
        let skill = outcome
            .find(&asked.name)
            .ok_or_else(|| AttachError::Unknown {
                name: asked.name.clone(),
                cwd: cwd.to_owned(),
            })?;
        if let Some(path) = &asked.path {
            if !same_file(path, &skill.path) {
                return Err(AttachError::OtherPath {
                    name: skill.name.clone(),
                    found: skill.path.clone(),
                    asked: path.clone(),
                });
            }
        }
        if seen.contains(&skill.name.as_str()) {
            continue;
        }
        let bytes = std::fs::read(&skill.path).map_err(|e| AttachError::Unreadable {
            name: skill.name.clone(),
            path: skill.path.clone(),
            message: e.to_string(),
        })?;
        seen.push(&skill.name);
        parts.push(part(skill, &bytes));
    }
    for name in mentions {
        let Some(skill) = outcome.find(name) else {
            continue;
        };
        if seen.contains(&skill.name.as_str()) {
            continue;
        }
        // A mention is best effort, as typed text: a skill gone since it was listed is
        // left as the text it was.
        if let Ok(bytes) = std::fs::read(&skill.path) {
            seen.push(&skill.name);
            parts.push(part(skill, &bytes));
        }
    }
    Ok(parts)
}

/// Whether two paths name one file (a client may send the skill's folder or a
/// non-canonical spelling of its `SKILL.md`).
fn same_file(asked: &Path, skill_md: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    let asked = canon(asked);
    asked == canon(skill_md) || skill_md.parent().is_some_and(|dir| asked == canon(dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::{load, SkillsConfig};

    /// A project (`.git`) with the skills `pdf` and `secret` (explicit-only).
    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        for (name, extra) in [("pdf", ""), ("secret", "disable-model-invocation: true\n")] {
            let folder = dir.path().join(".claude/skills").join(name);
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(
                folder.join("SKILL.md"),
                format!("---\nname: {name}\ndescription: d\n{extra}---\nbody of {name}\n"),
            )
            .unwrap();
        }
        dir
    }

    fn config() -> SkillsConfig {
        SkillsConfig {
            admin_root: None,
            ..SkillsConfig::default()
        }
    }

    fn names(parts: &[InputPart]) -> Vec<&str> {
        parts
            .iter()
            .filter_map(|p| match p {
                InputPart::Skill { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn named_skills_come_first_each_once_and_a_mention_of_no_skill_is_text() {
        let dir = project();
        let outcome = load(&config(), dir.path());
        let folder = dir.path().join(".claude/skills/secret");
        let named = [
            NamedSkill {
                name: "secret".into(),
                // The folder names the skill as well as its SKILL.md.
                path: Some(folder),
            },
            NamedSkill {
                name: "secret".into(),
                path: None,
            },
        ];
        let parts = resolve(&outcome, dir.path(), &named, &["pdf", "secret", "5"]).unwrap();
        assert_eq!(names(&parts), ["secret", "pdf"]);
        let InputPart::Skill { text, sha256, .. } = &parts[1] else {
            panic!("{parts:?}");
        };
        assert!(text.ends_with("body of pdf\n</skill>"), "{text}");
        assert_eq!(sha256.len(), 64);
    }

    #[test]
    fn a_named_skill_must_be_one_of_the_directorys_at_its_own_path() {
        let dir = project();
        let outcome = load(&config(), dir.path());
        let unknown = [NamedSkill {
            name: "nope".into(),
            path: None,
        }];
        assert!(matches!(
            resolve(&outcome, dir.path(), &unknown, &[]),
            Err(AttachError::Unknown { name, .. }) if name == "nope"
        ));
        let elsewhere = [NamedSkill {
            name: "pdf".into(),
            path: Some(dir.path().join(".claude/skills/secret/SKILL.md")),
        }];
        assert!(matches!(
            resolve(&outcome, dir.path(), &elsewhere, &[]),
            Err(AttachError::OtherPath { .. })
        ));
    }

    #[test]
    fn claude_tool_names_become_reins_each_once_and_unknown_ones_match_nothing() {
        let allowed: Vec<String> = ["Read", "Bash(git:*)", "Edit", "Write", "shell", "Nope"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(
            rein_tools_of(&allowed),
            ["read_file", "shell", "write_stdin", "apply_patch", "Nope"]
        );
    }

    #[test]
    fn mentions_are_found_once_each_without_a_sentence_dot() {
        assert_eq!(
            mentions("use $pdf and $deploy. Then $pdf again; cost $5, not $"),
            ["pdf", "deploy", "5"]
        );
        assert!(mentions("no mention").is_empty());
    }
}
