//! Claude Code's `context: fork` end to end: a skill with it, attached by a `$name`
//! mention in `rein exec`, runs as a sub-agent before the turn's first request. The kernel
//! calls `spawn_agent` (the skill and the user's request as the child's task) and
//! `wait_agent` through the thread's tools; the child answers in its own thread (its own
//! rollout), and the parent's model reads that answer as the calls' outputs. Through the
//! real binary and a `rein mock-model` recording the request bodies (the child's request
//! comes first: the parent waits for it).
#![allow(clippy::unwrap_used)]

use rein_test_support::exec as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{Home, MockModel};

use crate::skills_activation::last_user;

const SKILL: &str = "---\nname: research\ndescription: Research in a fork.\ncontext: fork\n---\n\
                     Read the code and report one finding.\n";
const FINDING: &str = "Finding: the parser is small.";

fn rollouts(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rollouts(&path));
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            files.push(path);
        }
    }
    files
}

/// (type, name) of each input item of `request` after its last user message.
fn after_user(request: &Value) -> Vec<(String, String)> {
    let input = request["input"].as_array().unwrap();
    let last = input.iter().rposition(|i| i["role"] == "user").unwrap();
    input[last + 1..]
        .iter()
        .map(|i| {
            let text = |k: &str| i[k].as_str().unwrap_or_default().to_owned();
            (text("type"), text("name"))
        })
        .collect()
}

#[test]
fn a_fork_skill_runs_as_a_sub_agent_whose_answer_the_parent_reads() {
    let model = MockModel::start(json!({"replies": [
        {"text": FINDING},
        {"text": "The sub-agent reports that the parser is small."}
    ]}));
    let home = Home::new(&model, "responses");
    let repo = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(repo.path()).unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    let skill_md = root.join(".claude/skills/research/SKILL.md");
    std::fs::create_dir_all(skill_md.parent().unwrap()).unwrap();
    std::fs::write(&skill_md, SKILL).unwrap();

    let prompt = "use $research on the parser";
    let out = home.exec_ok(&["-C", root.to_str().unwrap(), prompt]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("The sub-agent reports"), "{stdout}");

    let requests = model.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    // The child's task: the skill as attached, then the user's request.
    let task = format!(
        "<skill>\n<name>research</name>\n<path>{}</path>\n{}\n</skill>\n\n{prompt}",
        skill_md.display(),
        SKILL.trim_end()
    );
    assert_eq!(
        last_user(&requests[0]),
        json!([{"type": "input_text", "text": task}])
    );
    // The parent's first request: the user's message, then the kernel's two calls and
    // their outputs, the wait's holding the child's answer.
    let parent = &requests[1];
    let call = |name: &str| ("function_call".to_owned(), name.to_owned());
    let output = ("function_call_output".to_owned(), String::new());
    assert_eq!(
        after_user(parent),
        vec![
            call("spawn_agent"),
            output.clone(),
            call("wait_agent"),
            output
        ]
    );
    let input = parent["input"].as_array().unwrap();
    let wait_output = input.last().unwrap()["output"].to_string();
    assert!(wait_output.contains(FINDING), "{wait_output}");
    assert!(
        input[input.len() - 4]["call_id"]
            .as_str()
            .unwrap()
            .starts_with("skill_fork_"),
        "{parent:#}"
    );

    // Two threads, each with its rollout: the parent's and the child's, which holds the
    // child's answer.
    let files = rollouts(&home.path().join("sessions"));
    assert_eq!(files.len(), 2, "{files:?}");
    let holding: Vec<_> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).unwrap().contains(FINDING))
        .collect();
    assert_eq!(
        holding.len(),
        2,
        "the child answered, the parent read it: {files:?}"
    );
}
