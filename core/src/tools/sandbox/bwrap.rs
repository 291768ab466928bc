//! The fallback mechanism: `bwrap` (bubblewrap) builds the same confinement from mount
//! namespaces — the whole file system read-only, writable roots bound read-write, `.git`
//! re-bound read-only, and a private network namespace unless network is allowed.

use std::path::{Path, PathBuf};

use super::SandboxSpec;

/// Where `bwrap` is, if it is on PATH.
pub fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| candidate.is_file())
}

/// The argv that runs `argv` under bubblewrap, confined to `spec`.
pub fn wrap(bwrap: &Path, spec: &SandboxSpec, cwd: &Path, argv: &[String]) -> Vec<String> {
    let mut out: Vec<String> = vec![bwrap.display().to_string()];
    let mut push = |args: &[&str]| out.extend(args.iter().map(|a| (*a).to_owned()));
    // No --new-session: the command must stay in the process group we kill.
    push(&[
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--unshare-pid",
        "--proc",
        "/proc",
        "--die-with-parent",
    ]);
    if !spec.network {
        push(&["--unshare-net"]);
    }
    for root in &spec.writable.roots {
        let root = root.display().to_string();
        push(&["--bind", &root, &root]);
    }
    for place in &spec.writable.read_only {
        let place = place.display().to_string();
        push(&["--ro-bind", &place, &place]);
    }
    let cwd = cwd.display().to_string();
    push(&["--chdir", &cwd, "--"]);
    out.extend(argv.iter().cloned());
    out
}
