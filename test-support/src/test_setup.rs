//! What `scripts/test-setup.sh` installs under the repository (npm packages, a Python
//! venv): found there, or installed by running the script first.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// `relative` (under the repository root), running `scripts/test-setup.sh` first if it is
/// missing; fails the test if it is still missing then. Callers are ignored where the
/// script's own prerequisite is missing (`rein_has_node`, see scripts/test_prereqs.rs).
pub fn installed(relative: &str) -> PathBuf {
    // One run of the script at a time: tests of one binary run on parallel threads, and two
    // npm installs into one directory leave it broken.
    static SETUP: Mutex<()> = Mutex::new(());
    let _one_at_a_time = SETUP.lock().unwrap_or_else(PoisonError::into_inner);
    let root = repo_root();
    let path = root.join(relative);
    if !path.exists() {
        let status = std::process::Command::new(root.join("scripts/test-setup.sh"))
            .status()
            .unwrap();
        assert!(status.success(), "scripts/test-setup.sh failed");
    }
    assert!(
        path.exists(),
        "scripts/test-setup.sh did not install {relative}"
    );
    path
}
