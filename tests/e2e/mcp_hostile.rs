//! Hostile MCP servers against the real `rein` binary (issue 23, items 7, 9, 15, 16): the
//! servers are tests/fixtures/mcp/hostile_server.py (no SDK), started by rein as any
//! configured server. What rein holds to: bounded memory whatever a server lists (the rein
//! process's peak RSS read from /proc), every request to a server timed, an oversized line
//! reported as what it is, injective tool names, no custom header sent to another origin,
//! elicitations that follow the
//! approval policy and are rate-limited, a one-shot run that waits for its servers, and
//! tools past the budget offered through `tool_search`. Server lifetimes are checked as root
//! and again as `nobody`.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use rein_test_support::processes;
use rein_test_support::unprivileged;
use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};

fn hostile_server() -> PathBuf {
    unprivileged::fixtures().join("mcp/hostile_server.py")
}

/// `[mcp_servers.NAME]` running the hostile server in `mode`, plus `extra` keys.
fn server_config(name: &str, args: &[&str], extra: &str) -> String {
    let mut argv = vec![hostile_server().to_string_lossy().into_owned()];
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    format!(
        "\n[mcp_servers.{name}]\ncommand = \"python3\"\nargs = {}\n{extra}\n",
        serde_json::to_string(&argv).unwrap()
    )
}

fn add_config(home: &Path, text: &str) {
    let path = home.join("config.toml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    config.push_str(text);
    std::fs::write(path, config).unwrap();
}

/// The peak resident set of process `pid` so far, in KiB (`VmHWM` in /proc).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// An app-server with one hostile server configured and a thread started in a fresh
/// directory; returns once the server's startup settled (its last status notification).
fn settled_app_server(home: &Path, cwd: &Path) -> (AppServer, Value) {
    let mut server = AppServer::start(home, &[]);
    server.initialize();
    server.request(
        "thread/start",
        json!({ "cwd": cwd, "sandbox": "read-only" }),
    );
    let seen = server.until(|m| {
        method(m) == "mcpServer/startupStatus/updated" && m["params"]["status"] != "starting"
    });
    let settled = seen.last().unwrap()["params"].clone();
    (server, settled)
}

fn server_status(server: &mut AppServer, name: &str) -> Value {
    let list = server.call("mcpServerStatus/list", json!({}));
    list["result"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .cloned()
        .unwrap()
}

/// The most the rein process may hold while a hostile server lists its tools. An idle
/// app-server holds about 25 MiB; today's code held 1.3 GB for endless pages and 688 MB for
/// one 10 MB enum.
const RSS_BOUND_KIB: u64 = 200 * 1024;

#[test]
#[cfg_attr(not(rein_has_python), ignore = "needs python3")]
fn endless_tools_list_pages_stop_at_the_page_limit_and_memory_stays_bounded() {
    let model = MockModel::start(json!({"replies": [{"text": "Done."}]}));
    let home = home_for(&model);
    add_config(
        home.path(),
        &server_config("pages", &["pages"], "startup_timeout_sec = 60"),
    );
    let cwd = tempfile::tempdir().unwrap();
    let (mut server, settled) = settled_app_server(home.path(), cwd.path());
    let peak = peak_rss_kib(server.pid());
    eprintln!("peak RSS of the app-server: {peak} KiB");
    assert_eq!(
        settled,
        json!({"name": "pages", "status": "ready", "error": null, "threadId": null})
    );
    let status = server_status(&mut server, "pages");
    let tools = status["tools"].as_object().unwrap();
    // The per-server tool limit is reached before the page limit: 200 tools a page.
    assert_eq!(tools.len(), 500, "{}", tools.len());
    let error = status["toolsError"].as_str().unwrap();
    assert!(
        error.contains("listed more than 500 tools") && error.contains("descriptions cut"),
        "{error}"
    );
    assert!(peak < RSS_BOUND_KIB, "peak RSS {peak} KiB");
    server.finish();
}

#[test]
#[cfg_attr(not(rein_has_python), ignore = "needs python3")]
fn endless_small_pages_stop_at_the_page_limit() {
    let model = MockModel::start(json!({"replies": [{"text": "Done."}]}));
    let home = home_for(&model);
    add_config(home.path(), &server_config("pages", &["pages", "1"], ""));
    let cwd = tempfile::tempdir().unwrap();
    let (mut server, settled) = settled_app_server(home.path(), cwd.path());
    assert_eq!(settled["status"], "ready", "{settled}");
    let status = server_status(&mut server, "pages");
    assert_eq!(status["tools"].as_object().unwrap().len(), 20);
    assert_eq!(
        status["toolsError"],
        "tools/list has more than 20 pages; the rest were not listed; \
         20 tool descriptions cut to 4096 bytes"
    );
    server.finish();
}

#[test]
#[cfg_attr(not(rein_has_python), ignore = "needs python3")]
fn a_ten_megabyte_enum_schema_is_refused_and_memory_stays_bounded() {
    let model = MockModel::start(json!({"replies": [{"text": "Done."}]}));
    let home = home_for(&model);
    add_config(
        home.path(),
        &server_config("enum", &["enum"], "startup_timeout_sec = 60"),
    );
    let cwd = tempfile::tempdir().unwrap();
    let (server, settled) = settled_app_server(home.path(), cwd.path());
    let peak = peak_rss_kib(server.pid());
    eprintln!("peak RSS of the app-server: {peak} KiB");
    assert_eq!(settled["status"], "failed", "{settled}");
    let error = settled["error"].as_str().unwrap();
    assert!(
        error.contains("sent a message of more than 4194304 bytes"),
        "{error}"
    );
    assert!(peak < RSS_BOUND_KIB, "peak RSS {peak} KiB");
    server.finish();
}

#[test]
#[cfg_attr(not(rein_has_python), ignore = "needs python3")]
fn a_relisting_that_never_answers_times_out() {
    let model = MockModel::start(json!({"replies": [{"text": "Done."}]}));
    let home = home_for(&model);
    add_config(
        home.path(),
        &server_config("relist", &["relist"], "startup_timeout_sec = 3"),
    );
    let cwd = tempfile::tempdir().unwrap();
    let (mut server, settled) = settled_app_server(home.path(), cwd.path());
    assert_eq!(settled["status"], "ready", "{settled}");
    // Three seconds, not one: the first listing must answer within it too, and python starts
    // slowly on a loaded machine.
    // The re-listing the server asked for gets no answer: after startup_timeout_sec the
    // connection is given up and the server restarted, saying why.
    let seen = server.until(|m| {
        method(m) == "mcpServer/startupStatus/updated" && m["params"]["status"] == "failed"
    });
    let error = seen.last().unwrap()["params"]["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        error.starts_with("tools/list got no answer within 3s (startup_timeout_sec)"),
        "{error}"
    );
    server.finish();
}

/// The text of every request the model was sent, as one string to search.
fn requests_text(model: &MockModel) -> String {
    serde_json::to_string(&model.requests()).unwrap()
}

/// `rein exec --json` in a fresh directory; returns the run's output.
fn exec(home: &Path, prompt: &str) -> std::process::Output {
    let cwd = tempfile::tempdir().unwrap();
    support::rein_in(
        home,
        &["exec", "--json", "-C", cwd.path().to_str().unwrap(), prompt],
    )
    .output()
    .unwrap()
}

#[test]
#[cfg_attr(not(rein_has_python), ignore = "needs python3")]
fn exec_waits_for_a_plain_server_so_its_only_step_offers_the_tools() {
    let model = MockModel::start(json!({"replies": [
        {"tool_calls": [{"call_id": "c1", "name": "mcp__weather__tool_001", "arguments": {"city": "lima"}}]},
        {"text": "Done."}
    ]}));
    let home = home_for(&model);
    add_config(home.path(), &server_config("weather", &["many", "3"], ""));
    let out = exec(home.path(), "Use the weather tool.");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("waiting for MCP servers to start: weather"),
        "{stderr}"
    );
    let requests = model.requests();
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| n.starts_with("mcp__"))
        .collect();
    assert_eq!(
        tools,
        [
            "mcp__weather__tool_000",
            "mcp__weather__tool_001",
            "mcp__weather__tool_002"
        ]
    );
    assert!(requests_text(&model).contains("ran tool_001"));
}

#[test]
#[cfg_attr(not(rein_has_python), ignore = "needs python3")]
fn an_oversized_answer_is_reported_as_such_not_as_a_timeout() {
    let model = MockModel::start(json!({"replies": [
        {"tool_calls": [{"call_id": "c1", "name": "mcp__big__big", "arguments": {}}]},
        {"text": "Done."}
    ]}));
    let home = home_for(&model);
    add_config(
        home.path(),
        &server_config(
            "big",
            &["bigline"],
            "required = true\ntool_timeout_sec = 120",
        ),
    );
    let started = std::time::Instant::now();
    let out = exec(home.path(), "Call big.");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Well before the tool timeout: the call failed as soon as the line passed the limit.
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    assert!(
        requests_text(&model).contains(
            "tool call error: MCP server 'big' sent a message of more than 4194304 bytes (the limit); rein closed the connection"
        ),
        "{}",
        requests_text(&model)
    );
}

#[test]
#[cfg_attr(not(rein_has_python), ignore = "needs python3")]
fn server_names_that_could_share_tool_names_are_refused() {
    let model = MockModel::start(json!({"replies": [{"text": "Done."}]}));
    for (servers, error) in [
        (
            vec!["a", "a__b"],
            "[mcp_servers.a__b]: invalid server name: it may not start or end with '_' or '-', nor hold two of them in a row",
        ),
        (
            vec!["a-b", "a_b"],
            "[mcp_servers.a_b]: server names 'a-b' and 'a_b' would both name their tools mcp__a_b__…: rename one",
        ),
    ] {
        let home = home_for(&model);
        for name in servers {
            add_config(home.path(), &server_config(name, &["many", "1"], ""));
        }
        let out = exec(home.path(), "hi");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(stderr.contains(error), "{stderr}");
    }
}

/// A thread under `policy` whose model calls the hostile server's `ask` (200 elicitations);
/// returns the elicitation requests the client saw (each accepted) and the tool's result.
fn elicitations_under(policy: &str) -> (usize, Value) {
    let model = MockModel::start(json!({"replies": [
        {"tool_calls": [{"call_id": "c1", "name": "mcp__el__ask", "arguments": {}}]},
        {"text": "Done."}
    ]}));
    let home = home_for(&model);
    add_config(
        home.path(),
        &server_config("el", &["elicit", "200"], "required = true"),
    );
    let cwd = tempfile::tempdir().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    // Not `start_thread`: the required server's status notifications may come before
    // `thread/started` (both are sent once the server is ready).
    let started = server.call(
        "thread/start",
        json!({ "cwd": cwd.path(), "sandbox": "read-only", "approvalPolicy": policy }),
    );
    let thread = started["result"]["thread"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    server.until(|m| method(m) == "thread/started");
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "ask" }] }),
    );
    let mut asked = 0;
    let mut result = Value::Null;
    loop {
        let m = server.recv();
        if method(&m) == "mcpServer/elicitation/request" {
            asked += 1;
            server.send(
                &json!({"id": m["id"], "result": {"action": "accept", "content": {"ok": true}}}),
            );
        } else if method(&m) == "item/completed" && m["params"]["item"]["type"] == "mcpToolCall" {
            result = m["params"]["item"]["result"].clone();
        } else if method(&m) == "turn/completed" {
            break;
        }
    }
    server.finish();
    (asked, result)
}

#[test]
#[cfg_attr(not(rein_has_python), ignore = "needs python3")]
fn elicitations_follow_the_approval_policy_and_are_rate_limited() {
    let text = |r: &Value| r["content"][0]["text"].as_str().unwrap().to_owned();
    let (asked, result) = elicitations_under("never");
    assert_eq!((asked, text(&result)), (0, "decline=200".to_owned()));
    let (asked, result) = elicitations_under("on-request");
    assert_eq!(
        (asked, text(&result)),
        (5, "accept=5 decline=195".to_owned())
    );
}

#[test]
#[cfg_attr(not(rein_has_python), ignore = "needs python3")]
fn custom_headers_never_follow_a_redirect_to_another_origin() {
    use std::io::BufRead;
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("seen.jsonl");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mcp/redirect_server.py");
    let mut redirector = std::process::Command::new("python3")
        .arg(script)
        .arg(&log)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(redirector.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().strip_prefix("listening ").unwrap().to_owned();
    let model = MockModel::start(json!({"replies": [{"text": "Done."}]}));
    let home = home_for(&model);
    add_config(
        home.path(),
        &format!(
            "\n[mcp_servers.moved]\nurl = \"http://127.0.0.1:{port}/mcp\"\nrequired = true\n\
             http_headers = {{ \"X-Team\" = \"secret-team\" }}\n\
             env_http_headers = {{ \"X-Env\" = \"REIN_REDIRECT_TEST_ENV\" }}\n"
        ),
    );
    let cwd = tempfile::tempdir().unwrap();
    let out = support::rein_in(
        home.path(),
        &["exec", "-C", cwd.path().to_str().unwrap(), "hi"],
    )
    .env("REIN_REDIRECT_TEST_ENV", "secret-env")
    .output()
    .unwrap();
    let _ = redirector.kill();
    let _ = redirector.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("the server redirects to another origin"),
        "{stderr}"
    );
    // The other origin never saw a request, so none of the headers.
    assert_eq!(std::fs::read_to_string(&log).unwrap_or_default(), "");
}

#[test]
#[cfg_attr(not(rein_has_python), ignore = "needs python3")]
fn tools_past_the_budget_are_offered_through_tool_search() {
    let model = MockModel::start(json!({"replies": [
        {"tool_calls": [{"call_id": "s1", "name": "tool_search", "arguments": {"query": "lima weather", "limit": 3}}]},
        {"tool_calls": [{"call_id": "c1", "name": "mcp__w__tool_002", "arguments": {"city": "lima"}}]},
        {"text": "Done."}
    ]}));
    let home = home_for(&model);
    add_config(home.path(), &server_config("w", &["many", "200"], ""));
    let out = exec(home.path(), "What is the weather in Lima?");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = model.requests();
    let names = |r: &Value| -> Vec<String> {
        r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .filter(|n| n.starts_with("mcp__") || *n == "tool_search")
            .map(str::to_owned)
            .collect()
    };
    // 200 tools are past the budget (40): the first request offers the search, not them.
    assert_eq!(names(&requests[0]), ["tool_search"]);
    // The search answered the best matches and offers them from the next request on.
    let found = ["mcp__w__tool_002", "mcp__w__tool_010", "mcp__w__tool_018"];
    assert_eq!(
        names(&requests[1]),
        std::iter::once("tool_search")
            .chain(found)
            .map(str::to_owned)
            .collect::<Vec<_>>()
    );
    let output = requests[1]["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output" && i["call_id"] == "s1")
        .map(|i| i["output"].as_str().unwrap().to_owned())
        .unwrap();
    let listed: Value = serde_json::from_str(&output).unwrap();
    let listed: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, found);
    // A found tool is called as any other.
    assert!(requests_text(&model).contains("ran tool_002"));
}

/// The pid a `setsid`-mode server wrote to `dir/name` (written before it answers anything).
fn written_pid(dir: &Path, name: &str) -> i32 {
    std::fs::read_to_string(dir.join(name))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// An app-server whose one server starts a `setsid sleep` grandchild; returns once the
/// server is ready, with pidfds of the server and of its grandchild (opened while both run).
fn app_server_with_a_setsid_grandchild(
    home: &Path,
    pids: &Path,
    cwd: &Path,
) -> (AppServer, Vec<std::os::fd::OwnedFd>) {
    let dir = pids.to_string_lossy().into_owned();
    add_config(home, &server_config("hostile", &["setsid", &dir], ""));
    let (server, settled) = settled_app_server(home, cwd);
    assert_eq!(settled["status"], "ready", "{settled}");
    let (server_pid, grandchild) = (
        written_pid(pids, "server.pid"),
        written_pid(pids, "grandchild.pid"),
    );
    let fds = processes::pidfds(&[server_pid, grandchild]);
    assert_eq!(fds.len(), 2, "the server or its grandchild is not running");
    (server, fds)
}

/// Both are gone within the patience; survivors of a failing run are killed.
fn assert_exited(fds: &[std::os::fd::OwnedFd], when: &str) {
    let gone = processes::exited_within(fds, std::time::Duration::from_secs(15));
    if !gone {
        processes::kill_fds(fds);
    }
    assert!(gone, "the server or its setsid grandchild survived {when}");
}

/// A server's `setsid` grandchild and the server itself are gone once `end` ended rein.
fn setsid_grandchild_dies_when(end: impl FnOnce(AppServer), when: &str) {
    let model = MockModel::start(json!({"replies": [{"text": "Done."}]}));
    let home = home_for(&model);
    let (pids, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (server, fds) = app_server_with_a_setsid_grandchild(home.path(), pids.path(), cwd.path());
    end(server);
    assert_exited(&fds, when);
}

#[test]
fn a_servers_setsid_grandchild_dies_with_a_killed_rein() {
    setsid_grandchild_dies_when(AppServer::kill, "a kill -9 of rein");
}

#[test]
fn a_servers_setsid_grandchild_dies_when_rein_shuts_down() {
    setsid_grandchild_dies_when(
        |server| assert!(server.finish().success()),
        "rein's clean shutdown",
    );
}

/// When run as root, run the lifetime tests again as `nobody`: a user's rein cannot signal
/// what is not its own, and its supervisor is a user's subreaper. (The limits on what a
/// server sends, the names, the headers, elicitations and the tool budget are judged on
/// bytes and configuration, the same for every user.)
#[test]
#[cfg_attr(
    not(rein_is_root),
    ignore = "run as root, it reruns the lifetime tests as nobody (run as a user, the other tests are that run)"
)]
fn server_lifetimes_hold_as_an_unprivileged_user() {
    if !unprivileged::is_root() {
        eprintln!("running as a user already: the other tests are the unprivileged run");
        return;
    }
    let status = unprivileged::rerun_as_nobody(module_path!(), "as_an_unprivileged_user");
    assert!(
        status.success(),
        "the lifetime tests as nobody failed: {status}"
    );
}

/// Run only by the test above, as `nobody`.
#[test]
#[ignore = "run as an unprivileged user by server_lifetimes_hold_as_an_unprivileged_user"]
fn as_an_unprivileged_user() {
    assert!(!unprivileged::is_root());
    a_servers_setsid_grandchild_dies_with_a_killed_rein();
    a_servers_setsid_grandchild_dies_when_rein_shuts_down();
}
