//! Hostile MCP servers against the real `rein` binary (issue 23, items 7, 9, 15, 16): the
//! servers are tests/fixtures/mcp/hostile_server.py (no SDK), started by rein as any
//! configured server. What rein holds to: bounded memory whatever a server lists (the rein
//! process's peak RSS read from /proc), every request to a server timed, an oversized line
//! reported as what it is, injective tool names, no custom header sent to another origin,
//! no server process outliving rein (even after kill -9), elicitations that follow the
//! approval policy and are rate-limited, a one-shot run that waits for its servers, and
//! tools past the budget offered through `tool_search`.
#![allow(clippy::unwrap_used)]

#[path = "support/processes.rs"]
mod processes;
#[path = "support/app_server.rs"]
mod support;

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};

fn hostile_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mcp/hostile_server.py")
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
        &server_config("relist", &["relist"], "startup_timeout_sec = 1"),
    );
    let cwd = tempfile::tempdir().unwrap();
    let (mut server, settled) = settled_app_server(home.path(), cwd.path());
    assert_eq!(settled["status"], "ready", "{settled}");
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
        error.starts_with("tools/list got no answer within 1s (startup_timeout_sec)"),
        "{error}"
    );
    server.finish();
}
