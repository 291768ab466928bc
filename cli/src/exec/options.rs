//! Turning `rein exec`'s flags and `-c` overrides into what the run needs: the overrides
//! the configuration loader reads, the thread's policies, the environment the providers
//! see (Codex's variable names honoured), and warnings for keys rein does not support.

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
];

/// What the flags resolve to.
#[derive(Debug)]
pub struct RunOptions {
    /// Overrides for the configuration loader, `--model` included.
    pub overrides: Vec<String>,
    pub approval_policy: ApprovalPolicy,
    pub sandbox_policy: SandboxPolicy,
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
            openai_base_url: None,
            network_access: false,
            warnings: Vec::new(),
        };
        if let Some(model) = model {
            opts.overrides.push(format!("model={}", toml_string(model)));
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
            // Nobody can answer an approval request in a headless run: asking would only
            // end in a denial the model cannot tell from a user's. Under `never` a tool
            // that needs approval fails back to the model saying so.
            (_, "approval_policy") => match text.and_then(parse_approval) {
                Some(ApprovalPolicy::Never) => {}
                Some(_) => self.warnings.push(format!(
                    "rein exec cannot ask for approvals: approval_policy {} is treated as \"never\"",
                    o.value
                )),
                None => self.warn_value(&key, &o.value),
            },
            (_, "sandbox_mode") => match text.and_then(parse_sandbox) {
                Some(p) => self.sandbox_policy = p,
                None => self.warn_value(&key, &o.value),
            },
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

    fn warn_value(&mut self, key: &str, value: &toml::Value) {
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

fn parse_approval(text: &str) -> Option<ApprovalPolicy> {
    match text {
        "never" => Some(ApprovalPolicy::Never),
        "on-request" => Some(ApprovalPolicy::OnRequest),
        "on-failure" => Some(ApprovalPolicy::OnFailure),
        "untrusted" => Some(ApprovalPolicy::Untrusted),
        _ => None,
    }
}

fn parse_sandbox(text: &str) -> Option<SandboxPolicy> {
    match text {
        "read-only" => Some(SandboxPolicy::ReadOnly),
        "workspace-write" => Some(SandboxPolicy::WorkspaceWrite),
        "danger-full-access" => Some(SandboxPolicy::DangerFullAccess),
        _ => None,
    }
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
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
        assert_eq!(o.approval_policy, ApprovalPolicy::Never);
        assert_eq!(o.openai_base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
        assert!(o.network_access);
        assert_eq!(o.warnings.len(), 2, "{:?}", o.warnings);
        assert!(o.warnings[0].contains("cannot ask for approvals"));
        assert!(o.warnings[1].contains("web_search"));
    }

    #[test]
    fn model_flag_becomes_a_quoted_override_for_replay() {
        let o = RunOptions::from_overrides(&[], Some("gpt \"x\""));
        let parsed = Override::parse(&o.overrides[0]).unwrap();
        assert_eq!(parsed.path, vec!["model".to_owned()]);
        assert_eq!(parsed.value, toml::Value::String("gpt \"x\"".into()));
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
