//! The file-system half of the Linux sandbox: a Landlock ruleset that lets the command
//! read everywhere and write only beneath its writable roots (plus a few device files
//! like `/dev/null`). From ABI 6 on it also scopes the command: no signal to a process
//! outside the sandbox, and (without network access) no connection to an abstract Unix
//! socket created outside it. The ruleset is built in the parent; the child only calls
//! `landlock_restrict_self` on its descriptor, which children of the command inherit.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use landlock::{
    path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};

use super::SandboxError;
use crate::policy::WritableRoots;

/// Device files any shell expects to write.
pub const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

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

/// Where the command may write. Without a mount namespace to make read-only places (each
/// `.git`) read-only, a root holding one is granted entry by entry around it, down the
/// path to it: nothing new can then be created directly in a directory on that path.
pub fn write_targets(writable: &WritableRoots, split_around_read_only: bool) -> Vec<PathBuf> {
    let mut targets = Vec::new();
    for root in &writable.roots {
        if split_around_read_only {
            grant_around(root, &writable.read_only, &mut targets);
        } else {
            targets.push(root.clone());
        }
    }
    targets
}

fn grant_around(dir: &std::path::Path, read_only: &[PathBuf], targets: &mut Vec<PathBuf>) {
    if read_only.iter().any(|ro| ro == dir) {
        return;
    }
    if !read_only.iter().any(|ro| ro.starts_with(dir)) {
        targets.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir {
            grant_around(&path, read_only, targets);
        } else if !read_only.contains(&path) {
            targets.push(path);
        }
    }
}

/// The scopes this ABI enforces for a command with or without network access.
pub fn scopes(abi: i32, network: bool) -> Vec<&'static str> {
    let mut names = Vec::new();
    if abi >= 6 {
        names.push("signal");
        if !network {
            names.push("abstract-unix-socket");
        }
    }
    names
}

/// A ruleset descriptor ready for `restrict_self` in the child.
pub fn ruleset(
    abi: i32,
    write_targets: &[PathBuf],
    network: bool,
) -> Result<OwnedFd, SandboxError> {
    let level = abi;
    let abi = ABI::from(abi);
    let setup = |e: landlock::RulesetError| SandboxError::Setup(format!("landlock: {e}"));
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(setup)?;
    if level >= 6 {
        let scope = if network {
            Scope::Signal.into()
        } else {
            Scope::Signal | Scope::AbstractUnixSocket
        };
        ruleset = ruleset.scope(scope).map_err(setup)?;
    }
    let created = ruleset
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

/// Confine the calling thread to `ruleset` (no-new-privs must be set). Async-signal-safe:
/// meant for `pre_exec`.
pub fn restrict_self(ruleset: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: plain syscalls on a descriptor we own.
    unsafe {
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
