//! What `search_skills` answers: the skills whose name, description or body hold the
//! query's words, best first (a word in the name counts most, in the body least).

use super::Skill;

/// Skills ready to be searched: each one's text lowercased once, so a search over
/// thousands of skills only compares (`search_skills` keeps one per thread).
pub struct SearchIndex {
    skills: Vec<Skill>,
    /// (name, description, body), lowercased.
    lowered: Vec<(String, String, String)>,
}

impl SearchIndex {
    pub fn new(skills: Vec<Skill>) -> Self {
        let lowered = skills
            .iter()
            .map(|s| {
                (
                    s.name.to_lowercase(),
                    s.description.to_lowercase(),
                    s.body.to_lowercase(),
                )
            })
            .collect();
        Self { skills, lowered }
    }

    pub fn len(&self) -> usize {
        self.skills.len()
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// At most `limit` skills matching `query`, best first; ties keep the list's order.
    pub fn search(&self, query: &str, limit: usize) -> Vec<&Skill> {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        if words.is_empty() {
            return Vec::new();
        }
        let mut scored: Vec<(usize, usize)> = self
            .lowered
            .iter()
            .enumerate()
            .filter_map(|(i, (name, description, body))| {
                let score: usize = words
                    .iter()
                    .map(|w| {
                        6 * usize::from(name.contains(w.as_str()))
                            + 3 * usize::from(description.contains(w.as_str()))
                            + usize::from(body.contains(w.as_str()))
                    })
                    .sum();
                (score > 0).then_some((score, i))
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        scored
            .into_iter()
            .take(limit)
            .map(|(_, i)| &self.skills[i])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::{Dialect, SkillScope};

    fn skill(name: &str, description: &str, body: &str) -> Skill {
        Skill {
            name: name.into(),
            description: description.into(),
            short_description: None,
            path: format!("/s/{name}/SKILL.md").into(),
            scope: SkillScope::Repo,
            dialect: Dialect::Codex,
            root: "/s".into(),
            interface: None,
            dependencies: None,
            allow_implicit: true,
            enabled: true,
            allowed_tools: Vec::new(),
            fork: false,
            body: body.into(),
            sha256: String::new(),
        }
    }

    #[test]
    fn names_count_most_then_descriptions_then_bodies() {
        let skills = vec![
            skill("notes", "Take notes", "mentions invoices in passing"),
            skill("billing", "Write invoices", ""),
            skill("invoice", "Make one", ""),
            skill("other", "Nothing", ""),
        ];
        let index = SearchIndex::new(skills);
        let names: Vec<&str> = index
            .search("Invoice!", 10)
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, ["invoice", "billing", "notes"]);
        assert_eq!(index.search("invoice", 1).len(), 1);
        assert!(index.search("  ", 5).is_empty());
    }
}
