//! The policy a live replay's tools run under. A rollout is a file anyone can edit: its
//! recorded sandbox and approval policies, writable roots and approval answers are not the
//! user's word today. So live, a turn runs under the stricter of its recorded sandbox and
//! the one the replay was given (today's configuration, `-c sandbox_mode=...` on the
//! command line; workspace-write by default), with approval policy `never` (nobody is there
//! to ask, and the recording's answers cannot approve anything: what needs approval is
//! declined, and the replay shows the difference), writable roots only inside the recorded
//! workspace, and the network only when the command line allows it.

use std::path::Path;

use rein_protocol::{ApprovalPolicy, SandboxPolicy, ThreadSettings};

/// What a live replay allows at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LivePolicy {
    pub sandbox: SandboxPolicy,
    pub network_access: bool,
}

impl Default for LivePolicy {
    fn default() -> Self {
        Self {
            sandbox: SandboxPolicy::WorkspaceWrite,
            network_access: false,
        }
    }
}

/// How much a sandbox policy lets commands do (higher: more).
fn reach(policy: SandboxPolicy) -> u8 {
    match policy {
        SandboxPolicy::ReadOnly => 0,
        SandboxPolicy::WorkspaceWrite => 1,
        SandboxPolicy::DangerFullAccess => 2,
    }
}

impl LivePolicy {
    /// `recorded`, in the recorded workspace `workspace`, confined to this policy.
    pub fn confine(&self, mut settings: ThreadSettings, workspace: &Path) -> ThreadSettings {
        if reach(self.sandbox) < reach(settings.sandbox_policy) {
            settings.sandbox_policy = self.sandbox;
        }
        settings.approval_policy = ApprovalPolicy::Never;
        if let Some(options) = settings.sandbox_options.as_mut() {
            options
                .writable_roots
                .retain(|root| root.starts_with(workspace));
            options.network_access &= self.network_access;
        }
        settings
    }
}
