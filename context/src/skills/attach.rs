//! An explicit mention attaches a skill: `$name` in a prompt (Codex's syntax) puts the
//! skill's `SKILL.md`, read when the input is submitted, into that input, whether or not
//! the skill may be used implicitly: explicit-only skills are meant for exactly this.

use super::Skill;

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

/// The text that attaches `skill` with `contents`, its `SKILL.md` as read now.
pub fn attachment(skill: &Skill, contents: &str) -> String {
    format!(
        "<skill>\n<name>{}</name>\n<path>{}</path>\n{}\n</skill>",
        skill.name,
        skill.path.display(),
        contents.trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_found_once_each_without_a_sentence_dot() {
        assert_eq!(
            mentions("use $pdf and $deploy. Then $pdf again; cost $5, not $"),
            ["pdf", "deploy", "5"]
        );
        assert!(mentions("no mention").is_empty());
    }
}
