//! MCP servers through the kernel with the scripted model, against real servers: the
//! reference TypeScript server (`@modelcontextprotocol/server-everything`), a PyPI server
//! (`mcp-server-time`), and a scripted server on the Python SDK for the edge cases. Tools
//! reach the model, calls are tool facts whose results reach the model; a server that
//! never answers does not hold up a turn; a killed server fails its call at once and comes
//! back; a changed tool list is offered at the next step; shutdown leaves no process.
#![allow(clippy::unwrap_used)]

use rein_test_support::mcp as support;

use std::sync::Arc;

use pretty_assertions::assert_eq;
use rein_core::model::scripted::ScriptedModel;
use rein_core::tool_servers::{ServerStatus, StatusUpdate};
use rein_core::ThreadOptions;
use rein_protocol::script::ScriptedReply;
use rein_protocol::{EventMsg, Op, ToolAction, ToolOutcome};
use serde_json::json;
use support::*;

fn offered(request: &rein_core::model::ModelRequest) -> Vec<String> {
    request.tools.iter().map(|s| s.name.clone()).collect()
}

fn everything_config(entry: &std::path::Path, extra: &str) -> String {
    format!(
        "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n{extra}\n",
        toml_string(&entry.to_string_lossy())
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs server-everything with them)"
)]
async fn server_everything_tools_reach_the_model_and_results_come_back() {
    let entry = everything();
    let mcp = mcp(&everything_config(&entry, "disabled_tools = [\"get-env\"]"));
    let cwd = tempfile::tempdir().unwrap();
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("mcp__everything__echo", json!({ "message": "hello" })),
        ScriptedReply::tool_call("mcp__everything__get-sum", json!({ "a": 2, "b": 3 })),
        ScriptedReply::tool_call("mcp__everything__get_sum", json!({ "a": 2, "b": 3 })),
        ScriptedReply::tool_call("mcp__everything__get_sum", json!({ "a": "two" })),
        ScriptedReply::text("done"),
    ]);
    let kernel = kernel(Arc::clone(&model), &mcp);
    let mut updates = mcp.subscribe();
    let mut t = kernel
        .create_thread(ThreadOptions::new(settings(cwd.path().to_owned())))
        .unwrap();
    let server = mcp.servers_for(cwd.path()).remove(0);
    assert_eq!(server.wait_settled().await, ServerStatus::Ready);
    let seen: Vec<StatusUpdate> =
        vec![updates.recv().await.unwrap(), updates.recv().await.unwrap()];
    assert_eq!(
        seen.iter().map(|u| u.status.clone()).collect::<Vec<_>>(),
        vec![ServerStatus::Starting, ServerStatus::Ready]
    );

    t.handle.submit(Op::user_text("go")).await.unwrap();
    let calls = calls_of_turn(&mut t.events).await;
    let tools = offered(&model.requests()[0]);
    assert!(
        tools.contains(&"mcp__everything__echo".to_owned()),
        "{tools:?}"
    );
    assert!(
        tools.contains(&"mcp__everything__get_sum".to_owned()),
        "{tools:?}"
    );
    assert!(
        !tools.iter().any(|t| t.contains("get_env")),
        "disabled: {tools:?}"
    );
    assert_eq!(calls.len(), 4);
    assert_eq!(
        calls[0],
        (
            ToolAction::Mcp {
                server: "everything".into(),
                tool: "echo".into(),
                arguments: json!({ "message": "hello" }),
            },
            ToolOutcome::Returned {
                text: "Echo: hello".into(),
                structured: None,
                content: Vec::new(),
            }
        )
    );
    // The model's name for the tool is its sanitized one; the raw name is not a tool.
    assert!(
        matches!(calls[1].0, ToolAction::Other { .. }),
        "{:?}",
        calls[1]
    );
    assert_eq!(
        calls[2],
        (
            ToolAction::Mcp {
                server: "everything".into(),
                tool: "get-sum".into(),
                arguments: json!({ "a": 2, "b": 3 }),
            },
            ToolOutcome::Returned {
                text: "The sum of 2 and 3 is 5.".into(),
                structured: None,
                content: Vec::new(),
            }
        )
    );
    // Arguments that do not match the input schema never reach the server.
    let ToolOutcome::Failed { message } = &calls[3].1 else {
        panic!("{:?}", calls[3]);
    };
    assert!(
        message.starts_with("the arguments do not match the tool's input schema"),
        "{message}"
    );
    // The result reached the model.
    let second = &model.requests()[1];
    let outputs: Vec<String> = second
        .input
        .iter()
        .filter_map(|i| match i.as_ref() {
            rein_protocol::Item::ToolOutput { output, .. } => Some(output.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(outputs, vec!["Echo: hello".to_owned()]);

    let pid = server.pid().unwrap();
    assert!(alive(pid));
    mcp.shutdown().await;
    assert_eq!(
        server.status(),
        ServerStatus::Stopped {
            reason: "shut down".into()
        }
    );
    assert!(!alive(pid), "the server outlived the shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_does_not_hold_up_a_turn() {
    // `sleep` reads nothing and answers nothing: an initialize that never completes.
    let mcp = mcp(
        "[mcp_servers.stuck]\ncommand = \"sleep\"\nargs = [\"600\"]\nstartup_timeout_sec = 600\n",
    );
    let cwd = tempfile::tempdir().unwrap();
    let model = ScriptedModel::replies(vec![ScriptedReply::text("answered")]);
    let kernel = kernel(Arc::clone(&model), &mcp);
    let mut t = kernel
        .create_thread(ThreadOptions::new(settings(cwd.path().to_owned())))
        .unwrap();
    t.handle.submit(Op::user_text("hi")).await.unwrap();
    let end = until(&mut t.events, is_turn_end).await;
    assert!(matches!(end.msg, EventMsg::TurnCompleted { .. }), "{end:?}");
    let server = mcp.servers_for(cwd.path()).remove(0);
    assert_eq!(server.status(), ServerStatus::Starting);
    assert!(offered(&model.requests()[0]).is_empty());
    let pid = server.spawned().await;
    assert!(alive(pid));
    mcp.shutdown().await;
    assert!(!alive(pid), "the stuck server outlived the shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_startup_timeout_fails_the_server_and_required_servers_are_awaited() {
    let mcp = mcp(
        "[mcp_servers.stuck]\ncommand = \"sleep\"\nargs = [\"600\"]\nstartup_timeout_sec = 0.3\nrequired = true\n\
         [mcp_servers.missing]\ncommand = \"/nonexistent/server\"\n",
    );
    let cwd = tempfile::tempdir().unwrap();
    let error = mcp.wait_required(cwd.path()).await.unwrap_err();
    let why = "no answer to initialize and tools/list within 300ms (startup_timeout_sec)";
    assert_eq!(
        error,
        rein_mcp::RequiredServersFailed {
            failed: vec![rein_mcp::FailedServer {
                name: "stuck".into(),
                why: why.into()
            }]
        }
    );
    assert_eq!(
        error.to_string(),
        format!("required MCP servers failed to initialize: stuck: {why}")
    );
    let missing = mcp
        .running()
        .into_iter()
        .find(|s| s.name() == "missing")
        .unwrap();
    let ServerStatus::Failed { error } = missing.wait_settled().await else {
        panic!("{:?}", missing.status());
    };
    assert!(
        error.starts_with("cannot start `/nonexistent/server` in "),
        "{error}"
    );
    mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs server-everything with them)"
)]
async fn a_server_killed_mid_call_fails_the_call_at_once_and_comes_back() {
    let entry = everything();
    let mcp = mcp(&everything_config(&entry, ""));
    let cwd = tempfile::tempdir().unwrap();
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call(
            "mcp__everything__trigger_long_running_operation",
            json!({ "duration": 600, "steps": 6000 }),
        ),
        ScriptedReply::text("the server went away"),
        ScriptedReply::tool_call("mcp__everything__echo", json!({ "message": "back" })),
        ScriptedReply::text("done"),
    ]);
    let kernel = kernel(Arc::clone(&model), &mcp);
    let mut t = kernel
        .create_thread(ThreadOptions::new(settings(cwd.path().to_owned())))
        .unwrap();
    let server = mcp.servers_for(cwd.path()).remove(0);
    assert_eq!(server.wait_settled().await, ServerStatus::Ready);
    let first_pid = server.pid().unwrap();
    t.handle.submit(Op::user_text("go")).await.unwrap();
    // Progress streams to clients while the call runs.
    let progress = until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::ToolOutputDelta { .. })
    })
    .await;
    let EventMsg::ToolOutputDelta { delta, .. } = &progress.msg else {
        unreachable!()
    };
    assert!(delta.starts_with("progress 1/6000"), "{delta}");
    let mut updates = mcp.subscribe();
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(first_pid as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let end = until(&mut t.events, |e| {
        matches!(e.msg, EventMsg::ToolCallEnd { .. })
    })
    .await;
    let EventMsg::ToolCallEnd {
        outcome: ToolOutcome::Failed { message },
        ..
    } = &end.msg
    else {
        panic!("{end:?}");
    };
    assert_eq!(
        message,
        "tool call error: MCP server 'everything' closed the connection during the call"
    );
    // It is restarted with a new process; the next call (held until then) goes through.
    let mut seen = Vec::new();
    while seen.last() != Some(&ServerStatus::Ready) {
        seen.push(updates.recv().await.unwrap().status);
    }
    assert_eq!(
        seen,
        vec![
            ServerStatus::Failed {
                error: "the server closed the connection (it exited?) (restart 1 of 3 in 250ms)"
                    .into()
            },
            ServerStatus::Starting,
            ServerStatus::Ready
        ]
    );
    server
        .wait_tools(|names| names.iter().any(|n| n == "echo"))
        .await;
    let second_pid = server.pid().unwrap();
    assert_ne!(first_pid, second_pid);
    let end = until(&mut t.events, is_turn_end).await;
    assert!(matches!(end.msg, EventMsg::TurnCompleted { .. }), "{end:?}");
    // The next turn's step is offered the restarted server's tools.
    t.handle.submit(Op::user_text("again")).await.unwrap();
    let calls = calls_of_turn(&mut t.events).await;
    assert_eq!(
        calls.last().unwrap().1,
        ToolOutcome::Returned {
            text: "Echo: back".into(),
            structured: None,
            content: Vec::new(),
        }
    );
    mcp.shutdown().await;
    assert!(!alive(second_pid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the MCP SDK and mcp-server-time into a venv with it)"
)]
async fn a_changed_tool_list_is_offered_at_the_next_step_and_errors_reach_the_model() {
    let python = python();
    let config = format!(
        "[mcp_servers.scripted]\ncommand = {}\nargs = [{}]\n",
        toml_string(&python.to_string_lossy()),
        toml_string(&scripted_server().to_string_lossy())
    );
    let mcp = mcp(&config);
    let cwd = tempfile::tempdir().unwrap();
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call("mcp__scripted__add_tool", json!({})),
        ScriptedReply::tool_call("mcp__scripted__added", json!({})),
        ScriptedReply::tool_call("mcp__scripted__fail", json!({ "reason": "no luck" })),
        ScriptedReply::text("done"),
    ]);
    let held = model.hold_reply(1);
    let kernel = kernel(Arc::clone(&model), &mcp);
    let mut t = kernel
        .create_thread(ThreadOptions::new(settings(cwd.path().to_owned())))
        .unwrap();
    let server = mcp.servers_for(cwd.path()).remove(0);
    assert_eq!(server.wait_settled().await, ServerStatus::Ready);
    t.handle.submit(Op::user_text("go")).await.unwrap();
    model.wait_for_requests(2).await;
    // The second step froze before the list was read again, or after: either way, the
    // step after the notification's listing offers the new tool.
    server
        .wait_tools(|names| names.iter().any(|n| n == "added"))
        .await;
    held.open();
    let calls = calls_of_turn(&mut t.events).await;
    let requests = model.requests();
    assert!(!offered(&requests[0]).contains(&"mcp__scripted__added".to_owned()));
    assert!(offered(&requests[2]).contains(&"mcp__scripted__added".to_owned()));
    let outcomes: Vec<ToolOutcome> = calls.into_iter().map(|(_, o)| o).collect();
    // The Python SDK returns a function's result as structured content too.
    assert_eq!(
        outcomes[0],
        ToolOutcome::Returned {
            text: "added a tool".into(),
            structured: Some(json!({ "result": "added a tool" })),
            content: Vec::new(),
        }
    );
    assert_eq!(
        outcomes.last().unwrap(),
        &ToolOutcome::Failed {
            message: "Error executing tool fail: no luck".into()
        }
    );
    mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the MCP SDK and mcp-server-time into a venv with it)"
)]
async fn a_pypi_server_answers_through_the_kernel() {
    let python = python();
    let config = format!(
        "[mcp_servers.time]\ncommand = {}\nargs = [\"-m\", \"mcp_server_time\", \"--local-timezone=UTC\"]\n",
        toml_string(&python.to_string_lossy())
    );
    let mcp = mcp(&config);
    let cwd = tempfile::tempdir().unwrap();
    let model = ScriptedModel::replies(vec![
        ScriptedReply::tool_call(
            "mcp__time__convert_time",
            json!({ "source_timezone": "UTC", "time": "12:00", "target_timezone": "UTC" }),
        ),
        ScriptedReply::text("done"),
    ]);
    let kernel = kernel(Arc::clone(&model), &mcp);
    // Two threads in one directory share one server process.
    let mut t = kernel
        .create_thread(ThreadOptions::new(settings(cwd.path().to_owned())))
        .unwrap();
    let _other = kernel
        .create_thread(ThreadOptions::new(settings(cwd.path().to_owned())))
        .unwrap();
    assert_eq!(mcp.running().len(), 1);
    let server = mcp.servers_for(cwd.path()).remove(0);
    assert_eq!(server.wait_settled().await, ServerStatus::Ready);
    t.handle.submit(Op::user_text("go")).await.unwrap();
    let calls = calls_of_turn(&mut t.events).await;
    let ToolOutcome::Returned { text, .. } = &calls[0].1 else {
        panic!("{calls:?}");
    };
    let value: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(value["source"]["timezone"], "UTC");
    assert_eq!(value["time_difference"], "+0.0h");
    mcp.shutdown().await;
}
