use std::path::Path;

use pretty_assertions::assert_eq;

use super::*;
use crate::skills::SkillScope;

fn root(dialect: Dialect) -> SkillRoot {
    SkillRoot {
        path: "/r".into(),
        scope: SkillScope::Repo,
        dialect,
    }
}

fn parse(dialect: Dialect, text: &str, openai: Option<&str>) -> Result<Skill, String> {
    parse_skill(&root(dialect), Path::new("/r/pdf/SKILL.md"), text, openai)
}

#[test]
fn codex_front_matter_with_a_folded_description_and_openai_yaml() {
    let skill = parse(
        Dialect::Codex,
        "---\nname: pdf\ndescription: >\n  Read and fill\n  PDF forms.\nmetadata:\n  short-description: PDFs\n---\n# Body\n",
        Some("interface:\n  display_name: PDF\n  icon_small: ./icon.png\ndependencies:\n  tools:\n    - type: mcp\n      value: pdf-server\npolicy:\n  allow_implicit_invocation: false\n"),
    )
    .unwrap();
    assert_eq!(skill.name, "pdf");
    assert_eq!(skill.description, "Read and fill PDF forms.");
    assert_eq!(skill.short_description.as_deref(), Some("PDFs"));
    assert!(!skill.allow_implicit);
    let interface = skill.interface.unwrap();
    assert_eq!(interface.display_name.as_deref(), Some("PDF"));
    assert_eq!(interface.icon_small, Some("/r/pdf/./icon.png".into()));
    assert_eq!(skill.dependencies.unwrap()[0].value, "pdf-server");
    assert_eq!(skill.body, "# Body\n");
}

#[test]
fn claude_defaults_and_its_explicit_only_flag() {
    let skill = parse(
        Dialect::Claude,
        "---\ndisable-model-invocation: true\nallowed-tools: Read, Grep\n---\n\nFills PDF forms.\n\nMore.\n",
        None,
    )
    .unwrap();
    assert_eq!(skill.name, "pdf");
    assert_eq!(skill.description, "Fills PDF forms.");
    assert!(!skill.allow_implicit);
    assert_eq!(skill.allowed_tools, ["Read", "Grep"]);
    // Codex requires both fields.
    assert_eq!(
        parse(Dialect::Codex, "---\ndescription: x\n---\n", None).unwrap_err(),
        "missing field `name`"
    );
}

#[test]
fn malformed_skills_say_why() {
    let long = format!("---\nname: {}\ndescription: d\n---\n", "n".repeat(65));
    assert!(parse(Dialect::Codex, &long, None)
        .unwrap_err()
        .contains("longer than 64"));
    let long = format!("---\nname: n\ndescription: {}\n---\n", "d".repeat(1025));
    assert!(parse(Dialect::Codex, &long, None)
        .unwrap_err()
        .contains("longer than 1024"));
    assert!(parse(Dialect::Codex, "no front matter", None)
        .unwrap_err()
        .contains("does not start"));
    assert!(parse(Dialect::Codex, "---\nname: [a\n---\n", None)
        .unwrap_err()
        .starts_with("front matter:"));
    assert!(parse(Dialect::Codex, "---\nname: a\n", None)
        .unwrap_err()
        .contains("no closing"));
    assert!(parse(
        Dialect::Codex,
        "---\nname: {a: 1}\ndescription: d\n---\n",
        None
    )
    .unwrap_err()
    .contains("`name` must be a string"));
}

#[test]
fn claude_context_fork_is_read_and_another_value_is_an_error() {
    let forked = parse(Dialect::Claude, "---\ncontext: fork\n---\nDig.\n", None).unwrap();
    assert!(forked.fork);
    let inline = parse(Dialect::Claude, "---\n---\nDig.\n", None).unwrap();
    assert!(!inline.fork);
    assert_eq!(
        parse(Dialect::Claude, "---\ncontext: spoon\n---\nDig.\n", None).unwrap_err(),
        "`context` must be `fork` or `inline`, not `spoon`"
    );
}
