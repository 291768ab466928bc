//! A loaded thread's driver task: answers the client requests nobody can answer (so a
//! request that would need an approval is declined under the configured policy, and a
//! background run never waits for a person), counts the thread's running turns for the
//! concurrency limit, and unloads it once it has been idle a while.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rein_core::EventStream;
use rein_protocol::{EventMsg, Op};

use crate::runs::{ends_turn, is_approval, unload, Approvals, Loaded, Threads, COUNTED_KEPT};

/// The thread's driver: answers client requests nobody can answer, counts running turns,
/// and unloads the thread once it has been idle `idle_unload` after a turn.
pub(crate) async fn drive(
    loaded: Arc<Loaded>,
    mut events: EventStream,
    running: Arc<AtomicUsize>,
    threads: Threads,
    idle_unload: Duration,
    approvals: Approvals,
) {
    let handle = loaded.handle.clone();
    let mut active = false;
    // The idle clock runs only after a turn: a thread just loaded is about to get one.
    let mut had_turn = false;
    loop {
        let next = if active || !had_turn {
            events.recv().await
        } else {
            match tokio::time::timeout(idle_unload, events.recv()).await {
                Ok(next) => next,
                Err(_) if unload(&handle, &threads).await => break,
                Err(_) => continue,
            }
        };
        let Some(event) = next else { break };
        match &event.msg {
            EventMsg::ClientRequested {
                request_id,
                request,
                ..
            } if !(approvals == Approvals::Http && is_approval(request)) => {
                let answer = Op::Respond {
                    request_id: request_id.clone(),
                    response: request.unanswered(),
                };
                if handle.submit(answer).await.is_err() {
                    break;
                }
            }
            EventMsg::TurnStarted { .. } => {
                if !active {
                    active = true;
                    running.fetch_add(1, Ordering::SeqCst);
                }
                if let Some(turn) = event.turn_id {
                    loaded.counted.send_modify(|recent| {
                        if recent.len() == COUNTED_KEPT {
                            recent.pop_front();
                        }
                        recent.push_back(turn);
                    });
                }
            }
            _ if active && ends_turn(&event) => {
                active = false;
                had_turn = true;
                running.fetch_sub(1, Ordering::SeqCst);
            }
            _ => {}
        }
    }
    if active {
        running.fetch_sub(1, Ordering::SeqCst);
    }
}
