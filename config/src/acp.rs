//! `[acp]`: how `rein acp` works with the editor that drives it.

use serde::Deserialize;

/// `[acp]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcpToml {
    /// Run the shell tool's commands in the editor's own terminals when it offers them.
    pub client_terminals: Option<bool>,
}

/// `[acp]` resolved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AcpSettings {
    /// Off by default: a command in the editor's terminal runs outside rein's sandbox, so
    /// every command that is not known to be read-only then needs the user's approval
    /// (with a sandbox, most run without asking), and its environment is the editor's.
    pub client_terminals: bool,
}

impl AcpToml {
    pub fn resolve(&self) -> AcpSettings {
        AcpSettings {
            client_terminals: self.client_terminals.unwrap_or(false),
        }
    }
}
