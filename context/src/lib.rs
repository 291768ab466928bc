//! What a thread's model is told before its history, read from files when the thread is
//! created: the project's instructions (`AGENTS.md`, exactly as Codex assembles them) and
//! the skills it may use. The result is a [`ThreadContext`] the kernel records
//! (`ContextLoaded`) and sends at the head of every request of the thread.
//!
//! Architecture invariant: a leaf that reads files and nothing else (no kernel, no front
//! end); front ends reach it only through `rein-bootstrap`. Everything here is blocking
//! I/O: callers run it off the async executor.

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod hash;
pub mod project_doc;
pub mod skills;

use std::path::Path;

use rein_protocol::{ContextKind, ContextMessage, ContextRole, SkillFile, ThreadContext};

pub use hash::sha256_hex;
pub use project_doc::ProjectDocConfig;
pub use skills::{SkillsConfig, SkillsOutcome};

/// How a thread's context is assembled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContextConfig {
    pub project_doc: ProjectDocConfig,
    pub skills: SkillsConfig,
}

/// A thread's context and what the user should be told about it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assembled {
    pub context: ThreadContext,
    /// Files cut or unreadable: sent to the client as warnings, never hidden.
    pub warnings: Vec<String>,
    /// The skills found (the list the model got is in `context`).
    pub skills: SkillsOutcome,
    /// Skills past the list's budget: only `search_skills` reaches them.
    pub unlisted_skills: usize,
}

/// Assemble the context of a thread starting in `cwd`, for a model with `context_window`
/// tokens (the skills list takes at most 2 % of it). Codex's order: the skills list (a
/// developer message), then `AGENTS.md` (a user message).
pub fn assemble(config: &ContextConfig, cwd: &Path, context_window: Option<u64>) -> Assembled {
    let doc = project_doc::assemble(&config.project_doc, cwd);
    let skills = skills::load(&config.skills, cwd);
    let list = skills::render_list(skills.implicit(), context_window);
    let mut context = ThreadContext::default();
    let mut warnings = doc.warnings;
    if let Some(text) = list.text {
        context.messages.push(ContextMessage {
            role: ContextRole::Developer,
            kind: ContextKind::SkillsList,
            text,
        });
    }
    if list.unlisted > 0 {
        warnings.push(format!(
            "{} of {} skills did not fit in 2% of the model's context window; the model finds              them with the `{}` tool",
            list.unlisted,
            list.listed + list.unlisted,
            skills::render::SEARCH_TOOL
        ));
    }
    if let Some(text) = doc.message {
        context.messages.push(ContextMessage {
            role: ContextRole::User,
            kind: ContextKind::ProjectDoc,
            text,
        });
    }
    context.sources = doc.sources;
    // Opening one of these is its implicit activation (the kernel records it).
    context.skills = skills
        .skills
        .iter()
        .filter(|s| s.enabled)
        .map(|s| SkillFile {
            name: s.name.clone(),
            path: s.path.clone(),
            sha256: s.sha256.clone(),
            mcp_servers: s.mcp_servers(),
        })
        .collect();
    Assembled {
        context,
        warnings,
        skills,
        unlisted_skills: list.unlisted,
    }
}
