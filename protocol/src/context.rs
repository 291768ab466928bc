//! What a thread's model is told before its history: the project's instructions
//! (`AGENTS.md`, as Codex assembles them) and the list of skills it may use. Assembled once,
//! when the thread is created, recorded as `EventMsg::ContextLoaded`, and sent at the head
//! of every request of the thread, so a second turn's request starts with the same bytes
//! (the provider's prompt cache keeps working) and replay and `thread/read` know what the
//! model was told. A change to the files is seen by the next thread, never mid-thread.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The fixed prefix of a thread's requests, and where it came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadContext {
    /// Sent before the history, in this order, in every request of the thread.
    pub messages: Vec<ContextMessage>,
    /// The files the messages were assembled from, in the order they were read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<ContextSource>,
    /// The skills the thread could use (enabled ones) when it was created: a tool call
    /// that reads one's `SKILL.md` is that skill's implicit activation
    /// (`EventMsg::SkillActivated`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<SkillFile>,
}

impl ThreadContext {
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.sources.is_empty() && self.skills.is_empty()
    }
}

/// A skill of the thread's context: its `SKILL.md` as read when the thread was created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillFile {
    pub name: String,
    pub path: PathBuf,
    /// SHA-256 (hex) of the `SKILL.md` bytes read then.
    pub sha256: String,
    /// The MCP servers the skill depends on (its `agents/openai.yaml`): opening it starts
    /// them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<String>,
}

/// Which skills a `[[skills.config]]` entry means (Codex's `skills/config/write`): the
/// configuration reads it, the skills loader applies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkillSelector {
    /// A skill's `SKILL.md` or its folder (absolute).
    Path(PathBuf),
    Name(String),
}

/// One `[[skills.config]]` entry: the last entry that matches a skill decides; a skill no
/// entry matches is enabled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillToggle {
    pub selector: SkillSelector,
    pub enabled: bool,
}

/// A skill a session used: attached by the user (explicit) or opened by the model
/// (implicit).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillActivation {
    pub name: String,
    pub path: PathBuf,
    pub sha256: String,
    pub implicit: bool,
}

/// Which of `skills` the call described by `action` reads, each once, in the order read: a
/// file tool's read, or a command that shows files (`cat`, `sed -n`, `awk`, ...; a relative
/// path is taken from the command's cwd). Paths are compared after removing `.` and `..`
/// lexically: no file is touched.
pub fn skill_reads<'a>(skills: &'a [SkillFile], action: &crate::ToolAction) -> Vec<&'a SkillFile> {
    let find = |path: &std::path::Path| {
        let path = normalize(path);
        skills.iter().find(|s| normalize(&s.path) == path)
    };
    let mut found: Vec<&SkillFile> = Vec::new();
    let mut add = |skill: Option<&'a SkillFile>| {
        if let Some(skill) = skill {
            if !found.iter().any(|f| std::ptr::eq(*f, skill)) {
                found.push(skill);
            }
        }
    };
    match action {
        crate::ToolAction::Read { path } => add(find(path)),
        crate::ToolAction::Exec { commands, cwd, .. } => {
            for command in commands {
                if let crate::CommandAction::Read { path, .. } = command {
                    add(find(&cwd.join(path)));
                }
            }
        }
        _ => {}
    }
    found
}

fn normalize(path: &std::path::Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// One message of the prefix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextMessage {
    pub role: ContextRole,
    pub kind: ContextKind,
    pub text: String,
}

/// Who the model reads a prefix message as: Codex sends the skills list as a developer
/// message and `AGENTS.md` as a user message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContextRole {
    Developer,
    User,
}

/// What a prefix message carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContextKind {
    /// `# AGENTS.md instructions for <cwd>`: the global file and the project's files.
    ProjectDoc,
    /// `<skills_instructions>`: the skills the model may use on its own.
    SkillsList,
}

/// A file read into the prefix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextSource {
    pub path: PathBuf,
    pub kind: ContextSourceKind,
    /// Bytes of it the prefix holds.
    pub bytes: u64,
    /// Its size when it was cut to fit `project_doc_max_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated_from: Option<u64>,
    /// SHA-256 of the bytes read (hex), so a replay can tell the file changed since.
    pub sha256: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContextSourceKind {
    /// `$REIN_HOME/AGENTS.md` (or `$CODEX_HOME`'s, when configured).
    GlobalDoc,
    /// An `AGENTS.md` between the project root and the cwd.
    ProjectDoc,
}
