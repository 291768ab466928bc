//! 5,000 skills over three roots (each under Codex's 2,000 folders a root): the model's
//! list stays within 2 % of the context window, every skill the list leaves out is in
//! `search_skills`' index, and every 25th of them (evenly spread, about 190 searches: one
//! search per skill would be 4,750 scans of 5,000 skills, a minute in a debug build) is
//! found by a word only it holds.

use super::render::render_list;
use super::search::SearchIndex;
use super::{load, SkillsConfig};

const WINDOW: u64 = 200_000;

/// A project whose skills are `skill-0000` … `skill-4999`, each described by its number.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let roots = [".agents/skills", ".claude/skills", "sub/.agents/skills"];
    for i in 0..5000 {
        let folder = dir.path().join(roots[i % 3]).join(format!("skill-{i:04}"));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("SKILL.md"),
            format!("---\nname: skill-{i:04}\ndescription: Handles job n{i:04}.\n---\nSteps for n{i:04}.\n"),
        )
        .unwrap();
    }
    dir
}

/// The tokens (four bytes each, one more for the newline) the lines the budget covers
/// take: the skill roots and the skills.
fn budgeted_tokens(text: &str) -> usize {
    text.lines()
        .filter(|l| l.starts_with("- `r") || l.starts_with("- skill-"))
        .map(|l| l.len().div_ceil(4) + 1)
        .sum()
}

#[test]
fn five_thousand_skills_fit_the_budget_and_the_rest_are_in_search_reach() {
    let dir = project();
    let config = SkillsConfig {
        admin_root: None,
        ..SkillsConfig::default()
    };
    let outcome = load(&config, &dir.path().join("sub"));
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(outcome.skills.len(), 5000);
    let list = render_list(outcome.implicit(), Some(WINDOW));
    let text = list.text.clone().unwrap();
    assert_eq!(list.listed + list.unlisted, 5000);
    assert!(list.listed > 100 && list.unlisted > 4000, "{list:?}");
    let used = budgeted_tokens(&text);
    assert!(used <= 4000, "{used} tokens, over 2 % of {WINDOW}");
    assert!(text.contains(&format!(
        "- {} more skills did not fit in this list: call the `search_skills` tool",
        list.unlisted
    )));
    let listed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter_map(|l| l.split_once(": ").map(|(n, _)| n))
        .filter(|n| n.starts_with("skill-"))
        .collect();
    assert_eq!(listed.len(), list.listed);

    let index = SearchIndex::new(outcome.skills.clone());
    assert_eq!(index.len(), 5000);
    let unlisted: Vec<_> = outcome
        .skills
        .iter()
        .filter(|s| !listed.contains(&s.name.as_str()))
        .collect();
    assert_eq!(unlisted.len(), list.unlisted);
    for skill in unlisted.iter().step_by(25) {
        let number = &skill.name["skill-".len()..];
        let found: Vec<&str> = index
            .search(&format!("n{number}"), 10)
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(found, [skill.name.as_str()]);
    }
}
