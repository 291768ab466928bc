//! The file-system half of the Linux sandbox: a Landlock ruleset that lets the command
//! read everywhere and write only beneath its writable roots (plus a few device files
//! like `/dev/null`). The ruleset is built in the parent; the child only calls
//! `landlock_restrict_self` on its descriptor, which children of the command inherit.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use landlock::{
    path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, ABI,
};

use super::SandboxError;
use crate::tools::policy::WritableRoots;

/// Device files any shell expects to write.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// The Landlock ABI version the kernel supports, or why it supports none.
pub fn kernel_abi() -> Result<i32, String> {
    // SAFETY: the version query takes no pointer the kernel writes to.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    if version < 1 {
        let err = std::io::Error::last_os_error();
        return Err(format!("Landlock is not available in this kernel ({err})"));
    }
    i32::try_from(version).map_err(|_| "unexpected Landlock ABI version".to_owned())
}

/// Where the command may write. A root holding a read-only place (its `.git`) is granted
/// child by child, skipping that place, when no mount namespace can make it read-only.
pub fn write_targets(writable: &WritableRoots, split_around_read_only: bool) -> Vec<PathBuf> {
    let mut targets = Vec::new();
    for root in &writable.roots {
        let shielded: Vec<&PathBuf> = writable
            .read_only
            .iter()
            .filter(|ro| ro.parent() == Some(root.as_path()))
            .collect();
        if !split_around_read_only || shielded.is_empty() {
            targets.push(root.clone());
            continue;
        }
        if let Ok(entries) = std::fs::read_dir(root) {
            targets.extend(
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| !shielded.contains(&p)),
            );
        }
    }
    targets
}

/// A ruleset descriptor ready for `restrict_self` in the child.
pub fn ruleset(abi: i32, write_targets: &[PathBuf]) -> Result<OwnedFd, SandboxError> {
    let abi = ABI::from(abi);
    let setup = |e: landlock::RulesetError| SandboxError::Setup(format!("landlock: {e}"));
    let created = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(setup)?
        .create()
        .map_err(setup)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(setup)?
        .add_rules(path_beneath_rules(
            WRITABLE_DEVICES,
            AccessFs::from_all(abi),
        ))
        .map_err(setup)?
        .add_rules(path_beneath_rules(write_targets, AccessFs::from_all(abi)))
        .map_err(setup)?;
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| SandboxError::Setup("Landlock did not create a ruleset".to_owned()))
}

/// Confine the calling thread to `ruleset`. Async-signal-safe: meant for `pre_exec`.
pub fn restrict_self(ruleset: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: plain syscalls on a descriptor we own.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
