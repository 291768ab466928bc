//! One root's scan: breadth first, at most `max_depth` folders deep and `max_dirs` folders
//! visited (Codex's bounds), hidden folders skipped, a folder with a `SKILL.md` taken as a
//! skill and not searched further. Folders reached twice through links are read once.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};

use super::parse::parse_skill;
use super::{SkillError, SkillRoot, SkillsOutcome};

/// `SKILL.md` files larger than this are refused: a skill is instructions, not data.
const MAX_SKILL_BYTES: u64 = 1024 * 1024;

pub(super) fn scan_root(
    root: &SkillRoot,
    max_depth: usize,
    max_dirs: usize,
    out: &mut SkillsOutcome,
) {
    if !root.path.is_dir() {
        return;
    }
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([(root.path.clone(), 0usize)]);
    let mut visited = 0usize;
    while let Some((dir, depth)) = queue.pop_front() {
        let Ok(canonical) = std::fs::canonicalize(&dir) else {
            continue;
        };
        if !seen.insert(canonical) {
            continue;
        }
        if visited == max_dirs {
            out.errors.push(SkillError {
                path: root.path.clone(),
                message: format!(
                    "stopped after {max_dirs} folders: skills deeper in are not loaded"
                ),
            });
            return;
        }
        visited += 1;
        let skill_md = dir.join("SKILL.md");
        if skill_md.is_file() {
            read_skill(root, &skill_md, out);
            continue;
        }
        if depth == max_depth {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut children: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        // A stable order, so the list the model sees does not depend on the file system.
        children.sort();
        queue.extend(children.into_iter().map(|c| (c, depth + 1)));
    }
}

fn read_skill(root: &SkillRoot, skill_md: &Path, out: &mut SkillsOutcome) {
    let error = |message: String| SkillError {
        path: skill_md.to_owned(),
        message,
    };
    match std::fs::metadata(skill_md) {
        Ok(md) if md.len() > MAX_SKILL_BYTES => {
            out.errors.push(error(format!(
                "SKILL.md is {} bytes; at most {MAX_SKILL_BYTES} are read",
                md.len()
            )));
            return;
        }
        Ok(_) => {}
        Err(e) => {
            out.errors.push(error(e.to_string()));
            return;
        }
    }
    let text = match std::fs::read_to_string(skill_md) {
        Ok(text) => text,
        Err(e) => {
            out.errors.push(error(e.to_string()));
            return;
        }
    };
    let openai_yaml = skill_md
        .parent()
        .map(|d| d.join("agents/openai.yaml"))
        .and_then(|p| std::fs::read_to_string(p).ok());
    match parse_skill(root, skill_md, &text, openai_yaml.as_deref()) {
        Ok(skill) => out.skills.push(skill),
        Err(message) => out.errors.push(error(message)),
    }
}
