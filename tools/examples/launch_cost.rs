//! The per-command launch cost of a sandboxed command on its own (issue 29, item 1): N
//! sequential `/bin/true` through `Sandbox::command` + `exec::run`, from a process made to
//! look like a loaded server (resident ballast and idle threads), launched the older way
//! (fork with a `pre_exec` hook) and through the trampoline (rein's binary, spawned with
//! `posix_spawn`). Prints wall time and CPU (this process, and its reaped children) per
//! command, and an unsandboxed `posix_spawn` of `/bin/true` as the floor.
//!
//! `cargo run --release -p rein-tools --example launch_cost -- \
//!     --trampoline target/release/rein [--commands 200] [--ballast-mib 1024] [--threads 64]`
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rein_protocol::{SandboxOptions, SandboxPolicy};
use rein_tools::process::exec::{self, ExecLimits};
use rein_tools::sandbox::{launch, Sandbox, SandboxSpec};
use tokio_util::sync::CancellationToken;

struct Args {
    trampoline: PathBuf,
    commands: u32,
    ballast_mib: usize,
    threads: usize,
}

fn args() -> Args {
    let mut args = Args {
        trampoline: PathBuf::from("target/release/rein"),
        commands: 200,
        ballast_mib: 1024,
        threads: 64,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().expect("every flag takes a value");
        match flag.as_str() {
            "--trampoline" => {
                args.trampoline = std::fs::canonicalize(&value).expect("--trampoline PATH");
            }
            "--commands" => args.commands = value.parse().expect("--commands N"),
            "--ballast-mib" => args.ballast_mib = value.parse().expect("--ballast-mib N"),
            "--threads" => args.threads = value.parse().expect("--threads N"),
            other => panic!("unknown flag {other}"),
        }
    }
    args
}

/// CPU seconds of this process and of its reaped children.
fn cpu() -> (f64, f64) {
    let usage = |who| {
        // SAFETY: getrusage writes into the struct we pass.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut u) };
        let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        t(u.ru_utime) + t(u.ru_stime)
    };
    (usage(libc::RUSAGE_SELF), usage(libc::RUSAGE_CHILDREN))
}

async fn measure(label: &str, n: u32, mut make: impl FnMut() -> tokio::process::Command) {
    let limits = ExecLimits {
        timeout: Duration::from_secs(30),
        output_cap: 4096,
    };
    let cancel = CancellationToken::new();
    let (self0, children0) = cpu();
    let started = Instant::now();
    for _ in 0..n {
        let outcome = exec::run(make(), limits, &cancel, &mut |_| {})
            .await
            .unwrap();
        assert!(outcome.exit.success(), "{label}: {outcome:?}");
    }
    let wall = started.elapsed().as_secs_f64();
    let (self1, children1) = cpu();
    let per = |s: f64| s / f64::from(n) * 1000.0;
    println!(
        "{label:28} wall {:6.2} ms/cmd   CPU: launcher {:6.2} ms/cmd, children {:6.2} ms/cmd",
        per(wall),
        per(self1 - self0),
        per(children1 - children0)
    );
}

fn main() {
    let args = args();
    // Resident memory whose page tables a fork copies, and threads as a server has.
    let mut ballast = vec![0u8; args.ballast_mib << 20];
    for page in ballast.chunks_mut(4096) {
        page[0] = 1;
    }
    let (_keep, idle) = std::sync::mpsc::channel::<()>();
    let idle = std::sync::Arc::new(std::sync::Mutex::new(idle));
    for _ in 0..args.threads {
        let idle = std::sync::Arc::clone(&idle);
        std::thread::spawn(move || drop(idle.lock().map(|rx| rx.recv())));
    }
    let cwd = tempfile::tempdir().unwrap();
    let spec = SandboxSpec::new(
        SandboxPolicy::WorkspaceWrite,
        cwd.path(),
        &SandboxOptions::default(),
    );
    let sandbox = Sandbox::landlock().expect("Landlock");
    let env = BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]);
    let argv = vec!["/bin/true".to_owned()];
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "# {} sequential /bin/true, {} MiB resident ballast, {} idle threads",
        args.commands, args.ballast_mib, args.threads
    );
    runtime.block_on(async {
        let mut plain = || exec::command(&argv, cwd.path(), &env).unwrap();
        measure("unsandboxed posix_spawn", args.commands, &mut plain).await;
        let mut sandboxed = || sandbox.command(&spec, &argv, cwd.path(), &env).unwrap();
        measure("sandboxed, fork + pre_exec", args.commands, &mut sandboxed).await;
        launch::launch_through(args.trampoline.clone()).unwrap();
        measure("sandboxed, trampoline", args.commands, &mut sandboxed).await;
    });
    std::hint::black_box(&ballast);
}
