//! A client's MCP servers (`rein acp`'s `mcpServers`) as bootstrap turns them into rein's
//! configuration: unique names, bearer tokens kept apart, the transport's own headers and
//! what config.toml's checks refuse refused.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use rein_bootstrap::client_mcp::{configs_of, ClientMcp, ClientServer, ClientServerError};
use rein_config::mcp::{McpServerConfig, Transport};

fn pairs(given: &[(&str, &str)]) -> Vec<(String, String)> {
    given
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn stdio_and_http_servers_become_configurations_with_unique_names() {
    let servers = vec![
        ClientServer::Stdio {
            name: "My files".into(),
            command: "/usr/bin/files".into(),
            args: vec!["--root".into(), "/tmp".into()],
            env: pairs(&[("TOKEN", "t")]),
        },
        ClientServer::Stdio {
            name: "My-files".into(),
            command: "/usr/bin/other".into(),
            args: vec![],
            env: vec![],
        },
        ClientServer::Http {
            name: "web".into(),
            url: "http://127.0.0.1:1/mcp".into(),
            headers: pairs(&[("X-Team", "rein"), ("authorization", "bearer  s3cret ")]),
        },
        ClientServer::Http {
            name: "web".into(),
            url: "https://example.test/mcp".into(),
            headers: vec![],
        },
    ];
    let (configs, tokens) = configs_of(&servers).unwrap();
    let stdio = |command: &str, args: &[&str], env: &[(&str, &str)]| Transport::Stdio {
        command: command.into(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: pairs(env).into_iter().collect(),
        env_vars: Vec::new(),
        cwd: None,
    };
    let http =
        |url: &str, headers: &[(&str, &str)], token: Option<&str>| Transport::StreamableHttp {
            url: url.into(),
            bearer_token_env_var: token.map(str::to_owned),
            http_headers: pairs(headers).into_iter().collect(),
            env_http_headers: BTreeMap::new(),
        };
    let expected = vec![
        McpServerConfig::new(
            "My_files".into(),
            stdio("/usr/bin/files", &["--root", "/tmp"], &[("TOKEN", "t")]),
        ),
        McpServerConfig::new("My_files_2".into(), stdio("/usr/bin/other", &[], &[])),
        McpServerConfig::new(
            "web".into(),
            http(
                "http://127.0.0.1:1/mcp",
                &[("X-Team", "rein")],
                Some("acp-client-token:web"),
            ),
        ),
        McpServerConfig::new("web_2".into(), http("https://example.test/mcp", &[], None)),
    ];
    assert_eq!(configs, expected);
    assert_eq!(tokens, pairs(&[("acp-client-token:web", "s3cret")]));
    assert!(ClientMcp::new(&servers).is_ok());
}

#[test]
fn headers_the_transport_owns_and_what_the_configuration_refuses_are_errors() {
    let http = |name: &str, value: &str, url: &str| ClientServer::Http {
        name: "web".into(),
        url: url.into(),
        headers: pairs(&[(name, value)]),
    };
    let local = "http://127.0.0.1:1/mcp";
    let refused = |server: ClientServer| ClientMcp::new(&[server]).err().unwrap();
    assert!(matches!(
        refused(http("Authorization", "Basic dXNlcg==", local)),
        ClientServerError::NotBearer { .. }
    ));
    assert!(matches!(
        refused(http("Authorization", "Bearer ", local)),
        ClientServerError::NotBearer { .. }
    ));
    assert!(matches!(
        refused(http("Mcp-Session-Id", "x", local)),
        ClientServerError::ReservedHeader { .. }
    ));
    assert!(matches!(
        refused(http("bad header", "x", local)),
        ClientServerError::Invalid(_)
    ));
    assert!(matches!(
        refused(http("X-Team", "x", "ftp://127.0.0.1/mcp")),
        ClientServerError::Invalid(_)
    ));
}
