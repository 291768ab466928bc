//! The developer message that lists the skills the model may use on its own, in Codex's
//! shape (`<skills_instructions>`, a `## Skills` section with a table of skill roots, one
//! line per skill `- name: description (file: rN/…/SKILL.md)`, then how to use them; the
//! rules are rein's own words for Codex's: open `SKILL.md` only when a skill is used).
//! Its lines take at most the budget (Codex's: 2 % of the model's context window in
//! tokens, 8,000 characters when the window is unknown). Past it, rein does not shorten
//! or drop descriptions silently: the skills that do not fit are left to the
//! `search_skills` tool, and the list says how many.

use std::path::PathBuf;

use super::Skill;

/// Codex's budget when the context window is unknown.
pub const DEFAULT_CHAR_BUDGET: usize = 8_000;
const CONTEXT_WINDOW_PERCENT: u64 = 2;
pub const OPEN_TAG: &str = "<skills_instructions>";
pub const CLOSE_TAG: &str = "</skills_instructions>";
pub const SEARCH_TOOL: &str = "search_skills";

const INTRO: &str = "A skill is a folder of local instructions whose entry point is a `SKILL.md` file. \
The skills listed below can be used in this session; each line gives a skill's name, what it is for, \
and the short path of its `SKILL.md`, which the table of skill roots turns into an absolute path.";

const HOW_TO_USE: &str = "- Naming: when the user names a skill (`$name` or in plain words), or the task plainly \
matches a listed description, use that skill for this turn; use every skill that is named. A skill \
used in one turn is not carried into the next unless it is named again.
- Reading: expand the short path with its root, open that `SKILL.md` only once you decide to use the \
skill, and read it to the end before acting. Resolve relative paths it mentions against its folder; \
open only the extra files it points you to for this task.
- Reuse: run or adapt the scripts a skill ships instead of retyping them, and start from its templates \
or assets.
- Several skills: pick the fewest that cover the request, say in one short line which you use and why, \
and say why you skip an obvious one.
- Trouble: if a named skill is not listed or its file cannot be read, say so briefly and go on with the \
best alternative.";

/// The list as sent, and what it left to `search_skills`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RenderedList {
    /// The developer message's text; `None` when no skill may be used implicitly.
    pub text: Option<String>,
    pub listed: usize,
    /// Skills past the budget, reachable through `search_skills` only.
    pub unlisted: usize,
}

/// The budget for a model with `context_window` tokens: (limit, counted in tokens).
fn budget(context_window: Option<u64>) -> (usize, bool) {
    match context_window.filter(|w| *w > 0) {
        Some(window) => (
            usize::try_from((window * CONTEXT_WINDOW_PERCENT / 100).max(1)).unwrap_or(usize::MAX),
            true,
        ),
        None => (DEFAULT_CHAR_BUDGET, false),
    }
}

fn cost(text: &str, tokens: bool) -> usize {
    if tokens {
        // Codex's estimate: four bytes a token.
        text.len().div_ceil(4)
    } else {
        text.chars().count()
    }
}

/// Render the skills that may be used implicitly, in order.
pub fn render_list<'a>(
    skills: impl IntoIterator<Item = &'a Skill>,
    context_window: Option<u64>,
) -> RenderedList {
    let skills: Vec<&Skill> = skills.into_iter().collect();
    if skills.is_empty() {
        return RenderedList::default();
    }
    let (limit, tokens) = budget(context_window);
    let mut roots: Vec<PathBuf> = Vec::new();
    let mut lines = Vec::new();
    let mut used = 0usize;
    for skill in &skills {
        let (alias, new_root) = match roots.iter().position(|r| *r == skill.root) {
            Some(i) => (i, None),
            None => (roots.len(), Some(skill.root.clone())),
        };
        let relative = skill
            .path
            .strip_prefix(&skill.root)
            .unwrap_or(&skill.path)
            .to_string_lossy()
            .replace('\\', "/");
        let line = format!(
            "- {}: {} (file: r{alias}/{relative})",
            skill.name, skill.description
        );
        let mut line_cost = cost(&line, tokens) + 1;
        if let Some(root) = &new_root {
            line_cost += cost(&root_line(alias, root), tokens) + 1;
        }
        if used + line_cost > limit {
            break;
        }
        used += line_cost;
        roots.extend(new_root);
        lines.push(line);
    }
    let listed = lines.len();
    let unlisted = skills.len() - listed;
    let mut body = vec![
        "## Skills".to_owned(),
        INTRO.to_owned(),
        "### Skill roots".to_owned(),
    ];
    body.extend(roots.iter().enumerate().map(|(i, r)| root_line(i, r)));
    body.push("### Available skills".to_owned());
    body.extend(lines);
    if unlisted > 0 {
        body.push(format!(
            "- {unlisted} more skill{} did not fit in this list: call the `{SEARCH_TOOL}` tool to find \
             skills by name, description or content before deciding that none applies.",
            if unlisted == 1 { "" } else { "s" }
        ));
    }
    body.push("### How to use skills".to_owned());
    body.push(HOW_TO_USE.to_owned());
    RenderedList {
        text: Some(format!("{OPEN_TAG}\n{}\n{CLOSE_TAG}", body.join("\n"))),
        listed,
        unlisted,
    }
}

fn root_line(alias: usize, root: &std::path::Path) -> String {
    format!("- `r{alias}` = `{}`", root.display())
}
