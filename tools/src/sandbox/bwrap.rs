//! The fallback mechanism: `bwrap` (bubblewrap) builds the same confinement from
//! namespaces where Landlock is unavailable — the whole file system read-only, writable
//! roots bound read-write, every read-only place re-bound read-only, a fresh `/dev` and
//! `/proc`, a PID namespace that dies with bwrap, a session of its own, no capabilities,
//! no-new-privs, rein's seccomp filters (`--add-seccomp-fd`), and a private network
//! namespace unless network is allowed. What bwrap cannot give: Landlock's scopes (a PID
//! namespace stands in for the signal scope; the seccomp filter and the network namespace
//! for the abstract-socket scope).

use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

use super::SandboxSpec;

/// Where `bwrap` is, if it is on PATH.
pub fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| candidate.is_file())
}

/// The argv that runs `argv` under bubblewrap, confined to `spec`; `seccomp_fds` are
/// descriptors the child inherits, each holding one compiled filter.
pub fn wrap(
    bwrap: &Path,
    spec: &SandboxSpec,
    cwd: &Path,
    argv: &[String],
    seccomp_fds: &[RawFd],
) -> Vec<String> {
    let mut out: Vec<String> = vec![bwrap.display().to_string()];
    let mut push = |args: &[&str]| out.extend(args.iter().map(|a| (*a).to_owned()));
    push(&[
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-pid",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]);
    if !spec.network {
        push(&["--unshare-net"]);
    }
    for root in &spec.writable.roots {
        if root.is_dir() {
            let root = root.display().to_string();
            push(&["--bind", &root, &root]);
        }
    }
    // `-try`: a protected place found when the spec was made may be gone by now (another
    // process removed its repository in the shared temp dir); bubblewrap would refuse to
    // start the command. Nothing is there to protect then, as for a place made later.
    for place in &spec.writable.read_only {
        let place = place.display().to_string();
        push(&["--ro-bind-try", &place, &place]);
    }
    for fd in seccomp_fds {
        push(&["--add-seccomp-fd", &fd.to_string()]);
    }
    let cwd = cwd.display().to_string();
    push(&["--chdir", &cwd, "--"]);
    out.extend(argv.iter().cloned());
    out
}
