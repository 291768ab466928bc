//! A replay's confinement: the recorded workspace's paths rewritten to the scratch copy's
//! and back (`rein_bootstrap::replay::workspace`), and the policy a live replay runs under
//! (`rein_bootstrap::replay::policy`).

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use rein_bootstrap::replay::workspace::Rewrite;
use rein_bootstrap::replay::LivePolicy;
use rein_core::tools::{ToolCall, ToolResult};
use rein_protocol::{ApprovalPolicy, SandboxOptions, SandboxPolicy, ThreadSettings, ToolOutcome};

#[test]
fn only_whole_paths_are_swapped() {
    let swap = |text: &str, to: &str| {
        let call = ToolCall {
            call_id: "c".into(),
            name: "shell".into(),
            arguments: text.into(),
        };
        Rewrite::new(Path::new("/w"), Path::new(to))
            .call_to_scratch(call)
            .arguments
    };
    assert_eq!(swap("cat /w/a.txt", "/s/x"), "cat /s/x/a.txt");
    assert_eq!(swap("cd /w && ls /w", "/s"), "cd /s && ls /s");
    assert_eq!(swap("/work /a/w /w2 /w.bak", "/s"), "/work /a/w /w2 /w.bak");
    assert_eq!(swap("\"/w\"", "/s"), "\"/s\"");
    // A diff's header puts `b/` before an absolute path.
    assert_eq!(swap("+++ b//w/a", "/s"), "+++ b//s/a");
}

#[test]
fn a_call_goes_to_the_copy_and_its_result_comes_back() {
    let rewrite = Rewrite::new(Path::new("/home/me/p"), Path::new("/tmp/r/p"));
    let call = ToolCall {
        call_id: "c".into(),
        name: "shell".into(),
        arguments: r#"{"command":["cat","/home/me/p/a"],"workdir":"/home/me/p"}"#.into(),
    };
    assert_eq!(
        rewrite.call_to_scratch(call).arguments,
        r#"{"command":["cat","/tmp/r/p/a"],"workdir":"/tmp/r/p"}"#
    );
    let result = ToolResult::new(
        r#"{"output":"/tmp/r/p/a\n"}"#,
        true,
        ToolOutcome::Exited {
            exit: rein_protocol::ExitStatus::Code { code: 0 },
            output: "/tmp/r/p/a\n".into(),
        },
    );
    let back = rewrite.result_to_recorded(result);
    assert_eq!(back.output, r#"{"output":"/home/me/p/a\n"}"#);
    assert_eq!(back.outcome.shown_text(), Some("/home/me/p/a\n"));
    assert_eq!(
        rewrite.path_to_scratch(Path::new("/home/me/p/sub")),
        Some(PathBuf::from("/tmp/r/p/sub"))
    );
    assert_eq!(rewrite.path_to_scratch(Path::new("/home/me/q")), None);
}

fn settings(sandbox: SandboxPolicy, approval: ApprovalPolicy) -> ThreadSettings {
    ThreadSettings {
        model: "m".to_owned(),
        cwd: PathBuf::from("/w"),
        approval_policy: approval,
        sandbox_policy: sandbox,
        sandbox_options: Some(SandboxOptions {
            writable_roots: vec![PathBuf::from("/w/out"), PathBuf::from("/")],
            network_access: true,
            ..SandboxOptions::default()
        }),
        reasoning_effort: None,
        budget: Default::default(),
        instructions: String::new(),
    }
}

#[test]
fn a_recording_never_loosens_the_policy_it_replays_under() {
    let policy = LivePolicy::default();
    let full = settings(SandboxPolicy::DangerFullAccess, ApprovalPolicy::OnRequest);
    let confined = policy.confine(full, Path::new("/w"));
    assert_eq!(confined.sandbox_policy, SandboxPolicy::WorkspaceWrite);
    assert_eq!(confined.approval_policy, ApprovalPolicy::Never);
    assert_eq!(
        confined.sandbox_options,
        Some(SandboxOptions {
            writable_roots: vec![PathBuf::from("/w/out")],
            ..SandboxOptions::default()
        })
    );
    let read_only = settings(SandboxPolicy::ReadOnly, ApprovalPolicy::Untrusted);
    let kept = policy.confine(read_only, Path::new("/w"));
    assert_eq!(kept.sandbox_policy, SandboxPolicy::ReadOnly);
    assert_eq!(kept.approval_policy, ApprovalPolicy::Never);
}
