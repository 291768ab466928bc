//! The catalogue of escape attempts: each a script the model could run, the sandbox
//! policy it runs under, and whether its control run (no sandbox) must succeed as this
//! user.

use super::*;

/// Whether the control run (no sandbox) of an attack must succeed as this user.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Control {
    Always,
    /// Needs a capability only root has: as another user the attack fails anyway.
    RootOnly,
}

pub(super) struct Attack {
    pub(super) name: &'static str,
    pub(super) policy: SandboxPolicy,
    pub(super) script: String,
    pub(super) control: Control,
}

pub(super) fn attack(name: &'static str, control: Control, script: impl Into<String>) -> Attack {
    Attack {
        name,
        policy: SandboxPolicy::WorkspaceWrite,
        script: script.into(),
        control,
    }
}

/// `python3 -c CODE`, quoted for bash.
pub(super) fn py(code: &str) -> String {
    format!("{} -c '{}'", python(), code.replace('\'', "'\\''"))
}

/// Write to `path` through a file handle, past any mount and path rule.
pub(super) fn by_handle(path: &str) -> String {
    py(&format!(
        r#"import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class H(ctypes.Structure):
    _fields_ = [("n", ctypes.c_uint), ("t", ctypes.c_int), ("b", ctypes.c_ubyte * 128)]
h = H(); h.n = 128; mount_id = ctypes.c_int()
if libc.name_to_handle_at(-100, b"{path}", ctypes.byref(h), ctypes.byref(mount_id), 0) != 0:
    sys.exit("name_to_handle_at: " + os.strerror(ctypes.get_errno()))
fd = libc.open_by_handle_at(os.open(".", os.O_RDONLY), ctypes.byref(h), os.O_WRONLY | os.O_APPEND)
if fd < 0:
    sys.exit("open_by_handle_at: " + os.strerror(ctypes.get_errno()))
os.write(fd, b"evil\n"); print("{PWNED}")"#
    ))
}

pub(super) fn unix_connect(address: &str) -> String {
    py(&format!(
        "import socket; s = socket.socket(socket.AF_UNIX); s.connect({address}); print(\"{PWNED}\")"
    ))
}

/// A process outside the sandbox, of the same user; killed when dropped.
pub(super) struct Bystander(pub(super) std::process::Child);

impl Bystander {
    pub(super) fn start() -> Self {
        Self(
            std::process::Command::new("sleep")
                .arg("3600")
                .env("REIN_BYSTANDER_SECRET", "hunter2")
                .spawn()
                .unwrap(),
        )
    }

    pub(super) fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(super) fn attacks(w: &World, bystander: u32) -> Vec<Attack> {
    let out = w.outside.display().to_string();
    let out_name = w
        .outside
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let port = w.listener.local_addr().unwrap().port();
    let setcap = ["/usr/sbin/setcap", "/sbin/setcap"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("setcap");
    let mut list = vec![
        attack(
            "outside by absolute path",
            Control::Always,
            format!("echo x > {out}/pwned && echo {PWNED}"),
        ),
        attack(
            "outside via ..",
            Control::Always,
            format!("echo x > ../{out_name}/pwned && echo {PWNED}"),
        ),
        attack(
            "outside via a symlink",
            Control::Always,
            format!("echo x > out-link/pwned && echo {PWNED}"),
        ),
        attack(
            "outside from a grandchild",
            Control::Always,
            format!("bash -c 'sh -c \"echo x > {out}/pwned\"' && echo {PWNED}"),
        ),
        attack(
            "into .git",
            Control::Always,
            format!("echo evil >> .git/config && echo {PWNED}"),
        ),
        attack(
            "new file in .git",
            Control::Always,
            format!("echo evil > .git/hooks-pwned && echo {PWNED}"),
        ),
        attack(
            "into .git via ..",
            Control::Always,
            format!("echo evil >> src/../.git/config && echo {PWNED}"),
        ),
        attack(
            "into a nested .git",
            Control::Always,
            format!("echo evil >> sub/.git/config && echo {PWNED}"),
        ),
        attack(
            "into a gitdir: target",
            Control::Always,
            format!("echo evil >> repos/main.git/worktrees/wt/HEAD && echo {PWNED}"),
        ),
        attack(
            "into a worktree's common dir",
            Control::Always,
            format!("echo evil >> repos/main.git/config && echo {PWNED}"),
        ),
        attack(
            "redirect a .git file",
            Control::Always,
            format!("echo 'gitdir: /tmp' > wt/.git && echo {PWNED}"),
        ),
        attack(
            "network socket",
            Control::Always,
            format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo {PWNED}"),
        ),
        attack(
            "chmod outside",
            Control::Always,
            format!("chmod 600 {out}/file.txt && echo {PWNED}"),
        ),
        attack(
            "utime outside",
            Control::Always,
            format!("touch -d 2001-01-01 {out}/file.txt && echo {PWNED}"),
        ),
        attack(
            "xattr outside",
            Control::Always,
            format!(
                "{} && echo {PWNED}",
                py(&format!(
                    "import os; os.setxattr(\"{out}/file.txt\", \"user.rein\", b\"1\")"
                ))
            ),
        ),
        attack(
            "chown outside",
            Control::Always,
            format!("chown 65534:65534 {out}/file.txt && echo {PWNED}"),
        ),
        attack(
            "setuid bit outside",
            Control::Always,
            format!("chmod u+s {out}/file.txt && echo {PWNED}"),
        ),
        attack(
            "setuid bit in the workspace",
            Control::Always,
            format!("cp /bin/true src/suid && chmod 4755 src/suid && echo {PWNED}"),
        ),
        attack(
            "setuid file created in the workspace",
            Control::Always,
            format!(
                "{} && echo {PWNED}",
                py("import os; os.close(os.open(\"src/suid2\", os.O_CREAT | os.O_WRONLY, 0o4755))")
            ),
        ),
        attack(
            "block device node",
            Control::RootOnly,
            format!("mknod src/disk b 8 0 && echo {PWNED}"),
        ),
        attack(
            "file capability outside",
            Control::RootOnly,
            format!("{setcap} cap_net_raw+ep {out}/file.txt && echo {PWNED}"),
        ),
        attack(
            "file capability in the workspace",
            Control::RootOnly,
            format!(
                "cp /bin/true src/capped && {setcap} cap_net_raw+ep src/capped && echo {PWNED}"
            ),
        ),
        attack(
            "file handle into .git",
            Control::RootOnly,
            by_handle(".git/config"),
        ),
        attack(
            "read another process's environment",
            Control::Always,
            format!("grep -a hunter2 /proc/{bystander}/environ && echo {PWNED}"),
        ),
        attack(
            "pathname Unix socket",
            Control::Always,
            unix_connect(&format!("\"{out}/daemon.sock\"")),
        ),
        attack(
            "abstract Unix socket",
            Control::Always,
            unix_connect(&format!("\"\\0{}\"", w.abstract_name)),
        ),
    ];
    // Last: their controls take `.git` away.
    list.push(attack(
        "delete in .git",
        Control::Always,
        format!("rm .git/config && echo {PWNED}"),
    ));
    list.push(attack(
        "replace .git",
        Control::Always,
        format!("mv .git git-moved && echo {PWNED}"),
    ));
    for (name, script) in [
        (
            "chmod in read-only mode",
            format!("chmod 600 src/a.txt && echo {PWNED}"),
        ),
        (
            "utime in read-only mode",
            format!("touch -d 2001-01-01 src/a.txt && echo {PWNED}"),
        ),
        (
            "xattr in read-only mode",
            format!(
                "{} && echo {PWNED}",
                py("import os; os.setxattr(\"src/a.txt\", \"user.rein\", b\"1\")")
            ),
        ),
        (
            "write in read-only mode",
            format!("echo x > src/b.txt && echo {PWNED}"),
        ),
    ] {
        list.push(Attack {
            name,
            policy: SandboxPolicy::ReadOnly,
            script,
            control: Control::Always,
        });
    }
    list
}
