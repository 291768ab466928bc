//! Detection by doing: each mechanism is trusted only after it has confined a real
//! short-lived process on this machine.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rein_protocol::SandboxPolicy;

use super::{bwrap, Confinement, SandboxSpec};
use crate::tools::policy::WritableRoots;

/// Confine `true` with Landlock + seccomp; with `read_only_place`, also bind a directory
/// read-only in a private mount namespace.
pub fn landlock(abi: i32, read_only_place: bool) -> Result<(), String> {
    // Unique per probe: detection may run on several threads at once.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let scratch =
        std::env::temp_dir().join(format!("rein-sandbox-probe-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let spec = SandboxSpec {
        policy: SandboxPolicy::WorkspaceWrite,
        writable: WritableRoots {
            roots: vec![scratch.clone()],
            read_only: if read_only_place {
                vec![scratch.clone()]
            } else {
                Vec::new()
            },
            unrestricted: false,
        },
        network: false,
    };
    let result = Confinement::new(abi, read_only_place, &spec)
        .map_err(|e| e.to_string())
        .and_then(|confinement| {
            let mut cmd = std::process::Command::new("/bin/sh");
            cmd.args(["-c", "exit 0"]);
            // SAFETY: as in `Sandbox::command`, the hook only makes syscalls.
            unsafe {
                cmd.pre_exec(move || confinement.apply());
            }
            run(cmd)
        });
    let _ = std::fs::remove_dir(&scratch);
    result
}

pub fn bubblewrap(program: &Path) -> Result<(), String> {
    let spec = SandboxSpec {
        policy: SandboxPolicy::ReadOnly,
        writable: WritableRoots {
            roots: Vec::new(),
            read_only: Vec::new(),
            unrestricted: false,
        },
        network: false,
    };
    let argv = bwrap::wrap(
        program,
        &spec,
        Path::new("/"),
        &["/bin/sh".into(), "-c".into(), "exit 0".into()],
    );
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    run(cmd)
}

fn run(mut cmd: std::process::Command) -> Result<(), String> {
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let out = cmd.output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "probe exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
