//! 5,000 skills through `rein exec`: the skills list the model gets stays within 2 % of
//! its context window, the rest are announced, and `search_skills` finds skills the list
//! left out (`rein-context`'s `five_thousand_skills_fit_the_budget_and_the_rest_are_in_search_reach`
//! checks that every left-out skill is indexed and finds every 25th by its own word).
//! A real `rein mock-model` records the request bodies.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, json_lines, rein_in, MockModel};

/// `skill-0000` … `skill-4999` over three roots of one project (each under Codex's 2,000
/// folders a root).
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let roots = [".agents/skills", ".claude/skills", "sub/.agents/skills"];
    for i in 0..5000 {
        let folder = dir.path().join(roots[i % 3]).join(format!("skill-{i:04}"));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("SKILL.md"),
            format!("---\nname: skill-{i:04}\ndescription: Handles job n{i:04}.\n---\nSteps for n{i:04}.\n"),
        )
        .unwrap();
    }
    dir
}

fn search(call: &str, query: &str) -> Value {
    json!({"call_id": call, "name": "search_skills", "arguments": {"query": query}})
}

#[test]
fn five_thousand_skills_keep_the_list_in_budget_and_search_finds_the_rest() {
    let model = MockModel::start(json!({"replies": [
        {"tool_calls": [search("c0", "n0000"), search("c1", "n4999"), search("c2", "n4997")]},
        {"text": "found them"}
    ]}));
    let home = home_for(&model);
    // 2 % of 200,000 tokens: 4,000.
    std::fs::write(
        home.path().join("config.toml"),
        "model_context_window = 200000\nmodel_auto_compact_token_limit = 10000000\n".to_owned()
            + &std::fs::read_to_string(home.path().join("config.toml")).unwrap(),
    )
    .unwrap();
    let user_home = tempfile::tempdir().unwrap();
    let dir = project();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let sub = root.join("sub");
    let out = rein_in(
        home.path(),
        &[
            "exec",
            "--json",
            "-C",
            sub.to_str().unwrap(),
            "find the job skills",
        ],
    )
    .env("HOME", user_home.path())
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let requests = model.requests();
    let list = requests[0]["input"][0]["content"][0]["text"]
        .as_str()
        .unwrap();
    let lines: Vec<&str> = list.lines().collect();
    let listed = lines.iter().filter(|l| l.starts_with("- skill-")).count();
    let tokens: usize = lines
        .iter()
        .filter(|l| l.starts_with("- `r") || l.starts_with("- skill-"))
        .map(|l| l.len().div_ceil(4) + 1)
        .sum();
    assert!(tokens <= 4000, "the list takes {tokens} tokens");
    assert!(listed > 100, "only {listed} listed");
    let unlisted = 5000 - listed;
    assert!(
        list.contains(&format!(
            "- {unlisted} more skills did not fit in this list"
        )),
        "{list}"
    );
    let warned = format!("{unlisted} of 5000 skills did not fit");
    assert!(
        json_lines(&out.stdout).iter().any(|e| e["item"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(&warned))),
        "no warning `{warned}`"
    );
    // The three are past the budget (their roots come last or late in the list).
    for n in ["0000", "4999", "4997"] {
        assert!(
            !list.contains(&format!("- skill-{n}:")),
            "skill-{n} is listed"
        );
    }

    let outputs: Vec<Value> = requests[1]["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| json!([i["call_id"], i["output"]]))
        .collect();
    let line = |n: usize, root: &str| {
        json!(format!(
            "- skill-{n:04}: Handles job n{n:04}. (file: {})",
            root_path(&root_dir(&sub, root), n).display()
        ))
    };
    assert_eq!(
        outputs,
        [
            json!(["c0", line(0, ".agents/skills")]),
            json!(["c1", line(4999, ".claude/skills")]),
            json!(["c2", line(4997, "sub/.agents/skills")]),
        ]
    );
}

fn root_dir(sub: &std::path::Path, root: &str) -> std::path::PathBuf {
    sub.parent().unwrap().join(root)
}

fn root_path(root: &std::path::Path, n: usize) -> std::path::PathBuf {
    root.join(format!("skill-{n:04}/SKILL.md"))
}
