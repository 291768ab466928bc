//! The probe's verdict, cached under rein's home so a start does not confine a probe
//! process before it can answer (`initialize` waits for the sandbox report).
//!
//! The verdict is keyed by what decides it: the kernel release, rein's binary (device,
//! inode, size, modification time), the effective uid, the sysctls that allow or forbid
//! unprivileged user namespaces, and the bubblewrap program found. A different key, a
//! missing or unreadable file: the probe runs, as before. A machine without any sandbox
//! is never cached, so it is looked at again at every start.
//!
//! A cached verdict is re-checked off the request path: when the first sandboxed command
//! of the process is launched (not at startup, so a short-lived process does not probe
//! at all), the probe runs on a background thread and, if it disagrees, rewrites the
//! cache (the next start uses it) and says so. A command that fails to confine
//! ([`command_failed_to_confine`]) drops the cache, so the next start probes.
//! A stale verdict cannot run a command unconfined: every mechanism fails closed (a
//! command whose confinement fails does not run), and "no sandbox" is never cached.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::{bwrap, Sandbox, Support};

/// The cache file, under rein's home.
pub const FILE: &str = "cache/sandbox-verdict.json";

/// Where a verdict came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The probe ran on the request path.
    Probed,
    /// Read from the cache; a background re-check may follow.
    Cached,
}

/// What the verdict depends on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Key {
    pub kernel: String,
    pub binary: String,
    pub euid: u32,
    pub userns: Vec<String>,
    pub bwrap: Option<String>,
}

impl Key {
    /// This process's key, from a few cheap reads.
    pub fn current() -> Self {
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .map(|s| format!("{path}={}", s.trim()))
                .unwrap_or_else(|_| format!("{path}=-"))
        };
        Self {
            kernel: rustix::system::uname()
                .release()
                .to_string_lossy()
                .into_owned(),
            binary: identity(Path::new("/proc/self/exe")),
            // SAFETY: geteuid cannot fail.
            euid: unsafe { libc::geteuid() },
            userns: [
                "/proc/sys/kernel/unprivileged_userns_clone",
                "/proc/sys/user/max_user_namespaces",
                "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            ]
            .into_iter()
            .map(read)
            .collect(),
            bwrap: bwrap::find().map(|p| identity(&p)),
        }
    }
}

/// A file named by what identifies its contents without reading them.
fn identity(path: &Path) -> String {
    match std::fs::metadata(path) {
        Ok(m) => format!(
            "{}:{}:{}:{}.{}",
            m.dev(),
            m.ino(),
            m.len(),
            m.mtime(),
            m.mtime_nsec()
        ),
        Err(_) => format!("{}: missing", path.display()),
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    key: Key,
    support: Support,
    fallbacks: Vec<String>,
}

static PROBES: AtomicU64 = AtomicU64::new(0);

/// How many times this process has probed (on the request path or in the background).
pub fn probes_run() -> u64 {
    PROBES.load(Ordering::SeqCst)
}

/// [`Sandbox::detect`], counted.
pub(crate) fn probe() -> Sandbox {
    PROBES.fetch_add(1, Ordering::SeqCst);
    Sandbox::detect()
}

/// The verdict cached in `home` for `key`, or the probe's (then cached).
pub fn load_or_probe(home: &Path, key: &Key) -> (Sandbox, Source) {
    let path = home.join(FILE);
    if let Some(sandbox) = load(&path, key) {
        tracing::info!("sandbox: verdict read from {}", path.display());
        return (sandbox, Source::Cached);
    }
    let sandbox = probe();
    tracing::info!("sandbox: probed ({})", sandbox.report().mechanism);
    store(&path, key, &sandbox);
    (sandbox, Source::Probed)
}

/// Probe again (a background thread calls this after a cached start) and rewrite the
/// cache if the verdict changed. Returns whether it did.
pub fn recheck(home: &Path, key: &Key, cached: &Sandbox) -> bool {
    let fresh = probe();
    if fresh.support == cached.support {
        return false;
    }
    tracing::warn!(
        "sandbox: the cached verdict ({}) is stale, this machine now gives {}; commands \
         that cannot be confined do not run, the next start uses the new verdict",
        cached.report().mechanism,
        fresh.report().mechanism
    );
    let path = home.join(FILE);
    if matches!(fresh.support, Support::Unavailable(_)) {
        let _ = std::fs::remove_file(&path);
    } else {
        store(&path, key, &fresh);
    }
    true
}

/// A cached verdict waiting for its re-check: rein's home, the key, the verdict.
type Pending = (PathBuf, Key, Sandbox);

static PENDING: Mutex<Option<Pending>> = Mutex::new(None);
static HAS_PENDING: AtomicBool = AtomicBool::new(false);

/// Re-check `cached` (read from `home` for `key`) once the first sandboxed command runs.
pub(crate) fn recheck_later(home: &Path, key: Key, cached: Sandbox) {
    *PENDING.lock().unwrap_or_else(PoisonError::into_inner) = Some((home.to_owned(), key, cached));
    HAS_PENDING.store(true, Ordering::SeqCst);
}

/// Start the pending re-check on a background thread, if one is pending.
pub(crate) fn recheck_if_pending() {
    if !HAS_PENDING.swap(false, Ordering::SeqCst) {
        return;
    }
    let pending = PENDING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some((home, key, cached)) = pending {
        std::thread::spawn(move || recheck(&home, &key, &cached));
    }
}

/// A command's confinement failed (the trampoline said so): drop the cached verdict of
/// `home`, so the next start probes this machine again.
pub fn command_failed_to_confine(home: &Path) {
    let path = home.join(FILE);
    if std::fs::remove_file(&path).is_ok() {
        tracing::warn!(
            "sandbox: a command could not be confined; the cached verdict {} is dropped",
            path.display()
        );
    }
}

fn load(path: &Path, key: &Key) -> Option<Sandbox> {
    let text = std::fs::read_to_string(path).ok()?;
    let stored: Stored = serde_json::from_str(&text).ok()?;
    if &stored.key != key || matches!(stored.support, Support::Unavailable(_)) {
        return None;
    }
    Some(Sandbox {
        support: stored.support,
        fallbacks: stored.fallbacks,
    })
}

/// Write the verdict (atomically: a temporary file renamed over), unless it is "none".
fn store(path: &Path, key: &Key, sandbox: &Sandbox) {
    if matches!(sandbox.support, Support::Unavailable(_)) {
        return;
    }
    let stored = Stored {
        key: key.clone(),
        support: sandbox.support.clone(),
        fallbacks: sandbox.fallbacks.clone(),
    };
    if let Err(e) = write_atomically(path, &stored) {
        tracing::warn!(
            "sandbox: cannot cache the verdict in {}: {e}",
            path.display()
        );
    }
}

fn write_atomically(path: &Path, stored: &Stored) -> std::io::Result<()> {
    let dir = path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    std::fs::create_dir_all(&dir)?;
    let tmp = dir.join(format!(".sandbox-verdict.{}.tmp", std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec_pretty(stored)?)?;
    std::fs::rename(&tmp, path)
}
