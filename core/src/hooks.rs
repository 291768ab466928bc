//! The port through which the kernel runs user hooks (every `HookEventName`). The kernel
//! decides when a hook runs, what it is told and what its answer means (`turn/tool_hooks.rs`,
//! `turn/permission_hooks.rs`, `turn/session_hooks.rs`); an implementation (`rein-hooks`)
//! finds the hooks configured for a directory and runs them as processes. Nothing here
//! spawns.
//!
//! Architecture invariant: a hook's answer only ever narrows what a call does. A block is
//! enforced before the tool runs; a rewritten input goes through the tool again, and so
//! through the approval policy and the sandbox; an "allow" skips nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use rein_protocol::{HookEventName, HookSource, ThreadId};
use tokio_util::sync::CancellationToken;

/// Where the kernel finds the hooks of a thread.
pub trait Hooks: Send + Sync + 'static {
    /// The hooks of `event` for a thread in `cwd` whose matcher accepts one of `subjects`
    /// (the tool's names, first the one hooks are told). Only trusted hooks: the others
    /// were reported when the thread started. Cheap when none are configured.
    fn matching<'a>(
        &'a self,
        cwd: &'a Path,
        event: HookEventName,
        subjects: &'a [&'a str],
    ) -> BoxFuture<'a, Vec<Arc<dyn Hook>>>;

    /// The rollout of `thread`, for the input's `transcript_path`.
    fn transcript_path(&self, _thread: ThreadId) -> Option<PathBuf> {
        None
    }
}

/// One configured hook, ready to run.
pub trait Hook: Send + Sync + 'static {
    fn describe(&self) -> HookDescription;

    /// Run it with `input` (the JSON its stdin gets). Ends early, killing what it
    /// started, once `cancel` fires.
    fn run(
        &self,
        input: serde_json::Value,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, HookResponse>;
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookDescription {
    /// `source:file:event:group:handler`, as trust names it.
    pub key: String,
    pub command: String,
    pub source: HookSource,
    pub on_error: OnError,
}

/// What a failed hook (see [`HookVerdict::Failed`]) means for the call it was asked about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnError {
    /// The call does not run (the default for `PreToolUse`: a crashing guard must not let
    /// through what it was meant to stop).
    #[default]
    Block,
    /// The failure is reported and the call goes on.
    Allow,
}

/// How a run ended, as the hook's contract reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct HookResponse {
    pub exit_code: Option<i32>,
    pub verdict: HookVerdict,
}

#[derive(Clone, Debug, PartialEq)]
pub enum HookVerdict {
    /// Exit 0: no objection, maybe with more to say.
    Proceed(HookOutput),
    /// Exit 2 (the reason is its stderr), or a `deny` / `block` decision.
    Block { reason: String },
    /// Any other exit code, a timeout, a program that could not start, or output that is
    /// not the JSON the contract expects.
    Failed { message: String },
}

/// What a hook that exited 0 said on stdout.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HookOutput {
    /// `permissionDecision: "allow"` / `"ask"`: recorded, but it skips nothing (the
    /// approval policy and the sandbox still judge the call).
    pub decision: Option<String>,
    /// `permissionDecisionReason` (or a `PermissionRequest` decision's `message`) of an
    /// `allow` or `ask`: what the user is shown when asked.
    pub reason: Option<String>,
    /// `updatedInput`: the tool's new arguments.
    pub updated_input: Option<serde_json::Value>,
    /// `additionalContext`: added to what the model reads.
    pub additional_context: Option<String>,
    /// `systemMessage`: shown to the user (a warning).
    pub system_message: Option<String>,
    /// Stdout that is not JSON, as it is (context for `UserPromptSubmit`, as Claude Code
    /// reads it; nothing for the other events).
    pub text: Option<String>,
}
