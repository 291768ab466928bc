//! A shell command run in the editor's own terminal: `terminal/create`, the terminal
//! shown on the call's card (`{type: "terminal", terminalId}`, kept there once the call
//! ends), `terminal/wait_for_exit` up to the command's timeout (then `terminal/kill`),
//! `terminal/output`, `terminal/release`. Should the thread stop waiting (the turn was
//! interrupted) the command is killed and the terminal released.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, EnvVariable, KillTerminalRequest, ReleaseTerminalRequest, SessionId,
    TerminalExitStatus, TerminalId, TerminalOutputRequest, WaitForTerminalExitRequest,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use rein_protocol::ClientResponse;
use tokio::sync::{mpsc, oneshot};

use crate::client_fs::failed;
use crate::session::PumpCmd;

/// One command for the client's terminal.
pub struct Run {
    pub session: SessionId,
    pub call_id: String,
    pub command: Vec<String>,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    pub timeout_ms: u64,
    pub output_byte_limit: u64,
}

/// Run it; the answer for the thread, or `None` when the thread stopped waiting.
pub async fn run(
    cx: &ConnectionTo<Client>,
    run: Run,
    pump: &mpsc::WeakUnboundedSender<PumpCmd>,
    stopped: &mut oneshot::Receiver<()>,
) -> Option<ClientResponse> {
    let Some((program, args)) = run.command.split_first() else {
        return Some(ClientResponse::Failed {
            message: "the command is empty".to_owned(),
        });
    };
    let terminal = match create(cx, &run, program, args, stopped).await? {
        Ok(terminal) => terminal,
        Err(failure) => return Some(failure),
    };
    // Sent before the thread can hear the answer, and the pump takes commands before
    // events: the card knows its terminal before the call's end reaches it.
    if let Some(pump) = pump.upgrade() {
        let _ = pump.send(PumpCmd::ClientTerminal {
            call_id: run.call_id.clone(),
            terminal: terminal.clone(),
        });
    }
    let terminal = Terminal {
        cx: cx.clone(),
        session: run.session.clone(),
        id: terminal,
    };
    let waited = cx
        .send_request(WaitForTerminalExitRequest::new(
            run.session.clone(),
            terminal.id.clone(),
        ))
        .block_task();
    let limit = Duration::from_millis(run.timeout_ms);
    let exited = tokio::select! {
        waited = tokio::time::timeout(limit, waited) => waited,
        _ = &mut *stopped => {
            terminal.kill();
            terminal.release();
            return None;
        }
    };
    let (status, timed_out) = match exited {
        Ok(Ok(exited)) => (Some(exited.exit_status), false),
        Ok(Err(e)) => {
            terminal.release();
            return Some(failed(&e));
        }
        Err(_elapsed) => {
            terminal.kill();
            (None, true)
        }
    };
    output_of(cx, &terminal, &run, status, timed_out, stopped).await
}

/// What the terminal printed and how it exited, as the thread hears it; `None` when the
/// thread stopped waiting. The terminal is released either way.
async fn output_of(
    cx: &ConnectionTo<Client>,
    terminal: &Terminal,
    run: &Run,
    status: Option<TerminalExitStatus>,
    timed_out: bool,
    stopped: &mut oneshot::Receiver<()>,
) -> Option<ClientResponse> {
    let output = cx
        .send_request(TerminalOutputRequest::new(
            run.session.clone(),
            terminal.id.clone(),
        ))
        .block_task();
    let output = tokio::select! {
        output = output => output,
        _ = &mut *stopped => {
            terminal.release();
            return None;
        }
    };
    terminal.release();
    let output = match output {
        Ok(output) => output,
        Err(e) => return Some(failed(&e)),
    };
    // The exit as `wait_for_exit` reported it; after a kill, as `output` does.
    let status = status.or(output.exit_status).unwrap_or_default();
    // The editor may keep more than the limit it was given (a 100 MiB output went whole to
    // the model): what reaches the thread is bounded here, as rein's own output is.
    let (text, cut) = keep_end(output.output, run.output_byte_limit);
    Some(ClientResponse::TerminalExited {
        output: text,
        truncated: output.truncated || cut,
        exit_code: status.exit_code,
        signal: status.signal,
        timed_out,
    })
}

/// Ask the editor to create the terminal: its id, the failure to answer the thread with,
/// or `None` when the thread stopped waiting.
async fn create(
    cx: &ConnectionTo<Client>,
    run: &Run,
    program: &str,
    args: &[String],
    stopped: &mut oneshot::Receiver<()>,
) -> Option<Result<TerminalId, ClientResponse>> {
    let env = run
        .env
        .iter()
        .map(|(name, value)| EnvVariable::new(name.clone(), value.clone()))
        .collect();
    let create = CreateTerminalRequest::new(run.session.clone(), program.to_owned())
        .args(args.to_vec())
        .env(env)
        .cwd(run.cwd.clone())
        .output_byte_limit(run.output_byte_limit);
    let created = cx.send_request(create).block_task();
    tokio::select! {
        created = created => Some(created.map(|c| c.terminal_id).map_err(|e| failed(&e))),
        _ = &mut *stopped => None,
    }
}

/// The last `limit` bytes of `text` at most (from a character boundary), as ACP's own
/// output limit keeps them; and whether any were dropped.
fn keep_end(mut text: String, limit: u64) -> (String, bool) {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if text.len() <= limit {
        return (text, false);
    }
    let mut start = text.len() - limit;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text.drain(..start);
    (text, true)
}

/// A terminal of the client, for the requests that end it (their answers change nothing).
struct Terminal {
    cx: ConnectionTo<Client>,
    session: SessionId,
    id: TerminalId,
}

impl Terminal {
    fn kill(&self) {
        let kill = KillTerminalRequest::new(self.session.clone(), self.id.clone());
        self.cx.send_request(kill).detach();
    }

    fn release(&self) {
        let release = ReleaseTerminalRequest::new(self.session.clone(), self.id.clone());
        self.cx.send_request(release).detach();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_over_the_limit_keeps_its_end_from_a_character_boundary() {
        assert_eq!(keep_end("abc".to_owned(), 3), ("abc".to_owned(), false));
        assert_eq!(keep_end("abcdef".to_owned(), 2), ("ef".to_owned(), true));
        // "é" is two bytes: a cut inside it starts after it.
        assert_eq!(keep_end("aéb".to_owned(), 2), ("b".to_owned(), true));
    }
}
