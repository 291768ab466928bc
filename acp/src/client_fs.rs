//! What the editor does for rein's tools: the capabilities a session declares to its
//! thread (from the client's `clientCapabilities` and `[acp]`), and the client requests
//! that bring them (`ClientRequested` with a file or terminal request) carried out as
//! `fs/read_text_file`, `fs/write_text_file` and the `terminal/*` methods, their answers
//! going back to the thread as `Op::Respond`.
//!
//! The policy was applied by the tool before the request was made: this side only carries
//! it out. A request the thread stops waiting for (the turn ended) is dropped, which
//! cancels the client's request (`$/cancel_request`); a terminal is killed and released.

use agent_client_protocol::v1::schema::{
    ClientCapabilities as AcpCapabilities, ReadTextFileRequest, SessionId, WriteTextFileRequest,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use rein_core::tools::ClientCapabilities;
use rein_core::ThreadHandle;
use rein_protocol::{ClientRequest, ClientResponse, Op};
use tokio::sync::{mpsc, oneshot};

use crate::client_terminal;
use crate::session::PumpCmd;

/// What rein asks of a client that offers `capabilities`: its files whenever it offers
/// them, its terminals only when `[acp] client_terminals` asks for them too (a command in
/// the editor's terminal runs outside rein's sandbox).
pub fn capabilities_for(
    capabilities: &AcpCapabilities,
    client_terminals: bool,
) -> ClientCapabilities {
    ClientCapabilities {
        read_text_file: capabilities.fs.read_text_file,
        write_text_file: capabilities.fs.write_text_file,
        terminal: capabilities.terminal && client_terminals,
    }
}

/// Everything a request needs to be carried out off the session's pump.
pub struct Work {
    pub session: SessionId,
    pub cx: ConnectionTo<Client>,
    pub handle: ThreadHandle,
    pub request_id: String,
    pub call_id: String,
    /// The pump, for a terminal's card (weak: the work must not keep the pump alive).
    pub pump: mpsc::WeakUnboundedSender<PumpCmd>,
    /// Fires (is dropped) when the thread stops waiting for the answer.
    pub stopped: oneshot::Receiver<()>,
}

/// Carry out `request` (one of [`ClientRequest::is_client_work`]) in a task of its own.
pub fn start(work: Work, request: ClientRequest) {
    tokio::spawn(async move {
        let Work {
            session,
            cx,
            handle,
            request_id,
            call_id,
            pump,
            mut stopped,
        } = work;
        let response = match request {
            ClientRequest::ReadTextFile { path, line, limit } => {
                let sent = cx
                    .send_request(
                        ReadTextFileRequest::new(session, path)
                            .line(line)
                            .limit(limit),
                    )
                    .block_task();
                tokio::select! {
                    read = sent => match read {
                        Ok(read) => ClientResponse::Text { content: read.content },
                        Err(e) => failed(&e),
                    },
                    _ = &mut stopped => return,
                }
            }
            ClientRequest::WriteTextFile { path, content } => {
                let sent = cx
                    .send_request(WriteTextFileRequest::new(session, path, content))
                    .block_task();
                tokio::select! {
                    written = sent => match written {
                        Ok(_) => ClientResponse::Written,
                        Err(e) => failed(&e),
                    },
                    _ = &mut stopped => return,
                }
            }
            ClientRequest::Terminal {
                command,
                cwd,
                env,
                timeout_ms,
                output_byte_limit,
            } => {
                let run = client_terminal::Run {
                    session,
                    call_id,
                    command,
                    cwd,
                    env,
                    timeout_ms,
                    output_byte_limit,
                };
                match client_terminal::run(&cx, run, &pump, &mut stopped).await {
                    Some(response) => response,
                    None => return,
                }
            }
            other => other.unanswered(),
        };
        let op = Op::Respond {
            request_id,
            response,
        };
        if let Err(e) = handle.submit(op).await {
            tracing::debug!("client work answer: {e}");
        }
    });
}

/// A client's error as the tool reads it.
pub fn failed(error: &agent_client_protocol::Error) -> ClientResponse {
    ClientResponse::Failed {
        message: error.message.clone(),
    }
}
