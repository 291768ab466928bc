//! The syscall filter every sandboxed command runs under, compiled in the parent;
//! installing it in the child is one syscall per program.
//!
//! Denied with EPERM, whatever the command's credentials:
//! - device nodes (`mknod`/`mknodat` of a character or block device; FIFOs and sockets
//!   stay allowed);
//! - file handles (`open_by_handle_at`, which opens an inode past every path rule, and
//!   `name_to_handle_at`);
//! - changing the mount table or entering or creating namespaces after setup (`mount`,
//!   the new mount API, `pivot_root`, `unshare`, `setns`, `clone` with a namespace flag);
//! - the kernel's own state: modules, kexec, `bpf`, `perf_event_open`, keyrings,
//!   `userfaultfd`, `io_uring` (which could run every other call around this filter),
//!   swap, reboot, accounting, clocks, quotas;
//! - setting the setuid or setgid bit (`chmod` family, `open`/`creat` with `O_CREAT`): a
//!   root-owned setuid file planted in the workspace would work for anyone later;
//! - terminal input injection (`ioctl` `TIOCSTI`, `TIOCLINUX`);
//! - without network access, `socket` of any family, Unix-domain included (pathname and
//!   abstract sockets reach daemons outside the sandbox); `socketpair` stays allowed.
//!
//! `clone3` and `openat2` answer ENOSYS, not EPERM: their flags and mode sit in memory a
//! filter cannot read, and libc falls back to `clone` and `openat`, which it checks.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::SandboxError;

/// The programs to install, in order.
#[derive(Clone, Debug)]
pub struct Filters {
    pub programs: Vec<BpfProgram>,
}

fn setup(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Setup(format!("seccomp: {e}"))
}

/// Conditions compare the low 32 bits: every argument checked here is an `int` (or, for
/// `ioctl`, a request the kernel truncates to one), so garbage in the high half must not
/// slip past an exact comparison.
fn masked(arg: u8, mask: u64, value: u64) -> Result<SeccompCondition, SandboxError> {
    SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(mask),
        value,
    )
    .map_err(setup)
}

fn equals(arg: u8, value: u64) -> Result<SeccompCondition, SandboxError> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value).map_err(setup)
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, SandboxError> {
    SeccompRule::new(conditions).map_err(setup)
}

/// `mknod*` of a device: `(mode & S_IFMT)` is `S_IFCHR` or `S_IFBLK`.
fn device_modes(mode_arg: u8) -> Result<Vec<SeccompRule>, SandboxError> {
    let fmt = u64::from(libc::S_IFMT);
    Ok(vec![
        rule(vec![masked(mode_arg, fmt, u64::from(libc::S_IFCHR))?])?,
        rule(vec![masked(mode_arg, fmt, u64::from(libc::S_IFBLK))?])?,
    ])
}

/// `fchmodat2`, the same number on every architecture (libc lacks it on some).
const SYS_FCHMODAT2: libc::c_long = 452;

/// A mode argument carrying the setuid or setgid bit.
fn privileged_mode(mode_arg: u8) -> Result<Vec<SeccompRule>, SandboxError> {
    let bits = [u64::from(libc::S_ISUID), u64::from(libc::S_ISGID)];
    bits.iter()
        .map(|&bit| rule(vec![masked(mode_arg, bit, bit)?]))
        .collect()
}

/// `open*` creating a file with the setuid or setgid bit.
fn privileged_create(flags_arg: u8, mode_arg: u8) -> Result<Vec<SeccompRule>, SandboxError> {
    let create = libc::O_CREAT as u64;
    let bits = [u64::from(libc::S_ISUID), u64::from(libc::S_ISGID)];
    bits.iter()
        .map(|&bit| {
            rule(vec![
                masked(flags_arg, create, create)?,
                masked(mode_arg, bit, bit)?,
            ])
        })
        .collect()
}

/// Flags that make `clone` create a namespace.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];

/// Syscalls denied outright.
fn denied_outright() -> Vec<libc::c_long> {
    let mut calls = vec![
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_chroot,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_reboot,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_settimeofday,
        libc::SYS_clock_settime,
        libc::SYS_clock_adjtime,
        libc::SYS_adjtimex,
        libc::SYS_sethostname,
        libc::SYS_setdomainname,
        libc::SYS_fanotify_init,
        libc::SYS_vhangup,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_iopl, libc::SYS_ioperm, libc::SYS_uselib]);
    calls
}

/// The filters for this machine's architecture; `network` keeps `socket` allowed.
pub fn filters(network: bool) -> Result<Filters, SandboxError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(setup)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = denied_outright()
        .into_iter()
        .map(|call| (call, Vec::new()))
        .collect();
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_mknod, device_modes(1)?);
    rules.insert(libc::SYS_mknodat, device_modes(2)?);
    #[cfg(target_arch = "x86_64")]
    {
        rules.insert(libc::SYS_chmod, privileged_mode(1)?);
        rules.insert(libc::SYS_creat, privileged_mode(1)?);
        rules.insert(libc::SYS_open, privileged_create(1, 2)?);
    }
    rules.insert(libc::SYS_fchmod, privileged_mode(1)?);
    rules.insert(libc::SYS_fchmodat, privileged_mode(2)?);
    rules.insert(SYS_FCHMODAT2, privileged_mode(2)?);
    rules.insert(libc::SYS_openat, privileged_create(2, 3)?);
    // The request's type differs between architectures.
    #[allow(clippy::unnecessary_cast)]
    rules.insert(
        libc::SYS_ioctl,
        vec![
            rule(vec![equals(1, libc::TIOCSTI)?])?,
            rule(vec![equals(1, libc::TIOCLINUX)?])?,
        ],
    );
    let clone_flags = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            let flag = u64::from(flag as u32);
            rule(vec![masked(0, flag, flag)?])
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, clone_flags);
    if !network {
        rules.insert(libc::SYS_socket, Vec::new());
    }
    let deny = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(setup)?;
    let no_clone3 = SeccompFilter::new(
        BTreeMap::from([
            (libc::SYS_clone3, Vec::new()),
            (libc::SYS_openat2, Vec::new()),
        ]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(setup)?;
    Ok(Filters {
        programs: vec![
            deny.try_into().map_err(setup)?,
            no_clone3.try_into().map_err(setup)?,
        ],
    })
}

impl Filters {
    /// Install every program on the calling thread. Async-signal-safe: for `pre_exec`.
    pub fn install(&self) -> std::io::Result<()> {
        for program in &self.programs {
            let len = u16::try_from(program.len())
                .map_err(|_| std::io::Error::from_raw_os_error(libc::E2BIG))?;
            let prog = libc::sock_fprog {
                len,
                filter: program.as_ptr().cast_mut().cast(),
            };
            // SAFETY: the kernel copies the program, which outlives the call.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0,
                    &prog as *const libc::sock_fprog,
                )
            };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// The programs as the raw `struct sock_filter` bytes `bwrap --add-seccomp-fd` reads.
    pub fn raw_programs(&self) -> Vec<Vec<u8>> {
        self.programs
            .iter()
            .map(|program| {
                let mut bytes = Vec::with_capacity(program.len() * 8);
                for insn in program {
                    bytes.extend_from_slice(&insn.code.to_ne_bytes());
                    bytes.push(insn.jt);
                    bytes.push(insn.jf);
                    bytes.extend_from_slice(&insn.k.to_ne_bytes());
                }
                bytes
            })
            .collect()
    }
}
