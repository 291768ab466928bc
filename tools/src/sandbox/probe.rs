//! Detection by doing: each mechanism is trusted only after it has confined a real
//! short-lived process on this machine, with a writable root holding a read-only place.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rein_protocol::SandboxPolicy;

use super::{bwrap, Confinement, SandboxSpec};
use crate::policy::WritableRoots;

/// A scratch root (with a read-only place inside) for one probe.
struct Scratch {
    root: std::path::PathBuf,
}

impl Scratch {
    fn new() -> Result<Self, String> {
        // Unique per probe: detection may run on several threads at once.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let root =
            std::env::temp_dir().join(format!("rein-sandbox-probe-{}-{n}", std::process::id()));
        std::fs::create_dir_all(root.join("ro")).map_err(|e| e.to_string())?;
        Ok(Self { root })
    }

    /// Without namespaces a read-only place is granted around, which forbids new files
    /// beside it: that probe only checks that the root is writable.
    fn spec(&self, read_only_place: bool) -> SandboxSpec {
        SandboxSpec {
            policy: SandboxPolicy::WorkspaceWrite,
            writable: WritableRoots {
                roots: vec![self.root.clone()],
                read_only: if read_only_place {
                    vec![self.root.join("ro")]
                } else {
                    Vec::new()
                },
                unrestricted: false,
            },
            network: false,
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// What the probe command checks: the root is writable, the read-only place is not.
const PROBE_SCRIPT: &str = "echo x > ok && ! (echo x > ro/no) 2>/dev/null";

/// Confine a shell with Landlock + seccomp (in namespaces, with their own `/proc`, as
/// asked) and check that it can write its root but not the read-only place.
pub fn landlock(abi: i32, namespaces: bool, fresh_proc: bool) -> Result<(), String> {
    let scratch = Scratch::new()?;
    let spec = scratch.spec(namespaces);
    let confinement = Confinement::new(abi, namespaces, fresh_proc, &spec, &scratch.root)
        .map_err(|e| e.to_string())?;
    let script = if namespaces {
        PROBE_SCRIPT
    } else {
        "echo x > ok"
    };
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", script]).current_dir(&scratch.root);
    // SAFETY: as in `Sandbox::command`, the hook only makes syscalls.
    unsafe {
        cmd.pre_exec(move || confinement.apply());
    }
    run(cmd)
}

pub fn bubblewrap(program: &Path) -> Result<(), String> {
    let scratch = Scratch::new()?;
    let argv = bwrap::wrap(
        program,
        &scratch.spec(true),
        &scratch.root,
        &["/bin/sh".into(), "-c".into(), PROBE_SCRIPT.into()],
        &[],
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
