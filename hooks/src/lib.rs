//! User hooks for rein's kernel: the files Claude Code and Codex users already have
//! (`hooks.json`, config.toml's `[hooks]`, `.claude/settings.json`), read per project,
//! trusted by content hash, and run as supervised command processes. [`UserHooks`] is the
//! kernel's [`Hooks`] port; what an answer means is the kernel's business
//! (`core/src/turn/tool_hooks.rs`).
//!
//! Architecture invariant: no kernel state, no front end, no TOML (the config table comes
//! in as JSON). Files are read off the executor, once per directory.

pub mod config;
pub mod discover;
pub mod matcher;
pub mod output;
pub mod run;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use futures::FutureExt;
use rein_core::hooks::{Hook, HookDescription, HookResponse, Hooks};
use rein_protocol::{HookEventName, ThreadId};
use tokio_util::sync::CancellationToken;

pub use discover::{discover, Configured, Discovered, HooksOptions, TrustStatus};

/// The hooks of every directory a thread runs in, read once per directory.
pub struct UserHooks {
    options: HooksOptions,
    by_cwd: Mutex<HashMap<PathBuf, Arc<Discovered>>>,
    transcripts: Mutex<HashMap<ThreadId, PathBuf>>,
}

impl UserHooks {
    pub fn new(options: HooksOptions) -> Arc<Self> {
        Arc::new(Self {
            options,
            by_cwd: Mutex::new(HashMap::new()),
            transcripts: Mutex::new(HashMap::new()),
        })
    }

    /// The hooks of `cwd`, read on a blocking thread the first time.
    pub async fn load(&self, cwd: &Path) -> Arc<Discovered> {
        if let Some(found) = self.cached(cwd) {
            return found;
        }
        let options = self.options.clone();
        let dir = cwd.to_owned();
        let found = tokio::task::spawn_blocking(move || discover(&options, &dir))
            .await
            .unwrap_or_else(|e| Discovered {
                warnings: vec![format!(
                    "could not read the hooks of {}: {e}",
                    cwd.display()
                )],
                project_dir: cwd.to_owned(),
                ..Discovered::default()
            });
        let found = Arc::new(found);
        self.by_cwd
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(cwd.to_owned())
            .or_insert(found)
            .clone()
    }

    fn cached(&self, cwd: &Path) -> Option<Arc<Discovered>> {
        self.by_cwd
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(cwd)
            .cloned()
    }

    /// What a new thread in `cwd` should be told: files that could not be read, hooks that
    /// will not run (untrusted, changed, unsupported).
    pub async fn warnings(&self, cwd: &Path) -> Vec<String> {
        self.load(cwd).await.warnings.clone()
    }

    /// Where `thread`'s rollout is, for the hooks' `transcript_path`.
    pub fn note_transcript(&self, thread: ThreadId, path: PathBuf) {
        self.transcripts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(thread, path);
    }
}

impl Hooks for UserHooks {
    fn matching<'a>(
        &'a self,
        cwd: &'a Path,
        event: HookEventName,
        subjects: &'a [&'a str],
    ) -> BoxFuture<'a, Vec<Arc<dyn Hook>>> {
        async move {
            let found = self.load(cwd).await;
            found
                .hooks
                .iter()
                .filter(|h| {
                    h.trust == TrustStatus::Trusted
                        && h.def.event == event
                        && (!event.reads_matchers() || h.def.matcher.accepts(subjects))
                })
                .map(|h| {
                    Arc::new(CommandHook {
                        configured: h.clone(),
                        cwd: cwd.to_owned(),
                        project_dir: found.project_dir.clone(),
                    }) as Arc<dyn Hook>
                })
                .collect()
        }
        .boxed()
    }

    fn transcript_path(&self, thread: ThreadId) -> Option<PathBuf> {
        self.transcripts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&thread)
            .cloned()
    }
}

/// One trusted command hook, for one directory.
struct CommandHook {
    configured: Configured,
    cwd: PathBuf,
    project_dir: PathBuf,
}

impl Hook for CommandHook {
    fn describe(&self) -> HookDescription {
        HookDescription {
            key: self.configured.key.clone(),
            command: self.configured.def.command.clone(),
            source: self.configured.source,
            on_error: self.configured.def.on_error,
        }
    }

    fn run(
        &self,
        input: serde_json::Value,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, HookResponse> {
        let spec = run::RunSpec {
            command: self.configured.def.command.clone(),
            cwd: self.cwd.clone(),
            project_dir: self.project_dir.clone(),
            timeout: self.configured.def.timeout,
        };
        let mut bytes = input.to_string().into_bytes();
        bytes.push(b'\n');
        run::run(spec, bytes, cancel).boxed()
    }
}
