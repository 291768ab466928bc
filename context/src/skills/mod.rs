//! Skills of both ecosystems, one loader: Codex's (`.agents/skills` in every directory from
//! the project root to the cwd, `<root>/.codex/skills`, `$HOME/.agents/skills`,
//! `$REIN_HOME/skills`, an admin root) and Claude Code's (`.claude/skills` in the same
//! project directories, `~/.claude/skills`). A skill is a folder holding `SKILL.md` with
//! YAML front matter (`name` ≤ 64 characters, `description` ≤ 1,024), optionally
//! `agents/openai.yaml` (`interface`, `dependencies`, `policy.allow_implicit_invocation`).
//! Both dialects' "explicit only" flags are honoured: Codex's
//! `policy.allow_implicit_invocation: false` and Claude's `disable-model-invocation: true`.
//! A malformed skill is an entry of `errors` (its path and why) and never stops the others.
//!
//! Blocking file I/O: callers run [`load`] off the async executor.

pub mod attach;
mod parse;
pub mod render;
#[cfg(test)]
mod scale_tests;
mod scan;
pub mod search;
pub mod toggle;
pub mod watch;

use std::path::{Path, PathBuf};

pub use render::{render_list, RenderedList, DEFAULT_CHAR_BUDGET};

/// Codex's bounds on one root's scan.
pub const MAX_SCAN_DEPTH: usize = 6;
pub const MAX_SCAN_DIRS: usize = 2000;

/// Where skills are looked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillsConfig {
    pub enabled: bool,
    /// `$REIN_HOME`: its `skills/` is a user root.
    pub rein_home: Option<PathBuf>,
    /// `$HOME`: its `.agents/skills` and `.claude/skills` are user roots.
    pub home: Option<PathBuf>,
    /// Skills an administrator installs for every user.
    pub admin_root: Option<PathBuf>,
    /// What marks the project root (as for `AGENTS.md`).
    pub root_markers: Vec<String>,
    pub max_depth: usize,
    pub max_dirs: usize,
    /// `[[skills.config]]`: skills switched off or on, in file order.
    pub toggles: Vec<rein_protocol::SkillToggle>,
    /// A client's `skills/extraRoots/set`: more user roots (Codex's format), after the
    /// configured user roots and before the admin root, for every directory.
    pub extra_roots: Vec<PathBuf>,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            rein_home: None,
            home: None,
            admin_root: Some(PathBuf::from("/etc/codex/skills")),
            root_markers: vec![".git".into()],
            max_depth: MAX_SCAN_DEPTH,
            max_dirs: MAX_SCAN_DIRS,
            toggles: Vec::new(),
            extra_roots: Vec::new(),
        }
    }
}

/// Codex's `SkillScope`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SkillScope {
    Repo,
    User,
    System,
    Admin,
}

impl SkillScope {
    pub fn as_str(self) -> &'static str {
        match self {
            SkillScope::Repo => "repo",
            SkillScope::User => "user",
            SkillScope::System => "system",
            SkillScope::Admin => "admin",
        }
    }
}

/// Whose format a root holds: it decides which front-matter defaults apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Codex,
    /// Claude Code: `name` defaults to the folder's name and `description` to the first
    /// paragraph of the body.
    Claude,
}

/// A root to scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillRoot {
    pub path: PathBuf,
    pub scope: SkillScope,
    pub dialect: Dialect,
}

/// `agents/openai.yaml`'s `interface`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkillInterface {
    pub display_name: Option<String>,
    pub short_description: Option<String>,
    pub icon_small: Option<PathBuf>,
    pub icon_large: Option<PathBuf>,
    pub brand_color: Option<String>,
    pub default_prompt: Option<String>,
}

/// One of `agents/openai.yaml`'s `dependencies.tools`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolDependency {
    pub kind: String,
    pub value: String,
    pub description: Option<String>,
    pub transport: Option<String>,
    pub command: Option<String>,
    pub url: Option<String>,
}

/// A skill as found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    /// On one line (runs of whitespace collapsed).
    pub description: String,
    /// `metadata.short-description` of `SKILL.md`.
    pub short_description: Option<String>,
    /// The `SKILL.md` file.
    pub path: PathBuf,
    pub scope: SkillScope,
    pub dialect: Dialect,
    /// The root it was found under.
    pub root: PathBuf,
    pub interface: Option<SkillInterface>,
    pub dependencies: Option<Vec<ToolDependency>>,
    /// False: only an explicit mention attaches it (it is not in the model's list).
    pub allow_implicit: bool,
    /// False: switched off by `[[skills.config]]`: listed, but neither offered to the
    /// model nor attachable.
    pub enabled: bool,
    /// Claude's `allowed-tools`.
    pub allowed_tools: Vec<String>,
    /// Claude's `context: fork`: attached, the skill runs as a sub-agent.
    pub fork: bool,
    /// The text after the front matter (what `search_skills` searches besides names).
    pub body: String,
    /// SHA-256 (hex) of the `SKILL.md` bytes read.
    pub sha256: String,
}

/// A skill that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillError {
    pub path: PathBuf,
    pub message: String,
}

/// Every skill of a cwd, in precedence order (nearest project root first, then the user's,
/// then the admin's), and what could not be read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkillsOutcome {
    pub skills: Vec<Skill>,
    pub errors: Vec<SkillError>,
}

impl Skill {
    /// The MCP servers the skill depends on (`dependencies.tools` of type `mcp`), by name.
    pub fn mcp_servers(&self) -> Vec<String> {
        self.dependencies
            .iter()
            .flatten()
            .filter(|d| d.kind == "mcp" && !d.value.trim().is_empty())
            .map(|d| d.value.clone())
            .collect()
    }
}

impl SkillsOutcome {
    /// The skills the model may use on its own (enabled, not explicit-only).
    pub fn implicit(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().filter(|s| s.enabled && s.allow_implicit)
    }

    /// The skill `$name` means: the first enabled one of that name, implicit or not.
    pub fn find(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.enabled && s.name == name)
    }
}

/// The roots of `cwd`, in precedence order.
pub fn roots(config: &SkillsConfig, cwd: &Path) -> Vec<SkillRoot> {
    let mut roots = Vec::new();
    let dir = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
    let project_root = crate::project_doc::project_root(&dir, &config.root_markers)
        .ok()
        .flatten();
    let dirs: Vec<&Path> = match &project_root {
        Some(root) => dir
            .ancestors()
            .take_while(|a| a.starts_with(root))
            .collect(),
        None => vec![dir.as_path()],
    };
    let mut push = |path: PathBuf, scope, dialect| {
        if !roots.iter().any(|r: &SkillRoot| r.path == path) {
            roots.push(SkillRoot {
                path,
                scope,
                dialect,
            });
        }
    };
    for d in &dirs {
        push(d.join(".agents/skills"), SkillScope::Repo, Dialect::Codex);
        push(d.join(".claude/skills"), SkillScope::Repo, Dialect::Claude);
    }
    if let Some(root) = &project_root {
        push(root.join(".codex/skills"), SkillScope::Repo, Dialect::Codex);
    }
    if let Some(home) = &config.home {
        push(
            home.join(".agents/skills"),
            SkillScope::User,
            Dialect::Codex,
        );
    }
    if let Some(rein_home) = &config.rein_home {
        push(rein_home.join("skills"), SkillScope::User, Dialect::Codex);
    }
    if let Some(home) = &config.home {
        push(
            home.join(".claude/skills"),
            SkillScope::User,
            Dialect::Claude,
        );
    }
    for extra in &config.extra_roots {
        push(extra.clone(), SkillScope::User, Dialect::Codex);
    }
    if let Some(admin) = &config.admin_root {
        push(admin.clone(), SkillScope::Admin, Dialect::Codex);
    }
    roots
}

/// Every skill of a thread in `cwd`.
pub fn load(config: &SkillsConfig, cwd: &Path) -> SkillsOutcome {
    let mut outcome = SkillsOutcome::default();
    if !config.enabled {
        return outcome;
    }
    for root in roots(config, cwd) {
        scan::scan_root(&root, config.max_depth, config.max_dirs, &mut outcome);
    }
    toggle::apply(&config.toggles, &mut outcome.skills);
    outcome
}
