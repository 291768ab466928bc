//! The network block: a seccomp filter that makes creating any socket other than a Unix
//! domain socket fail with EPERM (and io_uring, which could open sockets around it).
//! Compiled in the parent; installing it in the child is one syscall.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::SandboxError;

/// The compiled filter for this machine's architecture.
pub fn network_block() -> Result<BpfProgram, SandboxError> {
    let setup = |e: seccompiler::BackendError| SandboxError::Setup(format!("seccomp: {e}"));
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| SandboxError::Setup(format!("seccomp: {e}")))?;
    let not_unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        libc::AF_UNIX as u64,
    )
    .map_err(setup)?;
    let rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::from([
        (
            libc::SYS_socket,
            vec![SeccompRule::new(vec![not_unix]).map_err(setup)?],
        ),
        (libc::SYS_io_uring_setup, Vec::new()),
    ]);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(setup)?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| setup(e))
}

/// Install `program` on the calling thread. Async-signal-safe: meant for `pre_exec`.
pub fn install(program: &BpfProgram) -> std::io::Result<()> {
    seccompiler::apply_filter(program).map_err(|e| std::io::Error::other(e.to_string()))
}
