//! rein as an Agent Client Protocol (ACP v1) agent: the front end editors such as Zed,
//! JetBrains IDEs and Neovim plugins talk to over stdio (`rein acp`). Like the app-server
//! and `exec`, it is a projection of the kernel: sessions are rein threads (same home, same
//! rollouts, so `rein sessions list` and `rein exec resume` see them), updates are built
//! from kernel events and tool facts (`project.rs`, `tool_calls.rs`), and permissions go
//! through the kernel's client-request path (`ClientRequested` → `session/request_permission`
//! → `Op::Respond`).
//!
//! The wire is the official `agent-client-protocol` SDK's: it frames NDJSON JSON-RPC,
//! answers malformed messages and unknown methods, and routes typed requests to the
//! handlers registered here. Stdout carries the protocol only; this crate logs with
//! `tracing` (stderr in the binary) and never prints.
//!
//! **Architecture invariant:** nothing here names a tool or reads a tool's output; a new
//! kernel event is mapped in `project.rs`'s exhaustive match or does not compile.

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod agent;
mod cards;
mod client_fs;
mod client_terminal;
mod config;
mod goal_card;
mod mcp;
mod permission;
mod project;
mod prompt;
mod session;
mod stdio;
mod steering;
mod tool_calls;

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    CancelNotification, CloseSessionRequest, ForkSessionRequest, InitializeRequest,
    ListSessionsRequest, LoadSessionRequest, NewSessionRequest, PromptRequest,
    ResumeSessionRequest, SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, ConnectTo};
use rein_bootstrap::Kernel;

pub use project::{Mode as ProjectionMode, Projector};
pub use stdio::Stdio;
pub use tool_calls::TerminalDisplay;

use agent::{reply, Agent};

#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    #[error("the ACP connection failed: {0:?}")]
    Connection(agent_client_protocol::Error),
}

/// Serve one client on `transport` until it closes its end, then shut every thread down
/// (turns aborted, rollouts flushed).
pub async fn serve(
    kernel: Arc<Kernel>,
    transport: impl ConnectTo<agent_client_protocol::Agent> + 'static,
) -> Result<(), AcpError> {
    let agent = Agent::new(kernel);
    let served = connection(Arc::clone(&agent)).connect_to(transport).await;
    agent.shutdown().await;
    served.map_err(AcpError::Connection)
}

/// Every handler. Those that wait on the kernel spawn and answer from their task, so the
/// SDK's dispatch loop (which also reads `session/cancel`) never waits on a turn. A table,
/// one registration per ACP method in the SDK's builder chain: long because the protocol has
/// that many methods, each handler a method of [`Agent`].
fn connection(
    agent: Arc<Agent>,
) -> agent_client_protocol::v1::Builder<
    agent_client_protocol::Agent,
    impl agent_client_protocol::HandleDispatchFrom<Client>,
> {
    agent_client_protocol::Agent
        .v1()
        .name("rein")
        .on_receive_request(
            {
                let agent = Arc::clone(&agent);
                async move |request: InitializeRequest, responder, _cx| {
                    reply(responder, agent.initialize(&request));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = Arc::clone(&agent);
                async move |request: NewSessionRequest, responder, cx: ConnectionTo<Client>| {
                    let agent = Arc::clone(&agent);
                    let task_cx = cx.clone();
                    spawn(&cx, async move {
                        agent.new_session(request, responder, task_cx).await
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = Arc::clone(&agent);
                async move |request: LoadSessionRequest, responder, cx: ConnectionTo<Client>| {
                    let agent = Arc::clone(&agent);
                    let task_cx = cx.clone();
                    spawn(&cx, async move {
                        agent.load_session(request, responder, task_cx).await
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = Arc::clone(&agent);
                async move |request: ResumeSessionRequest, responder, cx: ConnectionTo<Client>| {
                    let agent = Arc::clone(&agent);
                    let task_cx = cx.clone();
                    spawn(&cx, async move {
                        agent.resume_session(request, responder, task_cx).await
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = Arc::clone(&agent);
                async move |request: ForkSessionRequest, responder, cx: ConnectionTo<Client>| {
                    let agent = Arc::clone(&agent);
                    let task_cx = cx.clone();
                    spawn(&cx, async move {
                        agent.fork_session(request, responder, task_cx).await
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = Arc::clone(&agent);
                async move |request: ListSessionsRequest, responder, cx: ConnectionTo<Client>| {
                    let agent = Arc::clone(&agent);
                    spawn(&cx, async move {
                        reply(responder, agent.list_sessions(request).await)
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = Arc::clone(&agent);
                async move |request: CloseSessionRequest, responder, cx: ConnectionTo<Client>| {
                    let agent = Arc::clone(&agent);
                    spawn(&cx, async move {
                        reply(responder, agent.close_session(request).await)
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = Arc::clone(&agent);
                async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                    reply(responder, agent.set_config_option(&request));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = Arc::clone(&agent);
                async move |request: SetSessionModeRequest, responder, _cx| {
                    reply(responder, agent.set_mode(&request));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = Arc::clone(&agent);
                async move |request: PromptRequest, responder, cx: ConnectionTo<Client>| {
                    let agent = Arc::clone(&agent);
                    let ticket = agent.ticket(&request.session_id);
                    spawn(&cx, async move {
                        agent.prompt(request, responder, ticket).await
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = Arc::clone(&agent);
                async move |request: steering::SteeringRequest,
                            responder,
                            cx: ConnectionTo<Client>| {
                    let agent = Arc::clone(&agent);
                    spawn(
                        &cx,
                        async move { reply(responder, agent.steer(request).await) },
                    )
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            {
                let agent = Arc::clone(&agent);
                async move |notification: CancelNotification, cx: ConnectionTo<Client>| {
                    // In order with the prompts: a prompt sent after the cancel is not
                    // cancelled by it.
                    agent.cancel_waiting(&notification.session_id);
                    let agent = Arc::clone(&agent);
                    spawn(
                        &cx,
                        async move { agent.cancel(&notification.session_id).await },
                    )
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
}

/// Run `work` beside the dispatch loop. It answers its request itself; it never fails,
/// since a failed task would end the connection.
fn spawn(
    cx: &ConnectionTo<Client>,
    work: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), agent_client_protocol::Error> {
    cx.spawn(async move {
        work.await;
        Ok(())
    })
}
