//! Unit tests of the `[mcp_servers]` parser and its checks.
#![allow(clippy::unwrap_used)]

use super::*;
use pretty_assertions::assert_eq;

fn parse_str(text: &str) -> Result<Vec<McpServerConfig>, McpServerError> {
    let table: toml::Table = toml::from_str(text).unwrap();
    parse(table["mcp_servers"].as_table().unwrap())
}

/// The README's example configuration is one rein accepts, with what it says.
#[test]
fn the_readme_example_parses() {
    let readme = include_str!("../../README.md");
    let section = &readme[readme.find("## MCP servers").unwrap()..];
    let start = section.find("```toml\n").unwrap() + "```toml\n".len();
    let example = &section[start..start + section[start..].find("```").unwrap()];
    let servers = parse_str(example).unwrap();
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["everything", "remote"]);
    assert_eq!(servers[0].startup_timeout, Duration::from_secs(30));
    assert_eq!(servers[0].tool_timeout, Duration::from_secs(300));
    assert_eq!(
        servers[0].tool_approval_modes.get("echo"),
        Some(&ApprovalMode::Approve)
    );
    assert!(matches!(
        servers[1].transport,
        Transport::StreamableHttp { .. }
    ));
}

#[test]
fn a_stdio_server_gets_codex_defaults() {
    let servers = parse_str(
        r#"
        [mcp_servers.everything]
        command = "npx"
        args = ["-y", "@modelcontextprotocol/server-everything"]
        env_vars = ["HTTP_PROXY", { name = "NO_PROXY", source = "local" }]
        disabled_tools = ["get-env"]
        [mcp_servers.everything.tools.echo]
        approval_mode = "prompt"
        "#,
    )
    .unwrap();
    assert_eq!(
        servers,
        vec![McpServerConfig {
            name: "everything".into(),
            transport: Transport::Stdio {
                command: "npx".into(),
                args: vec![
                    "-y".into(),
                    "@modelcontextprotocol/server-everything".into()
                ],
                env: BTreeMap::new(),
                env_vars: vec!["HTTP_PROXY".into(), "NO_PROXY".into()],
                cwd: None,
            },
            enabled: true,
            required: false,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            enabled_tools: None,
            disabled_tools: vec!["get-env".into()],
            default_tools_approval_mode: ApprovalMode::Auto,
            tool_approval_modes: [("echo".to_owned(), ApprovalMode::Prompt)].into(),
        }]
    );
    assert!(servers[0].offers("echo"));
    assert!(!servers[0].offers("get-env"));
}

#[test]
fn bad_configuration_names_the_server_and_the_key() {
    let cases = [
        (
            "[mcp_servers.a]\ncommand = \"x\"\nurl = \"http://h\"",
            "[mcp_servers.a] url: a server has either `command` (stdio) or `url` (streamable HTTP), not both",
        ),
        (
            "[mcp_servers.a]\ncommand = \"x\"\nhttp_headers = { A = \"b\" }",
            "[mcp_servers.a] http_headers: is not supported for stdio",
        ),
        (
            "[mcp_servers.a]\nurl = \"http://h/mcp\"\ncwd = \"/\"",
            "[mcp_servers.a] cwd: is not supported for streamable_http",
        ),
        (
            "[mcp_servers.a]\nurl = \"http://h/mcp\"\nbearer_token = \"s3cret\"",
            "[mcp_servers.a] bearer_token: inline tokens are not accepted: put the token in an environment variable and name it with bearer_token_env_var",
        ),
        (
            "[mcp_servers.a]\nurl = \"http://h/mcp\"\nhttp_headers = { \"Mcp-Session-Id\" = \"x\" }",
            "[mcp_servers.a] http_headers: `Mcp-Session-Id` is set by the transport (use bearer_token_env_var for a token)",
        ),
        (
            "[mcp_servers.a]\nurl = \"http://h/mcp\"\nenv_http_headers = { \"X Team\" = \"TEAM\" }",
            "[mcp_servers.a] env_http_headers: `X Team` is not a valid header name",
        ),
        (
            "[mcp_servers.a]\nurl = \"http://h/mcp\"\nhttp_headers = { \"X-Team\" = \"a\\nb\" }",
            "[mcp_servers.a] http_headers: the value of `X-Team` is not a valid header value",
        ),
        (
            "[mcp_servers.a]\nargs = []",
            "[mcp_servers.a]: invalid transport: set `command` (stdio) or `url` (streamable HTTP)",
        ),
        (
            "[mcp_servers.a]\ncommand = \"x\"\ntool_timeout_sec = -1",
            "[mcp_servers.a] tool_timeout_sec: -1 is not a positive number of seconds",
        ),
        (
            "[mcp_servers.\"a b\"]\ncommand = \"x\"",
            "[mcp_servers.a b]: invalid server name: use only letters, digits, '_' and '-'",
        ),
        (
            "[mcp_servers.a__b]\ncommand = \"x\"",
            "[mcp_servers.a__b]: invalid server name: it may not start or end with '_' or '-', nor hold two of them in a row (tool names are mcp__<server>__<tool>)",
        ),
        (
            "[mcp_servers.a_]\ncommand = \"x\"",
            "[mcp_servers.a_]: invalid server name: it may not start or end with '_' or '-', nor hold two of them in a row (tool names are mcp__<server>__<tool>)",
        ),
        (
            "[mcp_servers.a-b]\ncommand = \"x\"\n[mcp_servers.a_b]\ncommand = \"y\"",
            "[mcp_servers.a_b]: server names 'a-b' and 'a_b' would both name their tools mcp__a_b__…: rename one",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(parse_str(text).unwrap_err().to_string(), message, "{text}");
    }
    let unknown = parse_str("[mcp_servers.a]\ncommand = \"x\"\ncomand = 1")
        .unwrap_err()
        .to_string();
    assert!(
        unknown.starts_with("[mcp_servers.a]: unknown field `comand`"),
        "{unknown}"
    );
}

#[test]
fn approvals_follow_mode_and_annotations() {
    let mut config = parse_str("[mcp_servers.a]\ncommand = \"x\"")
        .unwrap()
        .remove(0);
    let read_only = Annotations {
        read_only: Some(true),
        ..Annotations::default()
    };
    let destructive = Annotations {
        destructive: Some(true),
        read_only: Some(true),
        ..Annotations::default()
    };
    let closed_write = Annotations {
        destructive: Some(false),
        open_world: Some(false),
        read_only: Some(false),
    };
    assert!(!config.asks_for("t", None));
    assert!(!config.asks_for("t", Some(&read_only)));
    assert!(config.asks_for("t", Some(&destructive)));
    assert!(!config.asks_for("t", Some(&closed_write)));
    assert!(config.asks_for("t", Some(&Annotations::default())));
    config.default_tools_approval_mode = ApprovalMode::Approve;
    assert!(!config.asks_for("t", Some(&destructive)));
    config
        .tool_approval_modes
        .insert("t".into(), ApprovalMode::Prompt);
    assert!(config.asks_for("t", None));
}
