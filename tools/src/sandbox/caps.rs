//! Dropping every capability before exec: the bounding set (so no later exec, not even of
//! a setuid-root or file-capability binary, can gain one), the ambient set, and the
//! effective, permitted and inheritable sets; and the securebits that stop root from
//! regaining the full set on exec. A sandboxed command run by root is then root in name
//! only: it owns root's files, and nothing else.

use std::io;

/// The highest capability number this kernel knows, read in the parent.
pub fn last_cap() -> i32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(63)
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Drop everything. `privileged`: the caller holds CAP_SETPCAP (root, or any process in a
/// user namespace it created), so failing to empty the bounding set is an error; an
/// unprivileged caller without a namespace has nothing to drop there.
pub fn drop_all(last_cap: i32, privileged: bool) -> io::Result<()> {
    for cap in 0..=last_cap {
        // SAFETY: prctl with integer arguments.
        let r = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
        if r != 0 {
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINVAL) => break,
                _ if privileged => return Err(err),
                _ => break,
            }
        }
    }
    let bits = libc::SECBIT_NOROOT
        | libc::SECBIT_NOROOT_LOCKED
        | libc::SECBIT_NO_SETUID_FIXUP
        | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
        | libc::SECBIT_KEEP_CAPS_LOCKED
        | libc::SECBIT_NO_CAP_AMBIENT_RAISE
        | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_SECUREBITS, bits as libc::c_ulong, 0, 0, 0) } != 0
        && privileged
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: prctl with integer arguments; EINVAL on kernels without ambient sets.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        );
    }
    let header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads the header and two data structs we own.
    if unsafe { libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
