//! Streamable-HTTP servers through the kernel, each a real server on 127.0.0.1 started by
//! the test: the scripted Python server (which reports the headers it was sent: the bearer
//! token from the named variable, static and environment headers) and the reference
//! TypeScript server (`server-everything streamableHttp`). A server that goes away fails
//! calls at once with a readable error and is connected again once it is back.
#![allow(clippy::unwrap_used)]

use rein_test_support::mcp as support;

use std::process::Stdio;
use std::sync::Arc;

use pretty_assertions::assert_eq;
use rein_core::model::scripted::ScriptedModel;
use rein_core::tool_servers::ServerStatus;
use rein_core::ThreadOptions;
use rein_mcp::McpManager;
use rein_protocol::script::ScriptedReply;
use rein_protocol::{Op, ToolAction, ToolOutcome};
use serde_json::json;
use support::*;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A server process of the test's own, killed with the test.
struct HttpServer {
    child: Child,
    port: u16,
}

impl HttpServer {
    fn url(&self) -> String {
        http_url(self.port)
    }

    async fn kill(mut self) {
        self.child.kill().await.unwrap();
    }
}

fn http_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}/mcp")
}

/// Start the scripted Python server over HTTP (on `port`, or a free one) and wait until
/// it says it listens.
async fn scripted_http(python: &std::path::Path, port: u16) -> HttpServer {
    let mut child = Command::new(python)
        .arg(scripted_server())
        .args(["--http", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next_line().await.unwrap().expect("the server exited");
    let port = line.strip_prefix("listening ").unwrap().parse().unwrap();
    HttpServer { child, port }
}

/// Start server-everything's streamable-HTTP mode on a free port and wait until it listens.
async fn everything_http(entry: &std::path::Path) -> HttpServer {
    // It takes its port from PORT only; a port the kernel just handed out is free.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new("node")
        .arg(entry)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let line = lines.next_line().await.unwrap().expect("the server exited");
        if line.contains("listening on port") {
            break;
        }
    }
    // Keep draining its log so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    HttpServer { child, port }
}

fn manager(config: &str, vars: &'static [(&'static str, &'static str)]) -> Arc<McpManager> {
    McpManager::new(
        &rein_config::mcp::parse_document(config).unwrap(),
        Arc::new(move |k: &str| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| (*v).to_owned())
        }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the MCP SDK and mcp-server-time into a venv with it)"
)]
async fn an_http_server_gets_the_token_and_headers_and_its_results_reach_the_model() {
    let python = python();
    let http = scripted_http(&python, 0).await;
    let mcp = manager(
        &format!(
            "[mcp_servers.remote]\nurl = {}\nbearer_token_env_var = \"REMOTE_TOKEN\"\n\
             http_headers = {{ \"X-Team\" = \"rein\" }}\n\
             env_http_headers = {{ \"X-Env\" = \"REMOTE_ENV\", \"X-Unset\" = \"NOT_SET\" }}\n",
            toml_string(&http.url())
        ),
        &[("REMOTE_TOKEN", "s3cret"), ("REMOTE_ENV", "from-env")],
    );
    let cwd = tempfile::tempdir().unwrap();
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("mcp__remote__headers", json!({})),
        ScriptedReply::tool_call("mcp__remote__count", json!({ "steps": 2 })),
        ScriptedReply::text("done"),
    ]);
    let kernel = kernel(Arc::clone(&model), &mcp);
    let mut t = kernel
        .create_thread(ThreadOptions::new(settings(cwd.path().to_owned())))
        .unwrap();
    let server = mcp.servers_for(cwd.path()).remove(0);
    assert_eq!(server.wait_settled().await, ServerStatus::Ready);
    assert_eq!(server.pid(), None, "an HTTP server is not rein's process");
    t.handle.submit(Op::user_text("go")).await.unwrap();
    let calls = calls_of_turn(&mut t.events).await;
    assert_eq!(
        calls,
        vec![
            (
                ToolAction::Mcp {
                    server: "remote".into(),
                    tool: "headers".into(),
                    arguments: json!({}),
                },
                ToolOutcome::Returned {
                    text: "authorization=Bearer s3cret x-team=rein x-env=from-env".into(),
                    structured: Some(json!({
                        "result": "authorization=Bearer s3cret x-team=rein x-env=from-env"
                    })),
                    content: Vec::new(),
                }
            ),
            (
                ToolAction::Mcp {
                    server: "remote".into(),
                    tool: "count".into(),
                    arguments: json!({ "steps": 2 }),
                },
                ToolOutcome::Returned {
                    text: "counted to 2".into(),
                    structured: Some(json!({ "result": "counted to 2" })),
                    content: Vec::new(),
                }
            ),
        ]
    );
    mcp.shutdown().await;
    http.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_token_variable_fails_the_server_with_its_name() {
    let mcp = manager(
        "[mcp_servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_token_env_var = \"REMOTE_TOKEN\"\n",
        &[],
    );
    let cwd = tempfile::tempdir().unwrap();
    let server = mcp.servers_for(cwd.path()).remove(0);
    assert_eq!(
        server.wait_settled().await,
        ServerStatus::Failed {
            error: "environment variable REMOTE_TOKEN for MCP server 'remote' is not set".into()
        }
    );
    mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs server-everything with them)"
)]
async fn server_everything_over_http_answers_through_the_kernel() {
    let entry = everything();
    let http = everything_http(&entry).await;
    let mcp = manager(
        &format!(
            "[mcp_servers.everything]\nurl = {}\n",
            toml_string(&http.url())
        ),
        &[],
    );
    let cwd = tempfile::tempdir().unwrap();
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("mcp__everything__echo", json!({ "message": "over http" })),
        ScriptedReply::tool_call("mcp__everything__get_sum", json!({ "a": 2, "b": 3 })),
        ScriptedReply::text("done"),
    ]);
    let kernel = kernel(Arc::clone(&model), &mcp);
    let mut t = kernel
        .create_thread(ThreadOptions::new(settings(cwd.path().to_owned())))
        .unwrap();
    let server = mcp.servers_for(cwd.path()).remove(0);
    assert_eq!(server.wait_settled().await, ServerStatus::Ready);
    t.handle.submit(Op::user_text("go")).await.unwrap();
    let outcomes: Vec<ToolOutcome> = calls_of_turn(&mut t.events)
        .await
        .into_iter()
        .map(|(_, o)| o)
        .collect();
    assert_eq!(
        outcomes,
        vec![
            ToolOutcome::Returned {
                text: "Echo: over http".into(),
                structured: None,
                content: Vec::new(),
            },
            ToolOutcome::Returned {
                text: "The sum of 2 and 3 is 5.".into(),
                structured: None,
                content: Vec::new(),
            },
        ]
    );
    mcp.shutdown().await;
    http.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the MCP SDK and mcp-server-time into a venv with it)"
)]
async fn an_http_server_that_goes_away_fails_calls_at_once_and_is_connected_again() {
    let python = python();
    let http = scripted_http(&python, 0).await;
    let port = http.port;
    let config = format!("[mcp_servers.remote]\nurl = {}\n", toml_string(&http.url()));
    let mcp = manager(&config, &[]);
    let cwd = tempfile::tempdir().unwrap();
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("mcp__remote__count", json!({ "steps": 1 })),
        ScriptedReply::text("gone"),
        ScriptedReply::tool_call("mcp__remote__count", json!({ "steps": 1 })),
        ScriptedReply::text("back"),
    ]);
    let kernel = kernel(Arc::clone(&model), &mcp);
    let mut t = kernel
        .create_thread(ThreadOptions::new(settings(cwd.path().to_owned())))
        .unwrap();
    let server = mcp.servers_for(cwd.path()).remove(0);
    assert_eq!(server.wait_settled().await, ServerStatus::Ready);
    http.kill().await;

    t.handle.submit(Op::user_text("go")).await.unwrap();
    let calls = calls_of_turn(&mut t.events).await;
    assert_eq!(
        calls[0].1,
        ToolOutcome::Failed {
            message: "tool call error: the call could not be sent to MCP server 'remote': \
                      Connection refused (os error 111)"
                .into()
        }
    );
    // The supervisor tries again with backoff, a bounded number of times; then the server
    // is failed until a reload, which connects again once the server is back.
    let ServerStatus::Failed { error } = server
        .wait_for(|s| matches!(s, ServerStatus::Failed { error } if error.contains("gave up")))
        .await
    else {
        unreachable!()
    };
    assert_eq!(
        error,
        format!(
            "initialize at {} failed: Connection refused (os error 111) \
             (gave up after 3 restarts; reload to try again)",
            http_url(port)
        )
    );
    let http = scripted_http(&python, port).await;
    mcp.reload(&rein_config::mcp::parse_document(&config).unwrap())
        .await;
    let server = mcp.servers_for(cwd.path()).remove(0);
    assert_eq!(server.wait_settled().await, ServerStatus::Ready);
    assert_eq!(server.status(), ServerStatus::Ready);
    t.handle.submit(Op::user_text("again")).await.unwrap();
    let calls = calls_of_turn(&mut t.events).await;
    assert_eq!(
        calls[0].1,
        ToolOutcome::Returned {
            text: "counted to 1".into(),
            structured: Some(json!({ "result": "counted to 1" })),
            content: Vec::new(),
        }
    );
    mcp.shutdown().await;
    http.kill().await;
}
