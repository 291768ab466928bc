//! A protected place (a `.git` under a writable root) found when the spec was made may be
//! gone when the command starts: another process removed its repository in the shared
//! temp dir, which is a writable root. The command still runs, under each mechanism.

use std::collections::BTreeMap;
use std::path::Path;

use rein_protocol::SandboxPolicy;
use rein_tools::policy::WritableRoots;
use rein_tools::sandbox::{Sandbox, SandboxSpec};

async fn runs_despite_a_vanished_place(sandbox: Sandbox) {
    let root = super::outside_temp();
    let root = root.path().canonicalize().unwrap();
    let kept = root.join("repo/.git");
    std::fs::create_dir_all(&kept).unwrap();
    let spec = SandboxSpec {
        policy: SandboxPolicy::WorkspaceWrite,
        writable: WritableRoots {
            roots: vec![root.clone()],
            read_only: vec![root.join("gone/.git"), kept.clone()],
            unrestricted: false,
        },
        network: false,
    };
    let script = "echo ok > f && cat f && ! (echo x > repo/.git/config) 2>/dev/null";
    let argv = ["sh", "-c", script].map(str::to_owned);
    let output = sandbox
        .command(&spec, &argv, &root, &BTreeMap::new())
        .unwrap()
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{:?}: {stderr}", output.status);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "ok\n");
    // The place that is still there stays protected.
    assert!(!Path::new(&kept.join("config")).exists());
}

#[tokio::test]
async fn landlock_runs_a_command_whose_protected_place_vanished() {
    runs_despite_a_vanished_place(Sandbox::landlock().unwrap()).await;
}

#[tokio::test]
#[cfg_attr(
    not(rein_has_bwrap),
    ignore = "needs bubblewrap (scripts/test-setup.sh installs it)"
)]
async fn bubblewrap_runs_a_command_whose_protected_place_vanished() {
    let sandbox = Sandbox::bubblewrap().unwrap_or_else(|why| panic!("bubblewrap: {why}"));
    runs_despite_a_vanished_place(sandbox).await;
}
