//! Which hooks a thread in a directory has: the user's (`$REIN_HOME/hooks.json`,
//! config.toml's `[hooks]`, and on request `$CODEX_HOME/hooks.json` and
//! `~/.claude/settings.json`) and the project's (`.rein/hooks.json`, `.codex/hooks.json`,
//! `.claude/settings.json`, `.claude/settings.local.json` at the project root). Each hook is
//! keyed by where it is (`source:file:event:group:handler`, Codex's positional key) and
//! hashed over its definition. A project hook comes with the repository, so it runs only
//! once the user trusted that hash (`[hooks.state."KEY"] trusted_hash`); the user's own
//! hooks are trusted (they are as much the user's as the config that names the model).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rein_protocol::HookSource;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::config::{self, HookDef, Parsed};

/// Where hooks are looked for, besides the project.
#[derive(Clone, Debug, Default)]
pub struct HooksOptions {
    /// `$REIN_HOME`: its `hooks.json`.
    pub rein_home: PathBuf,
    /// config.toml's `[hooks]` table, as JSON (event tables, `state`, settings).
    pub config_table: Option<Value>,
    /// Where that table was read from (named in errors and keys).
    pub config_path: PathBuf,
    /// `$CODEX_HOME` (default `~/.codex`): its `hooks.json` is read when `[hooks]
    /// read_codex_home = true`.
    pub codex_home: Option<PathBuf>,
    /// The user's home: `~/.claude/settings.json` is read when `[hooks]
    /// read_claude_settings = true`.
    pub home: Option<PathBuf>,
}

impl HooksOptions {
    fn setting(&self, key: &str) -> bool {
        self.config_table
            .as_ref()
            .and_then(|t| t.get(key))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// `[hooks.state."KEY"] trusted_hash` of every key.
    fn trusted(&self) -> BTreeMap<String, String> {
        let Some(Value::Object(state)) = self.config_table.as_ref().and_then(|t| t.get("state"))
        else {
            return BTreeMap::new();
        };
        state
            .iter()
            .filter_map(|(key, v)| {
                let hash = v.get("trusted_hash")?.as_str()?;
                Some((key.clone(), hash.to_owned()))
            })
            .collect()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrustStatus {
    /// The user's own hook, or a project hook whose hash the user trusted.
    Trusted,
    /// A project hook never trusted.
    Untrusted,
    /// A project hook trusted once, changed since.
    Modified,
}

impl TrustStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TrustStatus::Trusted => "trusted",
            TrustStatus::Untrusted => "untrusted",
            TrustStatus::Modified => "modified",
        }
    }
}

/// One hook found, with what decides whether it runs.
#[derive(Clone, Debug)]
pub struct Configured {
    pub def: HookDef,
    pub key: String,
    pub source: HookSource,
    pub path: PathBuf,
    /// `sha256:HEX` of its normalized definition.
    pub hash: String,
    pub trust: TrustStatus,
}

/// Every hook of a directory, and what could not be read or will not run.
#[derive(Clone, Debug, Default)]
pub struct Discovered {
    pub hooks: Vec<Configured>,
    pub warnings: Vec<String>,
    /// The project root (`CLAUDE_PROJECT_DIR` of the hooks).
    pub project_dir: PathBuf,
}

/// The project root of `cwd`: the nearest directory holding `.git`, else `cwd`.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd)
        .to_owned()
}

/// The hash trust is given to.
pub fn hash(def: &HookDef) -> String {
    let digest = Sha256::digest(def.normalized().to_string().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Find the hooks of a thread in `cwd`. Reads files: call it off the executor.
pub fn discover(options: &HooksOptions, cwd: &Path) -> Discovered {
    let project_dir = project_root(cwd);
    let mut found = Discovered {
        project_dir: project_dir.clone(),
        ..Discovered::default()
    };
    let trusted = options.trusted();
    let mut user_files = vec![options.rein_home.join("hooks.json")];
    if options.setting("read_codex_home") {
        user_files.extend(options.codex_home.iter().map(|h| h.join("hooks.json")));
    }
    if options.setting("read_claude_settings") {
        user_files.extend(
            options
                .home
                .iter()
                .map(|h| h.join(".claude").join("settings.json")),
        );
    }
    if let Some(table) = &options.config_table {
        let parsed = config::parse_events(&options.config_path, table);
        add(
            &mut found,
            HookSource::User,
            &options.config_path,
            parsed.map(Some),
            &trusted,
        );
    }
    for path in &user_files {
        add(
            &mut found,
            HookSource::User,
            path,
            config::read_file(path),
            &trusted,
        );
    }
    let project_files = [
        project_dir.join(".rein").join("hooks.json"),
        project_dir.join(".codex").join("hooks.json"),
        project_dir.join(".claude").join("settings.json"),
        project_dir.join(".claude").join("settings.local.json"),
    ];
    for path in &project_files {
        // A project in the user's home: its files are the user's, read once.
        if user_files.contains(path) {
            continue;
        }
        add(
            &mut found,
            HookSource::Project,
            path,
            config::read_file(path),
            &trusted,
        );
    }
    found
}

fn add(
    found: &mut Discovered,
    source: HookSource,
    path: &Path,
    parsed: Result<Option<Parsed>, config::HookConfigError>,
    trusted: &BTreeMap<String, String>,
) {
    let parsed = match parsed {
        Ok(Some(parsed)) => parsed,
        Ok(None) => return,
        Err(e) => {
            found.warnings.push(format!(
                "hooks not loaded: {e}; none of that file's hooks run"
            ));
            return;
        }
    };
    found.warnings.extend(parsed.warnings);
    let layer = match source {
        HookSource::User => "user",
        HookSource::Project => "project",
    };
    for def in parsed.hooks {
        let key = format!(
            "{layer}:{}:{}:{}:{}",
            path.display(),
            def.event.as_str(),
            def.group,
            def.handler
        );
        let hash = hash(&def);
        let trust = match (source, trusted.get(&key)) {
            (HookSource::User, _) => TrustStatus::Trusted,
            (HookSource::Project, Some(h)) if *h == hash => TrustStatus::Trusted,
            (HookSource::Project, Some(_)) => TrustStatus::Modified,
            (HookSource::Project, None) => TrustStatus::Untrusted,
        };
        match trust {
            TrustStatus::Trusted => {}
            TrustStatus::Untrusted => found.warnings.push(format!(
                "the project hook `{key}` (`{}`) is not trusted and does not run; \
                 trust it with `rein hooks trust` (hash {hash})",
                def.command
            )),
            TrustStatus::Modified => found.warnings.push(format!(
                "the project hook `{key}` (`{}`) changed since it was trusted and does not \
                 run; trust it again with `rein hooks trust` (hash {hash})",
                def.command
            )),
        }
        found.hooks.push(Configured {
            def,
            key,
            source,
            path: path.to_owned(),
            hash,
            trust,
        });
    }
}
