//! Turning `rein exec`'s flags and `-c` overrides into what the run needs: the overrides
//! the configuration loader reads, the thread's policies, the environment the providers
//! see (Codex's variable names honoured), and warnings for keys rein does not support.

use rein_config::overrides::quote;
use rein_config::Override;
use rein_protocol::{ApprovalPolicy, SandboxPolicy};

use super::args::{CommonArgs, SandboxMode};

/// Top-level keys of rein's `config.toml` (tables included) that the loader understands.
const CONFIG_KEYS: &[&str] = &[
    "model",
    "model_provider",
    "model_context_window",
    "model_auto_compact_token_limit",
    "model_reasoning_effort",
    "multimodal_model",
    "multimodal_provider",
    "fallback_model",
    "fallback_provider",
    "models",
    "model_instructions_file",
    "profile",
    "model_providers",
    "profiles",
    "agents",
    "features",
    "advisor",
    "mcp_servers",
    "sandbox_mode",
    "approval_policy",
];

/// What the flags resolve to.
#[derive(Debug)]
pub struct RunOptions {
    /// Overrides for the configuration loader, `--model` included.
    pub overrides: Vec<String>,
    pub approval_policy: ApprovalPolicy,
    pub sandbox_policy: SandboxPolicy,
    /// Whether a flag (`--sandbox`, `--full-auto`, the bypass) chose the sandbox, and
    /// the approval policy: else the configuration's (file, profile, `-c`) apply.
    pub sandbox_from_flags: bool,
    pub approval_from_flags: bool,
    /// `-c openai_base_url=...`: moves the built-in `openai` provider.
    pub openai_base_url: Option<String>,
    /// `-c sandbox_workspace_write.network_access=true`: sandboxed commands may use the
    /// network.
    pub network_access: bool,
    /// Problems worth telling the user that do not stop the run.
    pub warnings: Vec<String>,
}

impl RunOptions {
    pub fn from_args(args: &CommonArgs) -> Self {
        // `-m` is a request parameter, over the environment and the profile: it goes to
        // the loader as itself, not as a `-c model=` edit of the file.
        let mut opts = Self::from_overrides(&args.overrides, None);
        opts.sandbox_from_flags = args.sandbox.is_some() || args.full_auto || args.bypass;
        opts.approval_from_flags = args.bypass;
        if let Some(mode) = args.sandbox {
            opts.sandbox_policy = match mode {
                SandboxMode::ReadOnly => SandboxPolicy::ReadOnly,
                SandboxMode::WorkspaceWrite => SandboxPolicy::WorkspaceWrite,
                SandboxMode::DangerFullAccess => SandboxPolicy::DangerFullAccess,
            };
        }
        if args.full_auto {
            opts.sandbox_policy = SandboxPolicy::WorkspaceWrite;
        }
        if args.bypass {
            opts.sandbox_policy = SandboxPolicy::DangerFullAccess;
            opts.approval_policy = ApprovalPolicy::Never;
        }
        let ignored_flags = [
            ("--thread-source", args.thread_source.is_some()),
            (
                "--cyber-access-program",
                args.cyber_access_program.is_some(),
            ),
            ("--collaboration-mode", args.collaboration_mode.is_some()),
        ];
        for (flag, given) in ignored_flags {
            if given {
                opts.warnings
                    .push(format!("{flag} is not supported by rein and was ignored"));
            }
        }
        opts
    }

    /// What `-c key=value` overrides (and `--model`) resolve to, before any other flag.
    pub fn from_overrides(overrides: &[String], model: Option<&str>) -> Self {
        let mut opts = RunOptions {
            overrides: overrides.to_vec(),
            approval_policy: ApprovalPolicy::Never,
            sandbox_policy: SandboxPolicy::ReadOnly,
            sandbox_from_flags: false,
            approval_from_flags: false,
            openai_base_url: None,
            network_access: false,
            warnings: Vec::new(),
        };
        if let Some(model) = model {
            opts.overrides.push(format!("model={}", quote(model)));
        }
        for arg in overrides {
            // A malformed override is reported by the loader with its own error.
            if let Ok(o) = Override::parse(arg) {
                opts.take_override(&o);
            }
        }
        opts
    }

    fn take_override(&mut self, o: &Override) {
        let key = o.path.join(".");
        let text = o.value.as_str();
        match (o.path.first().map(String::as_str), key.as_str()) {
            (Some(first), _) if CONFIG_KEYS.contains(&first) => {}
            (_, "sandbox_workspace_write.network_access") => match o.value.as_bool() {
                Some(allowed) => self.network_access = allowed,
                None => self.warn_value(&key, &o.value),
            },
            (_, "openai_base_url") => match text {
                Some(url) => self.openai_base_url = Some(url.to_owned()),
                None => self.warn_value(&key, &o.value),
            },
            _ => self.warnings.push(format!(
                "config key `{key}` is not supported by rein and was ignored"
            )),
        }
    }

    /// Take the configuration's `sandbox_mode` and `approval_policy` where no flag chose
    /// them. Under an approval policy that asks, what it asks is denied (nobody can answer
    /// in a headless run), and stderr says so.
    pub fn apply_configured(
        &mut self,
        sandbox: Option<SandboxPolicy>,
        approval: Option<ApprovalPolicy>,
    ) {
        if let (false, Some(sandbox)) = (self.sandbox_from_flags, sandbox) {
            self.sandbox_policy = sandbox;
        }
        if let (false, Some(approval)) = (self.approval_from_flags, approval) {
            self.approval_policy = approval;
            if approval != ApprovalPolicy::Never {
                self.warnings.push(format!(
                    "approval_policy {}: rein exec cannot ask for approvals, so every approval this policy asks for is denied",
                    quote(approval.as_str())
                ));
            }
        }
    }

    fn warn_value(&mut self, key: &str, value: &impl std::fmt::Display) {
        self.warnings.push(format!(
            "config key `{key}`: unsupported value {value}; ignored"
        ));
    }

    /// The environment the providers see: `CODEX_API_KEY` stands in for a missing
    /// `OPENAI_API_KEY`, and `openai_base_url` wins over `OPENAI_BASE_URL`.
    pub fn provider_env(&self) -> impl Fn(&str) -> Option<String> + '_ {
        move |key: &str| {
            let real = std::env::var(key).ok().filter(|v| !v.trim().is_empty());
            match key {
                "OPENAI_API_KEY" => real.or_else(|| std::env::var("CODEX_API_KEY").ok()),
                "OPENAI_BASE_URL" => self.openai_base_url.clone().or(real),
                _ => real,
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        common: CommonArgs,
    }

    fn opts(argv: &[&str]) -> RunOptions {
        let mut full = vec!["rein"];
        full.extend_from_slice(argv);
        RunOptions::from_args(&Cli::parse_from(full).common)
    }

    #[test]
    fn sdk_config_keys_are_applied_or_warned_never_fatal() {
        let o = opts(&[
            "-c",
            "approval_policy=\"on-request\"",
            "-c",
            "sandbox_workspace_write.network_access=true",
            "-c",
            "web_search=\"disabled\"",
            "-c",
            "openai_base_url=\"http://127.0.0.1:9/v1\"",
            "-c",
            "model_reasoning_effort=\"high\"",
        ]);
        // approval_policy is the loader's now (`apply_configured`).
        assert_eq!(o.approval_policy, ApprovalPolicy::Never);
        assert_eq!(o.openai_base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
        assert!(o.network_access);
        assert_eq!(o.warnings.len(), 1, "{:?}", o.warnings);
        assert!(o.warnings[0].contains("web_search"));
    }

    #[test]
    fn configured_policies_apply_unless_a_flag_chose() {
        let mut o = opts(&[]);
        o.apply_configured(
            Some(SandboxPolicy::WorkspaceWrite),
            Some(ApprovalPolicy::Untrusted),
        );
        assert_eq!(o.sandbox_policy, SandboxPolicy::WorkspaceWrite);
        assert_eq!(o.approval_policy, ApprovalPolicy::Untrusted);
        assert!(o.warnings[0].contains("denied"), "{:?}", o.warnings);
        let mut o = opts(&["-s", "read-only"]);
        o.apply_configured(Some(SandboxPolicy::DangerFullAccess), None);
        assert_eq!(o.sandbox_policy, SandboxPolicy::ReadOnly);
        let mut o = opts(&["--dangerously-bypass-approvals-and-sandbox"]);
        o.apply_configured(
            Some(SandboxPolicy::ReadOnly),
            Some(ApprovalPolicy::Untrusted),
        );
        assert_eq!(o.sandbox_policy, SandboxPolicy::DangerFullAccess);
        assert_eq!(o.approval_policy, ApprovalPolicy::Never);
    }

    #[test]
    fn model_flag_becomes_a_quoted_override_for_replay() {
        let o = RunOptions::from_overrides(&[], Some("gpt \"x\""));
        let parsed = Override::parse(&o.overrides[0]).unwrap();
        assert_eq!(parsed.path, vec!["model".to_owned()]);
        assert_eq!(parsed.value.as_str(), Some("gpt \"x\""));
    }

    #[test]
    fn exec_model_flag_is_no_file_override() {
        assert!(opts(&["-m", "gpt-x"]).overrides.is_empty());
    }

    #[test]
    fn bypass_wins_over_sandbox_flag() {
        let o = opts(&[
            "-s",
            "read-only",
            "--dangerously-bypass-approvals-and-sandbox",
        ]);
        assert_eq!(o.sandbox_policy, SandboxPolicy::DangerFullAccess);
        assert_eq!(o.approval_policy, ApprovalPolicy::Never);
    }
}
