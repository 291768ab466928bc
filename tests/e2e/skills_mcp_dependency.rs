//! A skill's MCP dependency end to end: a skill whose `agents/openai.yaml` names MCP servers
//! (`dependencies.tools`, `type: mcp`) is attached by a `$name` mention; the configured
//! server, which had failed to start with the thread, is started again by the activation
//! (through the MCP supervisor) and its tools are offered from that turn's first request;
//! the server the configuration does not have is a notice in the same user message, so
//! the model and the user (`thread/read`) see it. Through a real `rein app-server`, a
//! `rein mock-model` recording the request bodies and a real MCP server (the Python SDK
//! one of tests/fixtures/mcp); every message is checked against Codex's schema.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;
use rein_test_support::mock_model::tool_names;
use rein_test_support::test_setup::{installed, repo_root};

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};

use crate::project_context::replies;
use crate::skills_activation::last_user;

const NOTICE: &str = "<skill_dependency_error>The skill `tables` depends on an MCP server \
                      that is not available: the MCP server `ghost` is not configured \
                      ([mcp_servers.ghost] in config.toml). Its tools are not available in \
                      this session.</skill_dependency_error>";

/// A `[mcp_servers.dep]` that fails its first start (it leaves `flag` behind) and is the
/// scripted Python server from then on.
fn flaky_server(flag: &std::path::Path) -> String {
    let script = format!(
        "if [ -e '{flag}' ]; then exec '{python}' '{server}'; fi; : > '{flag}'; exit 1",
        flag = flag.display(),
        python = installed("target/mcp-venv/bin/python").display(),
        server = repo_root()
            .join("tests/fixtures/mcp/scripted_server.py")
            .display(),
    );
    format!(
        "\n[mcp_servers.dep]\ncommand = \"/bin/sh\"\nargs = [\"-c\", {}]\n",
        serde_json::to_string(&script).unwrap()
    )
}

fn dep_tools(request: &Value) -> Vec<String> {
    let mut names: Vec<String> = tool_names(request)
        .into_iter()
        .filter(|n| n.starts_with("mcp__dep__"))
        .collect();
    names.sort();
    names
}

/// A home whose `dep` server fails its first start, and a repository with the skill
/// `tables`, which depends on `dep` and on the unconfigured `ghost`.
struct Setup {
    home: tempfile::TempDir,
    _scratch: tempfile::TempDir,
    _repo: tempfile::TempDir,
    user_home: tempfile::TempDir,
    root: std::path::PathBuf,
}

impl Setup {
    fn new(model: &MockModel) -> Self {
        let home = home_for(model);
        let scratch = tempfile::tempdir().unwrap();
        let config_path = home.path().join("config.toml");
        let mut config = std::fs::read_to_string(&config_path).unwrap();
        config.push_str(&flaky_server(&scratch.path().join("started-once")));
        std::fs::write(&config_path, config).unwrap();
        let repo = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(repo.path()).unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        let skill = root.join(".agents/skills/tables");
        std::fs::create_dir_all(skill.join("agents")).unwrap();
        let skill_text = "---\nname: tables\ndescription: Tables through dep.\n---\nUse dep.\n";
        std::fs::write(skill.join("SKILL.md"), skill_text).unwrap();
        std::fs::write(
            skill.join("agents/openai.yaml"),
            "dependencies:\n  tools:\n    - type: mcp\n      value: dep\n    - type: mcp\n      value: ghost\n",
        )
        .unwrap();
        Self {
            home,
            _scratch: scratch,
            _repo: repo,
            user_home: tempfile::tempdir().unwrap(),
            root,
        }
    }

    /// A server and a thread in the repository, once `dep` has failed its first start.
    fn server_and_thread(&self) -> (AppServer, String) {
        let mut server = AppServer::start_with_env(
            self.home.path(),
            &[],
            &[("HOME", self.user_home.path().to_str().unwrap())],
        );
        server.initialize();
        server.send(&json!({"method": "initialized"}));
        // The answer, the thread's start and the server's statuses travel separately:
        // wait for all three.
        let id = server.request(
            "thread/start",
            json!({ "cwd": self.root, "approvalPolicy": "never" }),
        );
        let (mut answered, mut started, mut failed) = (None, false, false);
        server.until(|m| {
            if m.get("id") == Some(&id) {
                answered = m["result"]["thread"]["id"].as_str().map(str::to_owned);
            }
            started |= method(m) == "thread/started";
            failed |= method(m) == "mcpServer/startupStatus/updated"
                && m["params"]["name"] == "dep"
                && m["params"]["status"] == "failed";
            answered.is_some() && started && failed
        });
        (server, answered.unwrap())
    }
}

#[test]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the MCP SDK into a venv with it)"
)]
fn activating_a_skill_starts_its_mcp_server_and_a_missing_one_is_a_notice() {
    let model = MockModel::start(replies(2));
    let setup = Setup::new(&model);
    let skill = setup.root.join(".agents/skills/tables");
    let (mut server, thread) = setup.server_and_thread();
    server.turn(&thread, "hello");

    // The mention attaches `tables`: `dep` is started again and is ready before the turn's
    // first request; `ghost` is a notice after the skill.
    server.turn(&thread, "use $tables");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(dep_tools(&requests[0]), Vec::<String>::new());
    let offered = dep_tools(&requests[1]);
    assert!(
        offered.contains(&"mcp__dep__count".to_owned()),
        "{offered:?}"
    );
    let skill_md = skill.join("SKILL.md");
    let user = last_user(&requests[1]);
    let texts: Vec<&str> = user
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), 3, "{user:#}");
    assert_eq!(texts[0], "use $tables");
    assert!(
        texts[1].contains(&skill_md.display().to_string()) && texts[1].contains("Use dep."),
        "{}",
        texts[1]
    );
    assert_eq!(texts[2], NOTICE);

    // The user sees the notice too: it is part of the message `thread/read` shows.
    let read = server.call(
        "thread/read",
        json!({"threadId": thread, "includeTurns": true}),
    );
    let items = read["result"]["thread"]["turns"][1]["items"][0]["content"].clone();
    assert_eq!(
        items.as_array().unwrap().last().unwrap(),
        &json!({"type": "text", "text": NOTICE, "text_elements": []})
    );
    assert!(server.finish().success());
}

#[test]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the MCP SDK into a venv with it)"
)]
fn the_model_opening_a_skill_starts_its_mcp_server_and_hears_of_a_missing_one() {
    let model = MockModel::start(json!({"replies": [
        {"tool_calls": [{"call_id": "open", "name": "shell",
                         "arguments": {"command": ["cat", ".agents/skills/tables/SKILL.md"]}}]},
        {"text": "done"}
    ]}));
    let setup = Setup::new(&model);
    let (mut server, thread) = setup.server_and_thread();
    server.request(
        "turn/start",
        json!({"threadId": thread, "input": [{"type": "text", "text": "make a table"}]}),
    );
    let seen = server.until(|m| method(m) == "turn/completed");
    // The user is warned of the missing server.
    let warnings: Vec<&Value> = seen
        .iter()
        .filter(|m| method(m) == "warning")
        .map(|m| &m["params"])
        .collect();
    assert_eq!(
        warnings,
        vec![&json!({"threadId": thread,
                     "message": "skill tables: the MCP server `ghost` is not configured"})]
    );
    // The step after the read is offered `dep`'s tools (started again by the activation)
    // and tells the model of `ghost`.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(dep_tools(&requests[0]), Vec::<String>::new());
    assert!(
        dep_tools(&requests[1]).contains(&"mcp__dep__count".to_owned()),
        "{:?}",
        dep_tools(&requests[1])
    );
    let last = requests[1]["input"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last,
        json!({"type": "message", "role": "developer", "content": [{"type": "input_text",
               "text": "<skill_dependency_error>The skill `tables` depends on an MCP server \
                        that is not available: the MCP server `ghost` is not configured. Its \
                        tools are not available in this session.</skill_dependency_error>"}]})
    );
    assert!(server.finish().success());
}
