//! Executables a test makes (a copy of a binary, a hook script) written by a child
//! process, never by the test itself.
//!
//! Why: a test binary runs tests on several threads. A file the test process holds open for
//! writing is inherited by every child another thread forks in that moment, and stays open
//! in it until that child execs. Running the file then fails with `ETXTBSY` ("Text file
//! busy"), which CI hit once. A child process that writes the file and exits leaves no
//! writable descriptor of it in the test process to inherit.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// An executable copy of `src` at `dst` (mode 0755), copied by `install(1)`.
pub fn install_executable(src: &Path, dst: &Path) {
    let status = Command::new("install")
        .arg("-m")
        .arg("0755")
        .arg(src)
        .arg(dst)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "install {} {}",
        src.display(),
        dst.display()
    );
}

/// An executable file at `path` (mode 0755) holding `content`, written by `sh`.
pub fn write_executable(path: &Path, content: &str) {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(r#"cat >"$0" && chmod 0755 "$0""#)
        .arg(path)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(content.as_bytes()).unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "writing {}", path.display());
}
