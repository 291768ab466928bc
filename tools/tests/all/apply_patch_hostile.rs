//! apply_patch against a hostile workspace: a symlink flipping between the workspace and
//! the outside while patches write through it, symlinked files, FIFOs, devices and huge
//! files. Nothing lands outside, nothing blocks.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;
use rein_tools::apply_patch;

use rein_core::tools::testing::{read_file as read, write_file as write};

/// A fresh directory outside the temp dir (which workspace-write leaves writable).
fn outside_temp() -> tempfile::TempDir {
    let base = rein_core::tools::testing::base_outside_temp([
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
        std::path::Path::new("/var/tmp"),
    ])
    .unwrap();
    tempfile::tempdir_in(base).unwrap()
}

/// A symlink flipping as fast as it can between a directory of the workspace and one
/// outside it, as a background command the model started could do. Stops when dropped.
struct Flipper {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    flips: std::sync::Arc<std::sync::atomic::AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Flipper {
    fn start(link: &Path, a: &Path, b: &Path) -> Self {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flips = std::sync::Arc::new(AtomicU64::new(0));
        let (link, a, b) = (link.to_owned(), a.to_owned(), b.to_owned());
        let thread = std::thread::spawn({
            let (stop, flips) = (stop.clone(), flips.clone());
            move || {
                let staging = link.with_extension("flip");
                while !stop.load(Ordering::Relaxed) {
                    for target in [&a, &b] {
                        // symlink + rename: the link always exists, and switches at once.
                        let _ = fs::remove_file(&staging);
                        std::os::unix::fs::symlink(target, &staging).unwrap();
                        fs::rename(&staging, &link).unwrap();
                        flips.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
        let flipper = Self {
            stop,
            flips,
            thread: Some(thread),
        };
        // Under way before anything races it.
        while flipper.flips.load(Ordering::Relaxed) < 10 {
            std::thread::yield_now();
        }
        flipper
    }
}

impl Drop for Flipper {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The race a patch must not lose: `ws/link` flips between `ws/inside` and a directory
/// outside the workspace while hundreds of patches write through it under workspace-write
/// with approval `never`. Every write lands inside (or is refused); none lands outside.
/// The control shows that the same race redirects a check-then-write-by-path.
mod symlink_race {
    use std::fs;
    use std::path::Path;
    use std::sync::Arc;

    use pretty_assertions::assert_eq;
    use rein_core::tools::testing::{call, settings, RecordingHost};
    use rein_core::tools::Tool;
    use rein_protocol::{ApprovalPolicy, SandboxPolicy, ThreadId};
    use rein_tools::apply_patch::fs::{set_mechanism, Mechanism};
    use rein_tools::apply_patch::ApplyPatchTool;
    use rein_tools::policy::{paths, PolicyConfig, PolicyEngine};
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::{outside_temp, write, Flipper};
    use rein_core::tools::testing::tree_snapshot as snapshot;

    const PATCHES: usize = 400;

    /// Fields drop in order: the flipper stops before the directories it flips between
    /// are removed (otherwise its thread panics on the vanished directory).
    struct Scene {
        _flipper: Flipper,
        ws: tempfile::TempDir,
        outside: tempfile::TempDir,
    }

    fn scene() -> Scene {
        let ws = outside_temp();
        let outside = outside_temp();
        write(ws.path(), "inside/shared.txt", "original\n");
        write(outside.path(), "shared.txt", "original\n");
        let flipper = Flipper::start(
            &ws.path().join("link"),
            &ws.path().join("inside"),
            outside.path(),
        );
        Scene {
            _flipper: flipper,
            ws,
            outside,
        }
    }

    async fn race(mechanism: Mechanism) {
        set_mechanism(mechanism);
        let s = scene();
        let outside_before = snapshot(s.outside.path());
        let tool = ApplyPatchTool::new(Arc::new(PolicyEngine::new(PolicyConfig::default(), None)));
        let host = RecordingHost::new();
        let (mut applied, mut refused) = (0, 0);
        for i in 0..PATCHES {
            let patch = if i % 2 == 0 {
                format!(
                    "*** Begin Patch\n*** Add File: link/new-{i}.txt\n+written {i}\n*** End Patch"
                )
            } else {
                format!(
                    "*** Begin Patch\n*** Update File: link/shared.txt\n@@\n-original\n+changed {i}\n*** End Patch"
                )
            };
            let ctx = host.context(
                ThreadId::new(),
                settings(
                    s.ws.path(),
                    ApprovalPolicy::Never,
                    SandboxPolicy::WorkspaceWrite,
                ),
                CancellationToken::new(),
            );
            let result = tool
                .run(call("apply_patch", json!({"input": patch})), ctx)
                .await;
            if result.success {
                applied += 1;
                // Put the shared file back so the next update has its context.
                fs::write(s.ws.path().join("inside/shared.txt"), "original\n").unwrap();
            } else {
                assert!(
                    result.output.contains("denied by the sandbox policy")
                        || result.output.contains("a symlink appeared on the path"),
                    "{}",
                    result.output
                );
                refused += 1;
            }
        }
        assert_eq!(
            snapshot(s.outside.path()),
            outside_before,
            "a write escaped"
        );
        // Both outcomes happened, so the link really flipped under the patches.
        eprintln!("{mechanism:?}: applied {applied}, refused {refused}");
        assert!(
            applied > 0 && refused > 0,
            "applied {applied}, refused {refused}"
        );
        let inside: Vec<String> = fs::read_dir(s.ws.path().join("inside"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("new-"))
            .collect();
        assert!(!inside.is_empty(), "no added file landed inside");
    }

    /// Both mechanisms, one after the other (the choice is process-wide).
    #[tokio::test(flavor = "multi_thread")]
    async fn no_patch_write_escapes_through_a_flipping_symlink() {
        if rein_tools::apply_patch::fs::mechanism() == Mechanism::Openat2 {
            race(Mechanism::Openat2).await;
        } else {
            eprintln!("SKIPPED the openat2 half: this kernel has no openat2");
        }
        race(Mechanism::NoFollowWalk).await;
    }

    /// Control: check the path the way the policy does, then write it by name. Under the
    /// same flipper this lands outside within a bounded number of tries.
    #[test]
    fn control_a_check_then_path_write_does_escape() {
        let s = scene();
        let roots = [s.ws.path().canonicalize().unwrap()];
        let mut escaped = None;
        for i in 0..200_000 {
            let rel = Path::new("link").join(format!("naive-{i}.txt"));
            let resolved = paths::resolve(s.ws.path(), &rel).unwrap();
            if !roots.iter().any(|r| resolved.starts_with(r)) {
                continue;
            }
            let _ = fs::write(s.ws.path().join(&rel), "naive\n");
            if s.outside.path().join(format!("naive-{i}.txt")).exists() {
                escaped = Some(i);
                break;
            }
        }
        eprintln!("the naive write escaped at try {escaped:?}");
        assert!(
            escaped.is_some(),
            "the race never redirected a naive write: the test proves nothing"
        );
    }
}

#[test]
fn a_symlinked_file_inside_is_edited_at_its_target_and_a_link_is_not_deleted() {
    let dir = outside_temp();
    let root = dir.path();
    write(root, "docs/AGENTS.md", "old\n");
    std::os::unix::fs::symlink("docs/AGENTS.md", root.join("CLAUDE.md")).unwrap();
    std::os::unix::fs::symlink("docs", root.join("d")).unwrap();
    apply_patch::apply(
        "*** Begin Patch\n*** Update File: CLAUDE.md\n-old\n+new\n*** Add File: d/more.md\n+more\n*** End Patch",
        root,
    )
    .unwrap();
    assert_eq!(read(root, "docs/AGENTS.md"), "new\n");
    assert_eq!(read(root, "docs/more.md"), "more\n");
    let is_link = |name: &str| {
        fs::symlink_metadata(root.join(name))
            .unwrap()
            .file_type()
            .is_symlink()
    };
    assert!(is_link("CLAUDE.md"));
    let err = apply_patch::apply(
        "*** Begin Patch\n*** Delete File: CLAUDE.md\n*** End Patch",
        root,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "CLAUDE.md: a symlink, not a regular file; only regular files are patched"
    );
    assert!(is_link("CLAUDE.md"));
    assert_eq!(read(root, "docs/AGENTS.md"), "new\n");
}

#[test]
fn fifos_devices_and_huge_files_are_refused_without_blocking() {
    let dir = outside_temp();
    let root = dir.path();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        root.join("fifo"),
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("zero")).unwrap();
    let huge = fs::File::create(root.join("huge.txt")).unwrap();
    huge.set_len(apply_patch::fs::MAX_PATCHED_FILE_BYTES + 1)
        .unwrap();
    for (name, expected) in [
        ("fifo", "a FIFO, not a regular file"),
        ("zero", "a character device, not a regular file"),
        ("huge.txt", "too large to patch"),
    ] {
        let err = apply_patch::apply(
            &format!("*** Begin Patch\n*** Update File: {name}\n-x\n+y\n*** End Patch"),
            root,
        )
        .unwrap_err();
        assert!(err.to_string().contains(expected), "{name}: {err}");
    }
}
