//! Task graphs through the real binary: a planner (the root, strategy `planner`) records a
//! graph with `plan_tasks`, and the kernel runs it on sub-agents of their roles, each role
//! on its own `rein mock-model` (workers answer by the task their input names, reviewers
//! in order). What happened is read back from the root's rollout (`task_graph_changed`).

use rein_test_support::exec as support;
use rein_test_support::replay::rollout_of;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{json_lines, Home, MockModel};

pub(crate) fn call(call_id: &str, name: &str, arguments: Value) -> Value {
    json!({ "tool_calls": [{ "call_id": call_id, "name": name, "arguments": arguments }] })
}

/// Planner on `planner`, workers on `workers`, reviewers on `reviewers`.
pub(crate) fn graph_home(
    planner: &MockModel,
    workers: &MockModel,
    reviewers: &MockModel,
    extra: &str,
) -> Home {
    let home = Home::new(planner, "responses");
    write_config(&home, planner, workers, reviewers, extra);
    home
}

fn write_config(
    home: &Home,
    planner: &MockModel,
    workers: &MockModel,
    reviewers: &MockModel,
    extra: &str,
) {
    let provider = |name: &str, url: &str| {
        format!(
            "[model_providers.{name}]\nbase_url = \"{url}\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n\n"
        )
    };
    let config = format!(
        "model = \"mock\"\nmodel_provider = \"mock\"\nprofile = \"graph\"\n\n\
         [profiles.graph]\nfallback_model = \"wmodel\"\nfallback_provider = \"mockw\"\n\
         multimodal_model = \"rmodel\"\nmultimodal_provider = \"mockr\"\n\n\
         [agents]\nstrategy = \"planner\"\nmax_review_rounds = 2\n{extra}\n\
         [agents.roles.worker]\nmodel = \"wmodel\"\n\n[agents.roles.reviewer]\nmodel = \"rmodel\"\n\n{}{}{}",
        provider("mock", &planner.base_url),
        provider("mockw", &workers.base_url),
        provider("mockr", &reviewers.base_url),
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
}

pub(crate) fn node(id: &str, deps: &[&str]) -> Value {
    json!({ "id": id, "title": id.to_uppercase(), "instructions": format!("Do {id}."),
            "acceptance": [format!("{id} is done")], "deps": deps })
}

/// A worker model that answers each task by its id (after `delay_ms`).
pub(crate) fn workers(answers: &[(&str, Value)]) -> MockModel {
    let asides: Vec<Value> = answers
        .iter()
        .map(|(id, reply)| json!({ "when_user_says": format!("Task `{id}`"), "reply": reply }))
        .collect();
    MockModel::start(json!({ "replies": [], "asides": asides }))
}

/// The `task_graph_changed` events of the root's rollout, with their timestamps.
fn graph_changes(home: &Home, root: &str) -> Vec<(u64, Value)> {
    let text = std::fs::read_to_string(rollout_of(home.path(), root)).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|l| l["payload"].clone())
        .filter(|e| e["msg"]["type"] == "task_graph_changed")
        .map(|e| {
            (
                e["timestamp_ms"].as_u64().unwrap(),
                e["msg"]["change"].clone(),
            )
        })
        .collect()
}

/// Each change as `started:ID`, `finished:ID:OUTCOME`, `planned`.
fn shape(change: &Value) -> String {
    match change["type"].as_str().unwrap() {
        "planned" => "planned".to_owned(),
        "node_started" => format!("started:{}", change["node_id"].as_str().unwrap()),
        "node_finished" => {
            let outcome = &change["outcome"];
            let what = match outcome["type"].as_str().unwrap() {
                "reviewed" if outcome["verdict"]["approved"] == true => "approved".to_owned(),
                "reviewed" => "rejected".to_owned(),
                "failed" => format!("failed:{}", outcome["kind"].as_str().unwrap()),
                other => other.to_owned(),
            };
            format!("finished:{}:{what}", change["node_id"].as_str().unwrap())
        }
        other => other.to_owned(),
    }
}

fn root_of(stdout: &[u8]) -> String {
    json_lines(stdout)[0]["thread_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn when(changes: &[(u64, Value)], what: &str) -> u64 {
    changes.iter().find(|(_, c)| shape(c) == what).unwrap().0
}

#[test]
fn the_kernel_runs_the_plan_in_dependency_order_with_a_review_round() {
    let mut review = json!({ "id": "r", "title": "Review C", "role": "reviewer", "reviews": "c" });
    review["deps"] = json!([]);
    let planner = MockModel::start(json!({ "replies": [
        call("call_plan", "plan_tasks", json!({ "nodes": [
            node("a", &[]), node("b", &[]), node("c", &["a", "b"]), review
        ] })),
        { "text": "All done." }
    ] }));
    let workers = workers(&[
        ("a", json!({ "text": "A done.", "delay_ms": 150 })),
        ("b", json!({ "text": "B done.", "delay_ms": 150 })),
        ("c", json!({ "text": "C done." })),
    ]);
    let reviewers = MockModel::start(json!({ "replies": [
        call("call_r1", "submit_review", json!({ "approved": false,
            "findings": [{ "severity": "major", "message": "C lacks tests" }] })),
        { "text": "Rejected." },
        call("call_r2", "submit_review", json!({ "approved": true, "findings": [] })),
        { "text": "Approved." }
    ] }));
    let home = graph_home(&planner, &workers, &reviewers, "");
    let out = home.exec_ok(&["--json", "Build A, B and C."]);
    let events = json_lines(&out.stdout);
    let last = &events[events.len() - 2]["item"];
    assert_eq!(last["text"], "All done.");
    let root = root_of(&out.stdout);
    let changes = graph_changes(&home, &root);
    let shapes: Vec<String> = changes.iter().map(|(_, c)| shape(c)).collect();
    // a and b start in one pass, before either ends; their order of ending is free.
    let mut first_two: Vec<String> = shapes[3..5].to_vec();
    first_two.sort();
    assert_eq!(
        (&shapes[..3], first_two, &shapes[5..]),
        (
            &["planned".to_owned(), "started:a".into(), "started:b".into()][..],
            vec![
                "finished:a:completed".to_owned(),
                "finished:b:completed".into()
            ],
            &[
                "started:c".to_owned(),
                "finished:c:completed".into(),
                "started:r".into(),
                "finished:r:rejected".into(),
                "started:c".into(),
                "finished:c:completed".into(),
                "started:r".into(),
                "finished:r:approved".into(),
            ][..]
        )
    );
    // The two independent workers overlapped; the third started after both ended.
    let (a_end, b_end) = (
        when(&changes, "finished:a:completed"),
        when(&changes, "finished:b:completed"),
    );
    assert!(when(&changes, "started:b") < a_end && when(&changes, "started:a") < b_end);
    assert!(when(&changes, "started:c") >= a_end.max(b_end));
    // c's inputs: its dependencies' facts, then (second attempt) the review's findings.
    let texts = support::user_texts(&workers.requests());
    assert!(texts.contains("`a` (A) completed: A done."), "{texts}");
    assert!(texts.contains("[Major] C lacks tests"), "{texts}");
    // `rein sessions show` ends with the final graph.
    let shown = support::rein_ok(home.path(), &["sessions", "show", &root]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.trim_end().ends_with(
            "task graph (completed):\n  a [completed] A\n  b [completed] B\n  \
             c [completed] C (after a, b)\n  r [completed] Review C (after c)"
        ),
        "{shown}"
    );
    // The planner got the settled graph as plan_tasks' answer.
    let answer = planner.requests()[1].to_string();
    assert!(answer.contains(r#"\"status\":\"completed\""#), "{answer}");
}

fn failing_plan(policy: &str) -> (MockModel, MockModel, MockModel) {
    let planner = MockModel::start(json!({ "replies": [
        call("call_plan", "plan_tasks", json!({ "failure_policy": policy, "nodes": [
            node("a", &[]), node("b", &[]), node("c", &["a", "b"])
        ] })),
        { "text": "Reported." }
    ] }));
    let workers = workers(&[
        (
            "a",
            json!({ "fault": { "type": "http_error", "status": 400 } }),
        ),
        ("b", json!({ "text": "B done." })),
        ("c", json!({ "text": "C done." })),
    ]);
    let reviewers = MockModel::start(json!({ "replies": [] }));
    (planner, workers, reviewers)
}

fn final_states(home: &Home, root: &str) -> Vec<String> {
    let mut shapes: Vec<String> = graph_changes(home, root)
        .iter()
        .map(|(_, c)| shape(c))
        .filter(|s| s.starts_with("finished"))
        .collect();
    shapes.sort();
    shapes
}

#[test]
fn a_failed_worker_blocks_its_dependents_or_lets_them_run_as_orphans() {
    let (planner, workers, reviewers) = failing_plan("block_dependents");
    let home = graph_home(&planner, &workers, &reviewers, "");
    let out = home.exec_ok(&["--json", "Build."]);
    let root = root_of(&out.stdout);
    assert_eq!(
        final_states(&home, &root),
        ["finished:a:failed:turn_failed", "finished:b:completed"]
    );
    let answer = planner.requests()[1].to_string();
    assert!(
        answer
            .contains(r#"\"id\":\"c\",\"title\":\"C\",\"role\":\"worker\",\"state\":\"blocked\""#),
        "{answer}"
    );

    let (planner, workers, reviewers) = failing_plan("allow_orphans");
    let home = graph_home(&planner, &workers, &reviewers, "");
    let out = home.exec_ok(&["--json", "Build."]);
    let root = root_of(&out.stdout);
    assert_eq!(
        final_states(&home, &root),
        [
            "finished:a:failed:turn_failed",
            "finished:b:completed",
            "finished:c:completed"
        ]
    );
    let texts = support::user_texts(&workers.requests());
    assert!(texts.contains("`a` (A) FAILED (TurnFailed)"), "{texts}");
}

#[test]
fn a_cyclic_plan_is_refused_with_an_error_the_model_reads() {
    let planner = MockModel::start(json!({ "replies": [
        call("call_plan", "plan_tasks", json!({ "nodes": [node("a", &["b"]), node("b", &["a"])] })),
        { "text": "I will fix the plan." }
    ] }));
    let workers = workers(&[]);
    let reviewers = MockModel::start(json!({ "replies": [] }));
    let home = graph_home(&planner, &workers, &reviewers, "");
    let out = home.exec_ok(&["--json", "Plan badly."]);
    let root = root_of(&out.stdout);
    let answer = planner.requests()[1].to_string();
    assert!(
        answer.contains("the dependencies form a cycle: a -> b -> a; remove one of these edges"),
        "{answer}"
    );
    assert_eq!(graph_changes(&home, &root), Vec::<(u64, Value)>::new());
    assert!(workers.requests().is_empty());
}

#[test]
fn exec_strategy_planner_prints_the_graph_as_it_progresses() {
    let planner = MockModel::start(json!({ "replies": [
        call("call_plan", "plan_tasks", json!({ "nodes": [node("a", &[]), node("b", &["a"])] })),
        { "text": "Both done." }
    ] }));
    let workers = workers(&[
        ("a", json!({ "text": "A done." })),
        ("b", json!({ "text": "B done." })),
    ]);
    let reviewers = MockModel::start(json!({ "replies": [] }));
    let home = graph_home(&planner, &workers, &reviewers, "");
    // The strategy comes from the flag alone.
    let config = home.path().join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("strategy = \"planner\"\n", "")).unwrap();
    let out = home.exec_ok(&["--strategy", "planner", "Build A then B."]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Both done.");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lists: Vec<&str> = stderr
        .split("task graph (")
        .skip(1)
        .map(|l| l.split("\n\n").next().unwrap().trim_end())
        .collect();
    assert_eq!(
        lists.first().copied(),
        Some("running):\n  a [ready] A\n  b [pending] B (after a)"),
        "{stderr}"
    );
    assert!(
        lists
            .iter()
            .any(|l| l.starts_with("completed):\n  a [completed] A\n  b [completed] B (after a)")),
        "{stderr}"
    );
}

/// The thread ids of the `node_started` changes, by node.
fn attempts(changes: &[(u64, Value)], node: &str) -> Vec<String> {
    changes
        .iter()
        .filter(|(_, c)| c["type"] == "node_started" && c["node_id"] == node)
        .map(|(_, c)| c["thread_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn an_interrupt_of_the_root_cancels_every_running_node() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let planner = MockModel::start(json!({ "replies": [
        call("call_plan", "plan_tasks", json!({ "nodes": [node("a", &[]), node("b", &[]), node("c", &["a", "b"])] })),
        { "text": "unreachable" }
    ] }));
    let hang = json!({ "text": "working", "deltas": 2, "fault": { "type": "hang" } });
    let workers = workers(&[("a", hang.clone()), ("b", hang)]);
    let reviewers = MockModel::start(json!({ "replies": [] }));
    let home = graph_home(&planner, &workers, &reviewers, "");
    let mut child = home
        .exec(&["Build."])
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    // Wait until the printed graph has both independent nodes running.
    let mut seen = String::new();
    let mut line = String::new();
    while !(seen.contains("  a [running]") && seen.contains("  b [running]")) {
        line.clear();
        assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "{seen}");
        if line.starts_with("task graph") {
            seen.clear();
        }
        seen.push_str(&line);
    }
    // Both have sent their model request (the hang is mid-stream), then Ctrl-C.
    while workers.logged_requests() < 2 {
        std::thread::yield_now();
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let code = child.wait().unwrap().code();
    assert_eq!(code, Some(130), "{rest}");
    let stdout = {
        let mut s = Vec::new();
        std::io::Read::read_to_end(&mut child.stdout.take().unwrap(), &mut s).unwrap();
        s
    };
    let _ = stdout;
    let root = graph_root(&home);
    let changes = graph_changes(&home, &root);
    // No node finished on its own: the root's `turn_aborted` cancels the running ones (the
    // fold), and c never started.
    assert_eq!(final_states(&home, &root), Vec::<String>::new(), "{rest}");
    assert_eq!(
        last_turn_event(&home, &root).as_deref(),
        Some("turn_aborted")
    );
    assert!(
        rest.contains("  a [cancelled] A\n  b [cancelled] B\n  c [blocked] C"),
        "{rest}"
    );
    // Each node's thread ended its turn aborted: no turn is left running.
    for node in ["a", "b"] {
        let thread = &attempts(&changes, node)[0];
        assert_eq!(
            last_turn_event(&home, thread).as_deref(),
            Some("turn_aborted"),
            "{node}"
        );
    }
    assert_eq!(attempts(&changes, "c"), Vec::<String>::new());
}

/// The thread whose rollout holds the graph.
fn graph_root(home: &Home) -> String {
    rein_test_support::replay::rollout_files(home.path())
        .into_iter()
        .find_map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            text.contains("task_graph_changed").then(|| {
                let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
                first["payload"]["thread_id"].as_str().unwrap().to_owned()
            })
        })
        .unwrap()
}

/// Run `rein exec` on `home` until its printed graph shows `a` and `b` running and both
/// have sent their model request to `workers`; returns the running child.
fn exec_until_both_run(home: &Home, workers: &MockModel) -> std::process::Child {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = home
        .exec(&["Build."])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    while !(seen.contains("  a [running]") && seen.contains("  b [running]")) {
        line.clear();
        assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "{seen}");
        if line.starts_with("task graph") {
            seen.clear();
        }
        seen.push_str(&line);
    }
    while workers.logged_requests() < 2 {
        std::thread::yield_now();
    }
    child
}

#[test]
fn after_kill_9_the_resumed_root_reruns_the_cut_off_nodes_with_what_they_did() {
    let planner = MockModel::start(json!({ "replies": [
        call("call_plan", "plan_tasks", json!({ "nodes": [node("a", &[]), node("b", &[]), node("c", &["a", "b"])] })),
        { "text": "unreachable" }
    ] }));
    let hang = json!({ "text": "working", "deltas": 2, "fault": { "type": "hang" } });
    let workers1 = workers(&[("a", hang.clone()), ("b", hang)]);
    let reviewers = MockModel::start(json!({ "replies": [] }));
    let home = graph_home(&planner, &workers1, &reviewers, "");
    let mut child = exec_until_both_run(&home, &workers1);
    child.kill().unwrap();
    child.wait().unwrap();
    let root = graph_root(&home);

    // A new run on the same home, with models that answer at once.
    let planner2 = MockModel::start(json!({ "replies": [
        call("call_resume", "plan_tasks", json!({})),
        { "text": "Resumed." }
    ] }));
    let workers2 = workers(&[
        ("a", json!({ "text": "A done." })),
        ("b", json!({ "text": "B done." })),
        ("c", json!({ "text": "C done." })),
    ]);
    write_config(&home, &planner2, &workers2, &reviewers, "");
    let out = home.exec_ok(&["resume", &root, "Go on."]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Resumed.");
    let changes = graph_changes(&home, &root);
    for node in ["a", "b"] {
        let threads = attempts(&changes, node);
        assert_eq!(threads.len(), 2, "{node}: {changes:?}");
        assert_ne!(threads[0], threads[1]);
    }
    assert_eq!(
        final_states(&home, &root),
        [
            "finished:a:completed",
            "finished:b:completed",
            "finished:c:completed"
        ]
    );
    let texts = support::user_texts(&workers2.requests());
    assert_eq!(texts.matches("cut off by a restart").count(), 2, "{texts}");
    assert!(texts.contains("no tool calls were recorded"), "{texts}");
}

/// The type of the last `turn_*` event of `thread`'s rollout.
fn last_turn_event(home: &Home, thread: &str) -> Option<String> {
    let text = std::fs::read_to_string(rollout_of(home.path(), thread)).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|l| l["payload"]["msg"]["type"].as_str().map(str::to_owned))
        .rfind(|t| t.starts_with("turn_"))
}

#[test]
fn spawn_agent_with_an_unknown_role_is_a_tool_error_naming_the_roles() {
    let planner = MockModel::start(json!({ "replies": [
        call("call_spawn", "spawn_agent", json!({ "message": "Do it.", "role": "wizard" })),
        { "text": "No wizards." }
    ] }));
    let workers = workers(&[]);
    let reviewers = MockModel::start(json!({ "replies": [] }));
    let home = graph_home(&planner, &workers, &reviewers, "");
    let config = home.path().join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("strategy = \"planner\"\n", "")).unwrap();
    let out = home.exec_ok(&["Spawn a wizard."]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "No wizards.");
    let answer = planner.requests()[1].to_string();
    assert!(
        answer.contains(
            "unknown role `wizard`; known roles: default, explorer, planner, reviewer, worker"
        ),
        "{answer}"
    );
    assert!(workers.requests().is_empty());
}
