//! Running a suite again as an unprivileged user. CI runs as root, but users rarely do: as
//! `nobody` the sandbox enters a user namespace, a supervisor cannot signal other users'
//! processes, and a directory another user owns is out of reach. A test that runs as root
//! reruns chosen tests of its own binary as `nobody` ([`rerun_as_nobody`]), through copies
//! of the test binary, the `rein` binary and the fixtures that `nobody` can reach (the
//! build may live under `/root`). The rerun tests find those copies through
//! [`fixtures`], [`outside_base`] and `mock_model::rein_bin` (`REIN_E2E_BIN`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// The uid and gid of `nobody`.
const NOBODY: u32 = 65534;

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1).map(|euid| euid == "0"))
        .unwrap()
}

/// The test fixtures (`tests/fixtures`): a copy `nobody` can read in a rerun
/// (`REIN_E2E_FIXTURES`), else the checkout's.
pub fn fixtures() -> PathBuf {
    std::env::var_os("REIN_E2E_FIXTURES").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures"),
        PathBuf::from,
    )
}

/// Where to make directories that the sandbox must not let a command write (outside the
/// temp dirs): in a rerun a directory `nobody` owns (`REIN_E2E_OUTSIDE`), else `default`
/// (a test's `CARGO_TARGET_TMPDIR`, which only the building user can write).
pub fn outside_base(default: &Path) -> PathBuf {
    std::env::var_os("REIN_E2E_OUTSIDE").map_or_else(|| default.to_path_buf(), PathBuf::from)
}

/// Run `test` (a function of the module `module_path`, i.e. `module_path!()` at the
/// caller, marked `#[ignore]`) of the running test binary as `nobody`, with its own temp
/// dir and home, and return how it exited. Everything it needs is copied under a fresh
/// directory of `/var/tmp` (reachable by anyone, outside the temp dir that workspace-write
/// leaves writable), removed afterwards. Must run as root.
pub fn rerun_as_nobody(module_path: &str, test: &str) -> ExitStatus {
    assert!(is_root(), "only root can rerun a test as nobody");
    let base = tempfile::tempdir_in("/var/tmp").unwrap();
    let (tmp, outside) = (base.path().join("tmp"), base.path().join("outside"));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let copied_fixtures = base.path().join("fixtures");
    let copy = Command::new("cp")
        .arg("-r")
        .arg(fixtures())
        .arg(&copied_fixtures)
        .status()
        .unwrap();
    assert!(copy.success(), "copying the fixtures: {copy}");
    let runner = base.path().join("runner");
    let rein = base.path().join("rein");
    std::fs::copy(std::env::current_exe().unwrap(), &runner).unwrap();
    std::fs::copy(crate::mock_model::rein_bin(), &rein).unwrap();
    let chown = Command::new("chown")
        .arg("-R")
        .arg(format!("{NOBODY}:{NOBODY}"))
        .arg(base.path())
        .status()
        .unwrap();
    assert!(chown.success(), "chown: {chown}");
    Command::new("setpriv")
        .arg(format!("--reuid={NOBODY}"))
        .arg(format!("--regid={NOBODY}"))
        .args(["--clear-groups", "--"])
        .arg(&runner)
        .args([
            "--exact",
            // Its full name in the test binary (the module path without the crate).
            &crate::test_name(module_path, test),
            "--ignored",
            "--test-threads=1",
        ])
        .env("TMPDIR", &tmp)
        .env("HOME", &tmp)
        .env("REIN_E2E_BIN", &rein)
        .env("REIN_E2E_FIXTURES", &copied_fixtures)
        .env("REIN_E2E_OUTSIDE", &outside)
        .status()
        .unwrap()
}
