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

use std::path::Path;

use rein_protocol::{ContextKind, ContextMessage, ContextRole, ThreadContext};

pub use hash::sha256_hex;
pub use project_doc::ProjectDocConfig;

/// How a thread's context is assembled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContextConfig {
    pub project_doc: ProjectDocConfig,
}

/// A thread's context and what the user should be told about it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assembled {
    pub context: ThreadContext,
    /// Files cut or unreadable: sent to the client as warnings, never hidden.
    pub warnings: Vec<String>,
}

/// Assemble the context of a thread starting in `cwd`.
pub fn assemble(config: &ContextConfig, cwd: &Path) -> Assembled {
    let doc = project_doc::assemble(&config.project_doc, cwd);
    let mut context = ThreadContext::default();
    if let Some(text) = doc.message {
        context.messages.push(ContextMessage {
            role: ContextRole::User,
            kind: ContextKind::ProjectDoc,
            text,
        });
    }
    context.sources = doc.sources;
    Assembled {
        context,
        warnings: doc.warnings,
    }
}
