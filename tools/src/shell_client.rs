//! A `shell` command run in a terminal the client owns (an editor's terminal panel), for a
//! front end that offers terminals and a configuration that asks for them. The client runs
//! the process, so rein's sandbox does not confine it: the policy judges the command as
//! one that runs outside the sandbox (a short allow-list of read-only argv forms with no
//! environment set goes ahead, see `is_safe_unconfined`; anything else needs what an
//! escalated command needs: the user's approval, or a grant for the session), before the
//! client hears of it. The call reports the same facts as a local run.
//!
//! The client kills the command at the timeout, or when the turn ends first (the request
//! is cancelled). Background commands stay rein's own terminals, whose input `write_stdin`
//! feeds.

use std::time::Duration;

use rein_core::tools::{ClientWorkError, TerminalCommand, TerminalExit};
use rein_protocol::ToolOutcome;

use crate::policy::safe_commands::is_safe_unconfined;
use crate::policy::{Action, PolicyEngine};
use crate::process::exec::{ExecOutcome, ExitKind};
use crate::shell::{format_outcome, PreparedCommand, ShellArgs, ShellConfig};
use crate::{ToolContext, ToolResult};

/// Why an approval is asked for a command the client runs.
const OUTSIDE: &str = "it runs in the editor's terminal, outside rein's sandbox";

/// Judge `cmd` as a command outside the sandbox, then run it in the client's terminal.
pub async fn run_in_client(
    policy: &PolicyEngine,
    ctx: &ToolContext,
    args: &ShellArgs,
    cmd: &PreparedCommand,
    config: &ShellConfig,
) -> ToolResult {
    let action = Action::Command {
        argv: cmd.argv.clone(),
        env: args.env.clone(),
        cwd: cmd.cwd.clone(),
        escalate: args.with_escalated_permissions || !is_safe_unconfined(&cmd.argv, &args.env),
        justification: Some(match &args.justification {
            Some(why) => format!("{why} ({OUTSIDE})"),
            None => OUTSIDE.to_owned(),
        }),
    };
    if let Err(refusal) = policy.authorize(ctx, action).await {
        return refusal.into_result();
    }
    let started = std::time::Instant::now();
    let exit = ctx
        .run_in_client_terminal(TerminalCommand {
            argv: cmd.argv.clone(),
            cwd: cmd.cwd.clone(),
            // Only what the model set: the client's terminal has its own environment.
            env: args.env.clone(),
            timeout: cmd.timeout,
            output_byte_limit: config.output_cap,
        })
        .await;
    match exit {
        Ok(exit) => format_outcome(&outcome_of(exit, started.elapsed()), cmd.timeout),
        Err(ClientWorkError::Cancelled) => ToolResult::new(
            "command was cancelled and killed",
            false,
            ToolOutcome::Interrupted {
                cause: rein_protocol::InterruptCause::TurnAborted,
            },
        ),
        Err(e) => ToolResult::err(format!("the client's terminal did not run it: {e}")),
    }
}

/// A client terminal's end as a local run's.
fn outcome_of(exit: TerminalExit, duration: Duration) -> ExecOutcome {
    let kind = if exit.timed_out {
        ExitKind::TimedOut
    } else {
        match (exit.exit_code, exit.signal.as_deref()) {
            (Some(code), _) => ExitKind::Code(i32::try_from(code).unwrap_or(i32::MAX)),
            (None, Some(signal)) => match signal_number(signal) {
                Some(n) => ExitKind::Signal(n),
                None => ExitKind::Code(1),
            },
            // Neither: the client could not tell; not a success.
            (None, None) => ExitKind::Code(1),
        }
    };
    let output = if exit.truncated {
        format!("[the start of the output was dropped]\n{}", exit.output)
    } else {
        exit.output
    };
    ExecOutcome {
        exit: kind,
        output,
        omitted_bytes: 0,
        duration,
    }
}

/// The number of a signal the client names (`SIGKILL`, `KILL`, or `9`).
fn signal_number(name: &str) -> Option<i32> {
    if let Ok(n) = name.parse::<i32>() {
        return Some(n);
    }
    let name = name.strip_prefix("SIG").unwrap_or(name);
    const NAMES: &[(&str, i32)] = &[
        ("HUP", 1),
        ("INT", 2),
        ("QUIT", 3),
        ("ILL", 4),
        ("TRAP", 5),
        ("ABRT", 6),
        ("BUS", 7),
        ("FPE", 8),
        ("KILL", 9),
        ("USR1", 10),
        ("SEGV", 11),
        ("USR2", 12),
        ("PIPE", 13),
        ("ALRM", 14),
        ("TERM", 15),
    ];
    NAMES
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(name))
        .map(|(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn exit(code: Option<u32>, signal: Option<&str>, timed_out: bool) -> TerminalExit {
        TerminalExit {
            output: "out\n".to_owned(),
            truncated: false,
            exit_code: code,
            signal: signal.map(str::to_owned),
            timed_out,
        }
    }

    #[test]
    fn a_client_terminals_end_reads_as_a_local_runs() {
        let kinds: Vec<ExitKind> = [
            exit(Some(0), None, false),
            exit(Some(3), None, false),
            exit(None, Some("SIGKILL"), false),
            exit(None, Some("TERM"), false),
            exit(None, Some("SIGWHAT"), false),
            exit(None, Some("SIGKILL"), true),
        ]
        .into_iter()
        .map(|e| outcome_of(e, Duration::ZERO).exit)
        .collect();
        assert_eq!(
            kinds,
            vec![
                ExitKind::Code(0),
                ExitKind::Code(3),
                ExitKind::Signal(9),
                ExitKind::Signal(15),
                ExitKind::Code(1),
                ExitKind::TimedOut,
            ]
        );
        let mut cut = exit(Some(0), None, false);
        cut.truncated = true;
        assert_eq!(
            outcome_of(cut, Duration::ZERO).output,
            "[the start of the output was dropped]\nout\n"
        );
    }
}
