// Included by the build scripts of crates whose tests need something beyond the Rust
// toolchain. Each prerequisite found sets a cfg, and a test that needs a missing one is
// compiled `#[cfg_attr(not(rein_has_node), ignore = "why")]`: the test list shows it
// ignored with its reason instead of a pass. Under CI (`CI` set) every cfg is set: CI
// installs the prerequisites (scripts/test-setup.sh), so there a missing one fails its test.
//
// The probes read the toolchain on PATH and the user building; a build script reruns when
// PATH or CI changes.

/// Whether a prerequisite is present.
type Probe = fn() -> bool;

/// The prerequisites a build script can probe, by cfg name.
const PREREQUISITES: &[(&str, Probe)] = &[
    // `node` and `npm` (the SDK and MCP interop tests install their packages with them).
    ("rein_has_node", || runs("node") && runs("npm")),
    // `python3` (the ACP Python SDK test installs its package into a venv with it).
    ("rein_has_python", || runs("python3")),
    // tmux (the Codex TUI test drives the TUI in it).
    ("rein_has_tmux", || {
        std::process::Command::new("tmux")
            .arg("-V")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }),
    // bubblewrap, the sandbox fallback.
    ("rein_has_bwrap", || runs("bwrap")),
    // Building (and so, normally, testing) as root: mounting a tmpfs, rerunning a suite
    // as `nobody`.
    ("rein_is_root", is_root),
];

fn runs(tool: &str) -> bool {
    std::process::Command::new(tool)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// Emits every prerequisite's cfg (declared for check-cfg, set when present or under CI).
fn probe_test_prerequisites() {
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-changed=build.rs");
    let ci = std::env::var_os("CI").is_some();
    for (cfg, present) in PREREQUISITES {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if ci || present() {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
