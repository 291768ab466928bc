//! Configuration parsing: defaults, providers, profiles, overrides and the errors that say
//! what to set.

use std::collections::HashMap;
use std::time::Duration;

use pretty_assertions::assert_eq;

use super::*;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k| map.get(k).cloned()
}

fn resolve_with(text: &str, options: LoadOptions) -> Result<ModelConfig, ConfigError> {
    resolve(
        text,
        Path::new("/home/u/.rein/config.toml"),
        &options,
        &env_of(&[]),
    )
}

fn opts(profile: Option<&str>, overrides: &[&str]) -> LoadOptions {
    LoadOptions {
        home: PathBuf::from("/home/u/.rein"),
        profile: profile.map(str::to_owned),
        overrides: overrides.iter().map(|s| (*s).to_owned()).collect(),
        model: None,
    }
}

const FILE: &str = r#"
model = "gpt-5"
model_provider = "openai"
model_context_window = 272000
some_other_section_key = true

[model_providers.vllm]
name = "vLLM"
base_url = "http://127.0.0.1:8000/v1"
wire_api = "chat"
env_key = "VLLM_KEY"
http_headers = { "X-Team" = "core" }
env_http_headers = { "OpenAI-Organization" = "VLLM_ORG", "X-Unset" = "NOT_SET" }
query_params = { "api-version" = "2025" }
request_max_retries = 2
stream_max_retries = 7
stream_idle_timeout_ms = 1500

[model_providers.ollama]
base_url = "http://10.0.0.5:11434/v1"

[profiles.local]
model = "qwen3-coder"
model_provider = "ollama"
fallback_model = "gpt-5-mini"
fallback_provider = "openai"

[profiles.same]
model = "m1"
model_provider = "vllm"
fallback_model = "m2"
"#;

#[test]
fn empty_file_gives_the_defaults() {
    let c = resolve_with("", opts(None, &[])).unwrap();
    assert_eq!(c.model, DEFAULT_MODEL);
    assert_eq!(c.provider, "openai");
    assert_eq!(c.fallback, None);
    assert_eq!(
        c.providers.keys().cloned().collect::<Vec<_>>(),
        vec!["lmstudio", "ollama", "openai"]
    );
    assert_eq!(c.providers["ollama"].base_url, "http://127.0.0.1:11434/v1");
    assert_eq!(c.providers["ollama"].wire_api, WireApi::Chat);
    assert_eq!(c.providers["ollama"].env_key, None);
}

#[test]
fn provider_tables_define_and_refine_providers() {
    let c = resolve_with(FILE, opts(None, &[])).unwrap();
    assert_eq!(c.context_window, Some(272_000));
    let vllm = &c.providers["vllm"];
    assert_eq!(vllm.name, "vLLM");
    assert_eq!(vllm.wire_api, WireApi::Chat);
    assert_eq!(vllm.env_key.as_deref(), Some("VLLM_KEY"));
    assert_eq!(vllm.http_headers, vec![("X-Team".into(), "core".into())]);
    assert_eq!(
        vllm.query_params,
        vec![("api-version".into(), "2025".into())]
    );
    assert_eq!(vllm.request_max_retries, 2);
    assert_eq!(vllm.stream_max_retries, 7);
    assert_eq!(vllm.stream_idle_timeout, Duration::from_millis(1500));
    // Refining a built-in keeps what the table does not say.
    assert_eq!(c.providers["ollama"].base_url, "http://10.0.0.5:11434/v1");
    assert_eq!(c.providers["ollama"].wire_api, WireApi::Chat);
}

#[test]
fn profile_chooses_model_provider_and_fallback() {
    let c = resolve_with(FILE, opts(Some("local"), &[])).unwrap();
    assert_eq!(c.model, "qwen3-coder");
    assert_eq!(c.provider, "ollama");
    assert_eq!(c.profile.as_deref(), Some("local"));
    assert_eq!(
        c.fallback,
        Some(Fallback {
            model: "gpt-5-mini".into(),
            provider: "openai".into()
        })
    );
    // The profile's file default and a fallback on the profile's own provider.
    let text = format!("profile = \"same\"\n{FILE}");
    let c = resolve_with(&text, opts(None, &[])).unwrap();
    assert_eq!(
        c.fallback,
        Some(Fallback {
            model: "m2".into(),
            provider: "vllm".into()
        })
    );
}

#[test]
fn overrides_win_over_file_and_create_tables() {
    let c = resolve_with(
        FILE,
        opts(
            Some("local"),
            &[
                "profiles.local.model=override-model",
                "model_providers.ollama.stream_idle_timeout_ms=5",
                "model_providers.extra.base_url=http://127.0.0.1:9/v1",
            ],
        ),
    )
    .unwrap();
    assert_eq!(c.model, "override-model");
    assert_eq!(
        c.providers["ollama"].stream_idle_timeout,
        Duration::from_millis(5)
    );
    assert_eq!(c.providers["extra"].wire_api, WireApi::Responses);
    let c = resolve_with(
        FILE,
        opts(None, &["model=gpt-x", "model_context_window=1000"]),
    )
    .unwrap();
    assert_eq!(c.model, "gpt-x");
    assert_eq!(c.context_window, Some(1000));
}

#[test]
fn unknown_provider_says_what_to_set() {
    let err = resolve_with("model_provider = \"nope\"", opts(None, &[])).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ConfigError::UnknownProvider { ref id, .. } if id == "nope"));
    assert!(
        msg.contains("set `model_provider` to one of lmstudio, ollama, openai"),
        "{msg}"
    );
    assert!(msg.contains("[model_providers.nope]"), "{msg}");
    assert!(msg.contains("/home/u/.rein/config.toml"), "{msg}");
    let err = resolve_with(
        "[profiles.p]\nfallback_model = \"x\"\nfallback_provider = \"gone\"",
        opts(Some("p"), &[]),
    )
    .unwrap_err();
    assert!(matches!(err, ConfigError::UnknownProvider { ref id, .. } if id == "gone"));
}

#[test]
fn unknown_profile_and_bad_values_are_reported() {
    let err = resolve_with(FILE, opts(Some("missing"), &[])).unwrap_err();
    assert!(err.to_string().contains("[profiles.missing]"), "{err}");
    assert!(err.to_string().contains("local, same"), "{err}");
    let err = resolve_with("[model_providers.x]\nname = \"X\"", opts(None, &[])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the model provider `x` has no base_url: set model_providers.x.base_url"
    );
    let err = resolve_with("model = [", opts(None, &[])).unwrap_err();
    assert!(matches!(err, ConfigError::Parse { .. }));
    let err = resolve_with("", opts(None, &["model_context_window=\"many\""])).unwrap_err();
    assert!(matches!(err, ConfigError::Parse { .. }), "{err}");
    let err = resolve_with(
        "[model_providers.x]\nbase_url = \"ftp://h\"",
        opts(None, &[]),
    )
    .unwrap_err();
    assert!(matches!(err, ConfigError::InvalidBaseUrl { .. }), "{err}");
    let err = resolve_with(
        "[model_providers.x]\nbase_url = \"http://h\"\nhttp_headers = { \"bad header\" = \"v\" }",
        opts(None, &[]),
    )
    .unwrap_err();
    assert!(matches!(err, ConfigError::InvalidHeader { .. }), "{err}");
}

#[test]
fn openai_base_url_moves_the_builtin() {
    let c = resolve(
        "",
        Path::new("c.toml"),
        &opts(None, &[]),
        &env_of(&[("OPENAI_BASE_URL", "http://127.0.0.1:5/v1")]),
    )
    .unwrap();
    assert_eq!(c.providers["openai"].base_url, "http://127.0.0.1:5/v1");
}

#[test]
fn load_reads_config_toml_from_home_and_tolerates_its_absence() {
    let dir = tempfile::tempdir().unwrap();
    let options = LoadOptions {
        home: dir.path().to_owned(),
        ..LoadOptions::default()
    };
    assert_eq!(load(&options, &env_of(&[])).unwrap().model, DEFAULT_MODEL);
    std::fs::write(dir.path().join("config.toml"), "model = \"from-file\"").unwrap();
    let c = load(&options, &env_of(&[])).unwrap();
    assert_eq!(c.model, "from-file");
    assert_eq!(c.config_path, dir.path().join("config.toml"));
}

#[test]
fn rein_home_prefers_the_variable() {
    assert_eq!(
        rein_home(&env_of(&[("REIN_HOME", "/r"), ("HOME", "/h")])),
        Some(PathBuf::from("/r"))
    );
    assert_eq!(
        rein_home(&env_of(&[("HOME", "/h")])),
        Some(PathBuf::from("/h/.rein"))
    );
    assert_eq!(rein_home(&env_of(&[])), None);
}

#[test]
fn the_advisor_takes_its_model_from_its_profile_and_is_off_by_default() {
    let text = r#"
model = "big"
model_provider = "ollama"

[profiles.reviewer]
model = "small"

[advisor]
mode = "lightweight"
profile = "reviewer"
timeout_ms = 1500
"#;
    let config = resolve_with(text, opts(None, &[])).unwrap();
    assert_eq!(
        config.advisor,
        AdvisorConfig {
            mode: AdvisorMode::Lightweight,
            model: Some(("small".into(), "ollama".into())),
            timeout: Duration::from_millis(1500),
        }
    );
    let off = resolve_with("", opts(None, &["advisor.mode=full"])).unwrap();
    assert_eq!(off.advisor.mode, AdvisorMode::Full);
    assert_eq!(off.advisor.model, None);
    assert_eq!(
        resolve_with("", opts(None, &[])).unwrap().advisor,
        AdvisorConfig::default()
    );
    let unknown = resolve_with(
        "[advisor]\nmode = \"full\"\nprofile = \"nope\"\n",
        opts(None, &[]),
    );
    assert!(matches!(unknown, Err(ConfigError::UnknownProfile { name, .. }) if name == "nope"));
    let bad = resolve_with("[advisor]\nmode = \"sometimes\"\n", opts(None, &[]));
    assert!(matches!(bad, Err(ConfigError::Parse { .. })));
}

#[test]
fn the_goal_evaluator_takes_its_model_from_its_profile() {
    let text = r#"
model = "big"
model_provider = "ollama"

[profiles.judge]
model = "judge-model"

[goals]
evaluator_profile = "judge"
evaluator_timeout_ms = 2500
"#;
    let config = resolve_with(text, opts(None, &[])).unwrap();
    assert_eq!(
        config.goal_evaluator,
        Some(("judge-model".into(), "ollama".into()))
    );
    assert_eq!(config.goals.evaluator_timeout_ms, Some(2500));
    assert_eq!(
        resolve_with("", opts(None, &[])).unwrap().goal_evaluator,
        None
    );
    let unknown = resolve_with("[goals]\nevaluator_profile = \"nope\"\n", opts(None, &[]));
    assert!(matches!(unknown, Err(ConfigError::UnknownProfile { name, .. }) if name == "nope"));
}

#[test]
fn codex_project_doc_keys_and_read_codex_home() {
    let defaults = resolve_with("", opts(None, &[])).unwrap();
    assert_eq!(defaults.project_doc, ProjectDocSettings::default());
    assert_eq!(defaults.project_doc.max_bytes, 32768);
    let text = r#"
project_doc_max_bytes = 100
project_doc_fallback_filenames = ["CLAUDE.md"]
project_root_markers = [".git", ".hg"]
[project_doc]
read_codex_home = true
"#;
    let config = resolve_with(text, opts(None, &["project_doc_max_bytes=0"])).unwrap();
    assert_eq!(
        config.project_doc,
        ProjectDocSettings {
            max_bytes: 0,
            fallback_filenames: vec!["CLAUDE.md".into()],
            root_markers: vec![".git".into(), ".hg".into()],
            read_codex_home: true,
        }
    );
    let bad = resolve_with("[project_doc]\nread_codex = true\n", opts(None, &[]));
    assert!(bad.unwrap_err().to_string().contains("read_codex"));
}

#[test]
fn agent_roles_and_the_strategy_are_typed() {
    use crate::agents::{RoleToml, Strategy};
    let text = "[agents]\nstrategy = \"planner\"\nmax_review_rounds = 3\n\n\
                [agents.roles.reviewer]\nmodel = \"gpt-review\"\nreasoning_effort = \"high\"\n\
                tools = [\"shell\"]\nsandbox_mode = \"read-only\"\nmay_spawn = false\n";
    let c = resolve_with(text, opts(None, &["agents.strategy=\"single\""])).unwrap();
    assert_eq!(c.agents.strategy, Some(Strategy::Single));
    assert_eq!(c.agents.max_review_rounds, Some(3));
    assert_eq!(
        c.agents.roles.get("reviewer"),
        Some(&RoleToml {
            description: None,
            model: Some("gpt-review".into()),
            reasoning_effort: Some(rein_protocol::ReasoningEffort::HIGH),
            instructions: None,
            tools: Some(vec!["shell".into()]),
            sandbox_mode: Some(rein_protocol::SandboxPolicy::ReadOnly),
            may_spawn: Some(false),
        })
    );
    let bad = resolve_with("[agents]\nstrategy = \"swarm\"\n", opts(None, &[]));
    assert!(bad.is_err());
}

#[test]
fn the_memory_extraction_takes_its_model_from_a_profile_or_the_main_provider() {
    let text = r#"
model = "big"
model_provider = "ollama"

[profiles.cheap]
model = "small"
model_provider = "openai"

[memory]
extract = true
extract_profile = "cheap"
"#;
    let config = resolve_with(text, opts(None, &[])).unwrap();
    assert_eq!(
        config.memory.extract_model,
        Some(("small".into(), "openai".into()))
    );
    let named = resolve_with("[memory]\nextract_model = \"tiny\"\n", opts(None, &[])).unwrap();
    assert_eq!(
        named.memory.extract_model,
        Some(("tiny".into(), named.provider.clone()))
    );
    assert_eq!(
        resolve_with("", opts(None, &[]))
            .unwrap()
            .memory
            .extract_model,
        None
    );
    let both = resolve_with(
        "[profiles.cheap]\nmodel = \"small\"\n[memory]\nextract_profile = \"cheap\"\nextract_model = \"tiny\"\n",
        opts(None, &[]),
    );
    assert!(matches!(both, Err(ConfigError::MemoryExtractModel { .. })));
    let unknown = resolve_with("[memory]\nextract_profile = \"nope\"\n", opts(None, &[]));
    assert!(matches!(unknown, Err(ConfigError::UnknownProfile { name, .. }) if name == "nope"));
}
