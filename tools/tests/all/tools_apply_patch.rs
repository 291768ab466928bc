//! apply_patch golden cases on real files: add, update, move, delete, fuzzy context,
//! anchors, end-of-file hunks, and atomicity (a failing hunk leaves every file untouched).
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;
use rein_tools::apply_patch::{self, ChangeKind, PatchError};

use rein_core::tools::testing::{read_file as read, write_file as write};

use rein_core::tools::testing::tree_snapshot as snapshot;

#[test]
fn add_update_move_and_delete_in_one_patch() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "src/lib.rs",
        "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n",
    );
    write(root, "old.txt", "rename me\nplease\n");
    write(root, "gone.txt", "bye\n");
    let patch = "*** Begin Patch
*** Add File: docs/new.md
+# Title
+body
*** Update File: src/lib.rs
@@ fn b() {
-    2
+    20
*** Update File: old.txt
*** Move to: moved/new.txt
@@
 rename me
-please
+done
*** Delete File: gone.txt
*** End Patch
";
    let changes = apply_patch::apply(patch, root).unwrap();
    assert_eq!(read(root, "docs/new.md"), "# Title\nbody\n");
    assert_eq!(
        read(root, "src/lib.rs"),
        "fn a() {\n    1\n}\n\nfn b() {\n    20\n}\n"
    );
    assert_eq!(read(root, "moved/new.txt"), "rename me\ndone\n");
    assert!(!root.join("old.txt").exists());
    assert!(!root.join("gone.txt").exists());
    let kinds: Vec<_> = changes.iter().map(|c| c.kind.clone()).collect();
    assert_eq!(
        kinds,
        [
            ChangeKind::Add,
            ChangeKind::Update { move_to: None },
            ChangeKind::Update {
                move_to: Some("moved/new.txt".into())
            },
            ChangeKind::Delete,
        ]
    );
    assert_eq!(
        changes[1].diff,
        "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -3,5 +3,5 @@\n }\n \n fn b() {\n-    2\n+    20\n }\n"
    );
    assert!(changes[0]
        .diff
        .starts_with("--- /dev/null\n+++ b/docs/new.md\n"));
    assert!(changes[3].diff.contains("+++ /dev/null\n"));
    let summary = apply_patch::summarize(&changes);
    assert!(summary.contains("R old.txt -> moved/new.txt"));
    // Nothing but the intended files: no temp files left behind.
    let names: Vec<String> = snapshot(root).into_iter().map(|(p, _)| p).collect();
    assert!(names.iter().all(|p| !p.contains("rein-patch")), "{names:?}");
}

#[test]
fn context_matching_tolerates_whitespace_differences() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.py", "def f():\n    x = 1   \n    return x\n");
    // The patch's context lacks the trailing spaces and uses a tab-less, re-indented line.
    let patch = "*** Begin Patch
*** Update File: a.py
@@
 def f():
-  x = 1
+    x = 2
     return x
*** End Patch";
    apply_patch::apply(patch, dir.path()).unwrap();
    assert_eq!(
        read(dir.path(), "a.py"),
        "def f():\n    x = 2\n    return x\n"
    );
}

#[test]
fn end_of_file_hunk_matches_the_last_occurrence() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "f.txt", "end\nmiddle\nend\n");
    let patch = "*** Begin Patch
*** Update File: f.txt
@@
-end
+END
*** End of File
*** End Patch";
    apply_patch::apply(patch, dir.path()).unwrap();
    assert_eq!(read(dir.path(), "f.txt"), "end\nmiddle\nEND\n");
}

#[test]
fn several_hunks_apply_in_order() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "f.txt", "a\nb\nc\nd\ne\n");
    let patch = "*** Begin Patch
*** Update File: f.txt
@@
 a
-b
+B
@@
 d
-e
+E
+F
*** End Patch";
    apply_patch::apply(patch, dir.path()).unwrap();
    assert_eq!(read(dir.path(), "f.txt"), "a\nB\nc\nd\nE\nF\n");
}

#[test]
fn a_failing_hunk_leaves_every_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "one.txt", "alpha\nbeta\n");
    write(root, "two.txt", "gamma\ndelta\n");
    write(root, "three.txt", "keep\n");
    let before = snapshot(root);
    let patch = "*** Begin Patch
*** Add File: new/file.txt
+x
*** Update File: one.txt
@@
-alpha
+ALPHA
*** Delete File: three.txt
*** Update File: two.txt
@@
 gamma
-not there
+oops
*** End Patch";
    let err = apply_patch::apply(patch, root).unwrap_err();
    match &err {
        PatchError::HunkMismatch {
            path, patch_line, ..
        } => {
            assert_eq!(path, Path::new("two.txt"));
            assert_eq!(*patch_line, 10);
        }
        other => panic!("unexpected error: {other}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("two.txt") && message.contains("patch line 10"),
        "{message}"
    );
    assert_eq!(snapshot(root), before);
}

#[test]
fn a_write_failure_midway_leaves_every_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a.txt", "a\n");
    // A regular file where the patch needs a directory: the second write must fail.
    write(root, "blocker", "i am a file\n");
    let before = snapshot(root);
    let patch = "*** Begin Patch
*** Update File: a.txt
-a
+A
*** Add File: blocker/inner.txt
+x
*** End Patch";
    let err = apply_patch::apply(patch, root).unwrap_err();
    assert!(matches!(err, PatchError::Write { .. }), "{err}");
    assert_eq!(snapshot(root), before);
}

#[test]
fn missing_files_and_anchors_are_named() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "f.txt", "x\n");
    let err = apply_patch::apply(
        "*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch",
        dir.path(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("nope.txt"), "{err}");
    let err = apply_patch::apply(
        "*** Begin Patch\n*** Update File: f.txt\n@@ fn missing()\n-x\n+y\n*** End Patch",
        dir.path(),
    )
    .unwrap_err();
    assert!(
        matches!(err, PatchError::AnchorNotFound { patch_line: 3, .. }),
        "{err}"
    );
    assert_eq!(read(dir.path(), "f.txt"), "x\n");
}

#[test]
fn later_operations_see_earlier_ones() {
    let dir = tempfile::tempdir().unwrap();
    let patch = "*** Begin Patch
*** Add File: f.txt
+one
*** Update File: f.txt
@@
-one
+two
*** End Patch";
    apply_patch::apply(patch, dir.path()).unwrap();
    assert_eq!(read(dir.path(), "f.txt"), "two\n");
}

#[test]
fn file_mode_is_kept_on_update() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "run.sh", "echo a\n");
    let path = dir.path().join("run.sh");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    apply_patch::apply(
        "*** Begin Patch\n*** Update File: run.sh\n-echo a\n+echo b\n*** End Patch",
        dir.path(),
    )
    .unwrap();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o755
    );
}

mod through_the_tool {
    use std::sync::Arc;

    use rein_core::tools::testing::{call, settings, RecordingHost, ScriptedAnswer};
    use rein_core::tools::Tool;
    use rein_protocol::{ApprovalDecision, ApprovalPolicy, SandboxPolicy, ThreadId};
    use rein_tools::apply_patch::ApplyPatchTool;
    use rein_tools::policy::{PolicyConfig, PolicyEngine};
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::{read, snapshot, write};
    use pretty_assertions::assert_eq;

    fn tool() -> ApplyPatchTool {
        ApplyPatchTool::new(Arc::new(PolicyEngine::new(PolicyConfig::default(), None)))
    }

    /// A workspace outside the temp dir (which is itself writable under workspace-write).
    fn workspace() -> tempfile::TempDir {
        let candidates = [
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
            std::path::Path::new("/var/tmp"),
        ];
        let base = rein_core::tools::testing::base_outside_temp(candidates).unwrap();
        tempfile::tempdir_in(base).unwrap()
    }

    #[tokio::test]
    async fn writes_into_git_or_outside_are_denied_under_never() {
        let ws = workspace();
        let outside = workspace();
        write(ws.path(), ".git/config", "[core]\n");
        std::os::unix::fs::symlink(outside.path(), ws.path().join("out-link")).unwrap();
        let host = RecordingHost::new();
        let before = (snapshot(ws.path()), snapshot(outside.path()));
        let escapes = [
            "*** Begin Patch\n*** Update File: .git/config\n-[core]\n+[evil]\n*** End Patch"
                .to_owned(),
            "*** Begin Patch\n*** Add File: out-link/pwned.txt\n+x\n*** End Patch".to_owned(),
            format!(
                "*** Begin Patch\n*** Add File: sub/../../{}/pwned.txt\n+x\n*** End Patch",
                outside.path().file_name().unwrap().to_string_lossy()
            ),
            format!(
                "*** Begin Patch\n*** Add File: {}/pwned.txt\n+x\n*** End Patch",
                outside.path().display()
            ),
        ];
        for patch in escapes {
            let ctx = host.context(
                ThreadId::new(),
                settings(
                    ws.path(),
                    ApprovalPolicy::Never,
                    SandboxPolicy::WorkspaceWrite,
                ),
                CancellationToken::new(),
            );
            let result = tool()
                .run(call("apply_patch", json!({"input": patch})), ctx)
                .await;
            assert!(!result.success, "{patch}");
            assert!(
                result.output.contains("denied by the sandbox policy"),
                "{}",
                result.output
            );
        }
        assert_eq!((snapshot(ws.path()), snapshot(outside.path())), before);
        assert!(host.approval_requests().is_empty());
    }

    #[tokio::test]
    async fn approval_lets_a_read_only_patch_through_and_deny_stops_it() {
        let ws = workspace();
        let host = RecordingHost::new().answering([
            ScriptedAnswer::Decide(ApprovalDecision::Deny),
            ScriptedAnswer::Decide(ApprovalDecision::Approve),
        ]);
        let ctx = host.context(
            ThreadId::new(),
            settings(
                ws.path(),
                ApprovalPolicy::OnRequest,
                SandboxPolicy::ReadOnly,
            ),
            CancellationToken::new(),
        );
        let args = json!({"input": "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"});
        let denied = tool()
            .run(call("apply_patch", args.clone()), ctx.clone())
            .await;
        assert!(!denied.success);
        assert!(denied.output.contains("denied"));
        assert!(!ws.path().join("a.txt").exists());
        let applied = tool().run(call("apply_patch", args), ctx).await;
        assert!(applied.success, "{}", applied.output);
        assert!(applied.output.contains("A a.txt"));
        assert!(applied.output.contains("+++ b/a.txt"));
        assert_eq!(read(ws.path(), "a.txt"), "hi\n");
    }

    #[tokio::test]
    async fn a_bad_patch_is_reported_without_asking() {
        let ws = workspace();
        let host = RecordingHost::new();
        let ctx = host.context(
            ThreadId::new(),
            settings(
                ws.path(),
                ApprovalPolicy::Untrusted,
                SandboxPolicy::WorkspaceWrite,
            ),
            CancellationToken::new(),
        );
        let result = tool()
            .run(
                call(
                    "apply_patch",
                    json!({"input": "*** Begin Patch\n*** End Patch"}),
                ),
                ctx,
            )
            .await;
        assert!(!result.success);
        assert!(result.output.contains("line 2"), "{}", result.output);
        assert!(host.approval_requests().is_empty());
    }
}

#[test]
fn an_appending_hunk_before_an_earlier_edit_applies_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "f.txt", "a\nb\nc\nd\n");
    // The first hunk only adds (so it goes at the end); the second removes earlier lines.
    let patch = "*** Begin Patch
*** Update File: f.txt
@@
+tail
@@
-b
-c
*** End Patch";
    apply_patch::apply(patch, dir.path()).unwrap();
    assert_eq!(read(dir.path(), "f.txt"), "a\nd\ntail\n");
}

/// Arbitrary patch-shaped input never panics and never leaves a half-applied state:
/// either the patch applies, or every file is as it was.
#[test]
fn malformed_and_random_patches_fail_cleanly() {
    let fragments = [
        "*** Begin Patch",
        "*** End Patch",
        "*** Add File: a.txt",
        "*** Add File: d/b.txt",
        "*** Delete File: a.txt",
        "*** Delete File: base.txt",
        "*** Update File: base.txt",
        "*** Update File: a.txt",
        "*** Move to: moved.txt",
        "*** Move to: base.txt",
        "@@",
        "@@ two",
        "*** End of File",
        "+x",
        "+",
        "-one",
        "-two",
        "-three",
        " one",
        " two",
        " three",
        "",
        "-",
        " ",
        "garbage",
        "+\u{00e9}\u{2014}",
    ];
    // A small deterministic generator (xorshift) keeps the test reproducible.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut applied = 0;
    for _ in 0..800 {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "base.txt", "one\ntwo\nthree\n");
        let before = snapshot(dir.path());
        let mut lines = vec!["*** Begin Patch"];
        for _ in 0..(next() % 8) {
            lines.push(fragments[(next() % fragments.len() as u64) as usize]);
        }
        if next() % 4 != 0 {
            lines.push("*** End Patch");
        }
        let text = lines.join("\n");
        match apply_patch::apply(&text, dir.path()) {
            Ok(_) => applied += 1,
            Err(_) => assert_eq!(snapshot(dir.path()), before, "{text}"),
        }
    }
    // The generator must reach the success path too, or the test proves little.
    assert!(applied >= 5, "only {applied} patches applied");
}
