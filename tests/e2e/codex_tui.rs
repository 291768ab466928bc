//! The official Codex TUI (Codex CLI 0.169 from npm, `codex --remote ws://…`) against
//! `rein app-server --listen ws://127.0.0.1:0` with the scripted model, driven in tmux as
//! a user would: the prompt comes up without warnings, a plain turn shows its answer, an
//! approval offers Codex's choices, "don't ask again for commands that start with …" stops
//! the next such prompt (also after a resume from the rollout), Esc interrupts, /quit
//! ends, and `codex resume --remote` lists the session and continues it.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;
use rein_test_support::test_setup;
use rein_test_support::tmux;
use rein_test_support::ws_client;

use std::path::Path;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, MockModel};
use test_setup::installed;
use tmux::{sh_path, sh_quote, Tmux};
use ws_client::Killed;

/// How long the TUI may take to show what a step waits for (it starts in about a second;
/// the machine running the tests may be busy).
const SCREEN: Duration = Duration::from_secs(30);
/// The prompt's placeholder: the composer is empty and ready.
const PROMPT: &str = "Ask Codex to do anything";
const ASKED: &str = "Would you like to run the following command?";
const TOKEN: &str = "tui-test-token";

fn script() -> Value {
    let shell = |id: &str, script: &str, why: &str| {
        json!({ "tool_calls": [{ "call_id": id, "name": "shell", "arguments": {
            "command": ["bash", "-lc", script],
            "with_escalated_permissions": true, "justification": why } }] })
    };
    json!({
        "replies": [
            { "text": "Hello from rein, through the TUI." },
            shell("call_marker", r"printf 'reinbar-tui-%s\n' marker-ok", "print the marker"),
            { "text": "The command printed the marker." },
            shell("call_again", r"printf 'reinbar-tui-%s\n' marker-ok again", "print it again"),
            { "text": "Printed again without asking." },
            { "text": "Let me think about that slowly, very slowly, word by word.",
              "deltas": 60, "delay_ms": 500 },
            { "text": "Still here after the interrupt." },
            shell("call_third", r"printf 'reinbar-tui-%s\n' marker-ok third", "once more"),
            { "text": "Printed a third time without asking." }
        ],
        // The TUI names a thread with a request of its own, at a moment of its choosing.
        "asides": [{ "when_user_says": "Generate a concise, single-line task title",
                     "reply": { "text": "{\"title\": \"Greeting through rein\"}" } }],
        "when_exhausted": "error"
    })
}

/// `rein app-server` on a free port in `cwd` (where `thread/start {cwd: null}` runs),
/// requiring `TOKEN`; unloading a thread as soon as nobody is subscribed, so a resume
/// folds it from its rollout.
fn serve(home: &Path, cwd: &Path, token_file: &Path) -> (Killed, String) {
    let token = token_file.display().to_string();
    let extra = ["--idle-unload-ms", "0", "--ws-token-file", &token];
    ws_client::serve_in(home, Some(cwd), &extra)
}

/// Type a line into the composer, wait for it to show, then submit it.
fn submit(tui: &Tmux, text: &str) {
    tui.type_text(text);
    tui.wait_for(&format!("› {text}"), SCREEN);
    tui.press("Enter");
}

/// The numbered choices of the approval on the screen.
fn choices(screen: &str) -> Vec<String> {
    screen
        .lines()
        .map(|l| l.trim_start_matches(['›', ' ']).trim_end())
        .filter(|l| l.len() > 3 && l.as_bytes()[0].is_ascii_digit() && &l[1..3] == ". ")
        .map(str::to_owned)
        .collect()
}

/// The shell line that runs the TUI with `args` in `cwd`, its home `codex_home`, then
/// says how it ended (the window stays, so the test can read it).
fn tui_command(codex: &Path, codex_home: &Path, cwd: &Path, args: &str) -> String {
    format!(
        "cd {} && env -u OPENAI_API_KEY -u CODEX_API_KEY CODEX_HOME={} REIN_TUI_TOKEN={} \
         TERM=xterm-256color {} {args} --remote-auth-token-env REIN_TUI_TOKEN; \
         echo \"TUI EXITED $?\"; sleep 600",
        sh_path(cwd),
        sh_path(codex_home),
        sh_quote(TOKEN),
        sh_path(codex),
    )
}

#[test]
#[cfg_attr(
    not(all(rein_has_node, rein_has_tmux)),
    ignore = "needs node, npm and tmux (scripts/test-setup.sh installs the Codex CLI with npm)"
)]
fn the_codex_tui_runs_a_session_on_rein_end_to_end() {
    let codex = installed("target/codex-tui/codex");
    let model = MockModel::start(script());
    let home = home_for(&model);
    // Not under /tmp: the TUI refuses to set up its helpers there, with a warning.
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (work, codex_home) = (scratch.path().join("work"), scratch.path().join("codex"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&codex_home).unwrap();
    let token_file = scratch.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let (_server, url) = serve(home.path(), &work, &token_file);

    let remote = format!("--remote {url}");
    let tui = Tmux::start(
        "codex-tui",
        &tui_command(&codex, &codex_home, &work, &remote),
        120,
        40,
    );
    a_session(&tui);
    let resume = format!("resume --remote {url}");
    tui.new_window(&tui_command(&codex, &codex_home, &work, &resume));
    the_resume(&tui);

    // What the model saw: the approved commands' output, the turns in order.
    let said: Vec<String> = model
        .requests()
        .iter()
        .filter_map(|r| r["input"].as_array().and_then(|i| i.last()).cloned())
        .map(|last| last.to_string())
        .filter(|last| !last.contains("Generate a concise, single-line task title"))
        .collect();
    assert_eq!(said.len(), 9, "{said:#?}");
    assert!(said[2].contains("reinbar-tui-marker-ok"), "{}", said[2]);
    assert!(said[4].contains("reinbar-tui-again"), "{}", said[4]);
    assert!(said[8].contains("reinbar-tui-third"), "{}", said[8]);
}

/// The first TUI: the prompt, a turn, an approval and its rule, Esc, /quit.
fn a_session(tui: &Tmux) {
    let screen = tui.wait_for(PROMPT, SCREEN);
    assert!(screen.contains("OpenAI Codex (v0.169.0)"), "{screen}");
    let lower = screen.to_lowercase();
    assert!(
        !lower.contains("warning"),
        "a warning at startup:\n{screen}"
    );
    assert!(
        !lower.contains("older than"),
        "a version warning:\n{screen}"
    );

    // A plain turn.
    submit(tui, "Say hello, please.");
    tui.wait_for("Hello from rein, through the TUI.", SCREEN);
    tui.wait_for(PROMPT, SCREEN);

    // An approval, with Codex's choices; the rule "don't ask again".
    submit(tui, "Run the marker command.");
    let screen = tui.wait_for(ASKED, SCREEN);
    assert!(
        screen.contains(r"$ printf 'reinbar-tui-%s\n' marker-ok"),
        "the command as Codex shows it:\n{screen}"
    );
    assert_eq!(
        choices(&screen),
        [
            "1. Yes, proceed (y)",
            r#"2. Yes, and don't ask again for commands that start with `printf "reinbar-tui-%s\\n" marker-ok` (p)"#,
            "3. No, and tell Codex what to do differently (esc)",
        ]
    );
    tui.press("p");
    let screen = tui.wait_for("The command printed the marker.", SCREEN);
    assert!(screen.contains("└ reinbar-tui-marker-ok"), "{screen}");
    assert!(
        screen.contains("You approved codex to always run commands that start with"),
        "{screen}"
    );
    tui.wait_for(PROMPT, SCREEN);

    // The rule lets the next such command through without asking.
    submit(tui, "Run it again.");
    let screen = tui.wait_for("Printed again without asking.", SCREEN);
    assert!(screen.contains("reinbar-tui-again"), "{screen}");
    assert!(!screen.contains(ASKED), "asked again:\n{screen}");

    // Esc interrupts a turn mid-answer; the next turn runs.
    submit(tui, "Talk slowly.");
    tui.wait_for("• Let me", SCREEN);
    tui.press("Escape");
    let screen = tui.wait_for("Conversation interrupted", SCREEN);
    assert!(
        !screen.contains("word by word."),
        "the answer went on:\n{screen}"
    );
    tui.wait_for(PROMPT, SCREEN);
    submit(tui, "Are you still there?");
    tui.wait_for("Still here after the interrupt.", SCREEN);
    tui.wait_for(PROMPT, SCREEN);

    // /quit ends the TUI (and its subscription: the server unloads the thread).
    submit(tui, "/quit");
    tui.wait_for("TUI EXITED 0", SCREEN);
}

/// `codex resume --remote` lists the session under the title the TUI gave it, resumes it
/// from its rollout, and the rule still holds.
fn the_resume(tui: &Tmux) {
    let screen = tui.wait_for("Resume a previous session", SCREEN);
    let screen = if screen.contains("Greeting through rein") {
        screen
    } else {
        tui.wait_for("Greeting through rein", SCREEN)
    };
    assert!(screen.contains("› "), "{screen}");
    tui.press("Enter");
    let screen = tui.wait_for("Still here after the interrupt.", SCREEN);
    assert!(screen.contains("Printed again without asking."), "{screen}");
    tui.wait_for(PROMPT, SCREEN);
    submit(tui, "Once more, please.");
    let screen = tui.wait_for("Printed a third time without asking.", SCREEN);
    assert!(screen.contains("reinbar-tui-third"), "{screen}");
    assert!(!screen.contains(ASKED), "asked after the resume:\n{screen}");
    tui.wait_for(PROMPT, SCREEN);
    submit(tui, "/quit");
    tui.wait_for("TUI EXITED 0", SCREEN);
}
