//! read_file, list_dir, grep and update_plan on real files.
#![allow(clippy::unwrap_used)]

use std::fs;

use pretty_assertions::assert_eq;
use rein_core::tools::testing::{call, settings, RecordingHost};
use rein_core::tools::testing::{make_fifo, EndlessFifo};
use rein_core::tools::{Tool, ToolResult};
use rein_protocol::{ApprovalPolicy, EventMsg, PlanStep, PlanStepStatus, SandboxPolicy, ThreadId};
use rein_tools::files::{GrepTool, ListDirTool, ReadFileTool};
use rein_tools::plan::UpdatePlanTool;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("src/nested")).unwrap();
    fs::create_dir_all(root.join(".git")).unwrap();
    fs::create_dir_all(root.join("target")).unwrap();
    fs::write(root.join(".git/HEAD"), "needle in git\n").unwrap();
    fs::write(root.join("target/out.txt"), "needle in target\n").unwrap();
    let lines: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    fs::write(root.join("ten.txt"), lines).unwrap();
    fs::write(
        root.join("src/main.rs"),
        "fn main() {\n    // Needle here\n}\n",
    )
    .unwrap();
    fs::write(root.join("src/nested/deep.rs"), "const NEEDLE: u8 = 1;\n").unwrap();
    fs::write(root.join("blob.bin"), b"needle\0\x01\x02").unwrap();
    dir
}

async fn run(tool: &dyn Tool, dir: &std::path::Path, args: Value) -> (ToolResult, RecordingHost) {
    let host = RecordingHost::new();
    let ctx = host.context(
        ThreadId::new(),
        settings(dir, ApprovalPolicy::Never, SandboxPolicy::ReadOnly),
        CancellationToken::new(),
    );
    let result = tool.run(call(&tool.spec().name, args), ctx).await;
    (result, host)
}

#[tokio::test]
async fn read_file_returns_a_numbered_line_range() {
    let ws = workspace();
    let (r, _) = run(
        &ReadFileTool,
        ws.path(),
        json!({"path": "ten.txt", "offset": 3, "limit": 2}),
    )
    .await;
    assert!(r.success);
    assert_eq!(
        r.output,
        "     3\tline 3\n     4\tline 4\n[more lines; continue with offset 5]\n"
    );
    let (r, _) = run(
        &ReadFileTool,
        ws.path(),
        json!({"path": "ten.txt", "offset": 9}),
    )
    .await;
    assert_eq!(r.output, "     9\tline 9\n    10\tline 10\n");
}

#[tokio::test]
async fn read_file_errors_are_clear() {
    let ws = workspace();
    let (r, _) = run(&ReadFileTool, ws.path(), json!({"path": "missing.txt"})).await;
    assert!(
        !r.success && r.output.contains("missing.txt"),
        "{}",
        r.output
    );
    let (r, _) = run(&ReadFileTool, ws.path(), json!({"path": "blob.bin"})).await;
    assert!(!r.success && r.output.contains("binary"), "{}", r.output);
    let (r, _) = run(
        &ReadFileTool,
        ws.path(),
        json!({"path": "ten.txt", "offset": 50}),
    )
    .await;
    assert!(
        !r.success && r.output.contains("past the end"),
        "{}",
        r.output
    );
    let (r, _) = run(&ReadFileTool, ws.path(), json!({"file": "ten.txt"})).await;
    assert!(!r.success && r.output.contains("invalid read_file arguments"));
}

#[tokio::test]
async fn list_dir_respects_depth_and_ignores() {
    let ws = workspace();
    let (r, _) = run(
        &ListDirTool,
        ws.path(),
        json!({"depth": 2, "ignore": ["target", "*.bin"]}),
    )
    .await;
    assert!(r.success, "{}", r.output);
    let body: Vec<&str> = r.output.lines().skip(1).collect();
    assert_eq!(body, ["  src/", "    main.rs", "    nested/", "  ten.txt"]);
    let (r, _) = run(&ListDirTool, ws.path(), json!({"path": "src", "depth": 3})).await;
    assert!(
        r.output.contains("\n  nested/\n    deep.rs\n"),
        "{}",
        r.output
    );
    let (r, _) = run(&ListDirTool, ws.path(), json!({"path": "ten.txt"})).await;
    assert!(!r.success && r.output.contains("not a directory"));
}

#[tokio::test]
async fn grep_finds_matches_and_skips_git_and_binaries() {
    let ws = workspace();
    let (r, _) = run(
        &GrepTool,
        ws.path(),
        json!({"pattern": "needle", "case_insensitive": true}),
    )
    .await;
    assert!(r.success, "{}", r.output);
    let lines: Vec<&str> = r.output.lines().collect();
    assert_eq!(
        lines,
        [
            "src/main.rs:2:    // Needle here",
            "src/nested/deep.rs:1:const NEEDLE: u8 = 1;",
            "target/out.txt:1:needle in target",
        ]
    );
    let (r, _) = run(
        &GrepTool,
        ws.path(),
        json!({"pattern": "NEEDLE", "glob": "*.rs", "path": "src"}),
    )
    .await;
    assert_eq!(r.output, "src/nested/deep.rs:1:const NEEDLE: u8 = 1;\n");
    let (r, _) = run(
        &GrepTool,
        ws.path(),
        json!({"pattern": "line \\d", "max_results": 3}),
    )
    .await;
    assert_eq!(r.output.lines().count(), 4);
    assert!(r.output.ends_with("[stopped after 3 matches]\n"));
    let (r, _) = run(&GrepTool, ws.path(), json!({"pattern": "("})).await;
    assert!(!r.success && r.output.contains("invalid pattern"));
}

#[tokio::test]
async fn grep_honours_gitignore_like_ripgrep_unless_asked_not_to() {
    let ws = workspace();
    std::fs::write(ws.path().join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".github")).unwrap();
    std::fs::write(ws.path().join(".github/ci.yml"), "run: needle\n").unwrap();
    let (r, _) = run(&GrepTool, ws.path(), json!({"pattern": "needle"})).await;
    assert!(r.success, "{}", r.output);
    assert_eq!(
        r.output, ".github/ci.yml:1:run: needle\n",
        "ignored target/ is skipped; hidden but not ignored files are searched"
    );
    let (r, _) = run(
        &GrepTool,
        ws.path(),
        json!({"pattern": "needle", "include_ignored": true}),
    )
    .await;
    assert_eq!(
        r.output,
        ".github/ci.yml:1:run: needle\ntarget/out.txt:1:needle in target\n"
    );
}

#[tokio::test]
async fn update_plan_emits_the_plan() {
    let ws = workspace();
    let plan = json!({"explanation": "why", "plan": [
        {"step": "read", "status": "completed"},
        {"step": "edit", "status": "in_progress"},
        {"step": "test", "status": "pending"}
    ]});
    let (r, host) = run(&UpdatePlanTool, ws.path(), plan).await;
    assert!(r.success);
    assert_eq!(
        host.events(),
        [EventMsg::PlanUpdated {
            plan: vec![
                PlanStep {
                    step: "read".into(),
                    status: PlanStepStatus::Completed
                },
                PlanStep {
                    step: "edit".into(),
                    status: PlanStepStatus::InProgress
                },
                PlanStep {
                    step: "test".into(),
                    status: PlanStepStatus::Pending
                },
            ]
        }]
    );
    let two = json!({"plan": [
        {"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}
    ]});
    let (r, host) = run(&UpdatePlanTool, ws.path(), two).await;
    assert!(!r.success);
    assert!(host.events().is_empty());
}

/// A workspace that tries to hang or exhaust the file tools: an idle FIFO, a FIFO fed an
/// endless line, a link to /dev/zero, and a 3 GiB file that is one line.
fn hostile_workspace() -> (tempfile::TempDir, EndlessFifo) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    make_fifo(&root.join("idle.fifo"));
    let fed = EndlessFifo::start(&root.join("fed.fifo"));
    std::os::unix::fs::symlink("/dev/zero", root.join("zero")).unwrap();
    let huge = fs::File::create(root.join("huge.txt")).unwrap();
    huge.set_len(3 << 30).unwrap();
    fs::write(root.join("normal.txt"), "needle\n").unwrap();
    (dir, fed)
}

#[tokio::test]
async fn read_file_refuses_fifos_and_devices_and_reads_huge_files_in_bounded_amounts() {
    let (ws, _fed) = hostile_workspace();
    for (name, what) in [
        ("idle.fifo", "is a FIFO, not a regular file"),
        ("fed.fifo", "is a FIFO, not a regular file"),
        ("zero", "is a character device, not a regular file"),
    ] {
        let (r, _) = run(&ReadFileTool, ws.path(), json!({"path": name})).await;
        assert!(!r.success, "{name}: {}", r.output);
        assert!(r.output.contains(what), "{name}: {}", r.output);
    }
    // A 3 GiB file of NULs is binary; one of a single endless text line is cut.
    let (r, _) = run(&ReadFileTool, ws.path(), json!({"path": "huge.txt"})).await;
    assert_eq!(
        r.output,
        format!("{} is a binary file", ws.path().join("huge.txt").display())
    );
    let long = ws.path().join("long.txt");
    let mut f = fs::File::create(&long).unwrap();
    let chunk = vec![b'y'; 1 << 20];
    for _ in 0..64 {
        std::io::Write::write_all(&mut f, &chunk).unwrap();
    }
    drop(f);
    let (r, _) = run(&ReadFileTool, ws.path(), json!({"path": "long.txt"})).await;
    assert!(r.success, "{}", r.output);
    assert_eq!(r.output, format!("     1\t{}\n", "y".repeat(500)));
    // Many lines asked for: the output stops at its cap and says where to go on.
    let many: String = (0..100_000)
        .map(|i| format!("line {i:06} {}\n", "z".repeat(80)))
        .collect();
    fs::write(ws.path().join("many.txt"), many).unwrap();
    let (r, _) = run(
        &ReadFileTool,
        ws.path(),
        json!({"path": "many.txt", "limit": 1_000_000}),
    )
    .await;
    assert!(r.success);
    let cap = rein_tools::files::read_file::MAX_OUTPUT_BYTES;
    assert!(r.output.len() < cap + 200, "{}", r.output.len());
    let tail = r.output.lines().last().unwrap();
    assert!(
        tail.starts_with(&format!(
            "[output truncated at {cap} bytes; continue with offset "
        )),
        "{tail}"
    );
}

#[tokio::test]
async fn grep_and_list_dir_pass_over_fifos_and_devices() {
    let (ws, _fed) = hostile_workspace();
    let (r, _) = run(&GrepTool, ws.path(), json!({"pattern": "needle"})).await;
    assert!(r.success, "{}", r.output);
    assert_eq!(r.output, "normal.txt:1:needle\n");
    // Named directly, a FIFO or a device is no file to search.
    for name in ["idle.fifo", "fed.fifo", "zero"] {
        let (r, _) = run(&GrepTool, ws.path(), json!({"pattern": "x", "path": name})).await;
        assert_eq!(r.output, "no matches\n", "{name}");
    }
    let (r, _) = run(&ListDirTool, ws.path(), json!({})).await;
    assert!(r.success);
    assert_eq!(
        r.output,
        format!(
            "{}/\n  fed.fifo\n  huge.txt\n  idle.fifo\n  normal.txt\n  zero@\n",
            ws.path().display()
        )
    );
}
