//! Answers a thread's pump gives. A method whose answer must be ordered with the thread's
//! notifications (`turn/start` before `turn/started`) hands the pump a [`Responder`] and
//! waits on the [`PendingAnswer`]. The pump answers, then holds its next message until the
//! connection has queued the answer's line: the outbound queue is ordered, so whatever the
//! pump sends afterwards reaches the client after the answer.
//!
//! No deadlock: the pump waits only for the connection to queue a line it already has,
//! never for the client; and the connection releases the pump before it handles anything
//! else.

use tokio::sync::oneshot;

use crate::error::RpcError;

/// A method's typed answer (its `M::Response`) or its error.
pub type Outcome<T> = Result<T, RpcError>;

/// The pump's end.
pub struct Responder<T> {
    answer: oneshot::Sender<Outcome<T>>,
    queued: oneshot::Receiver<()>,
}

/// The method's end.
pub struct PendingAnswer<T> {
    answer: oneshot::Receiver<Outcome<T>>,
    queued: oneshot::Sender<()>,
}

/// Fire once the answer's line is queued (dropping it releases the pump too).
pub struct Release(oneshot::Sender<()>);

pub fn channel<T>() -> (Responder<T>, PendingAnswer<T>) {
    let (answer_tx, answer_rx) = oneshot::channel();
    let (queued_tx, queued_rx) = oneshot::channel();
    (
        Responder {
            answer: answer_tx,
            queued: queued_rx,
        },
        PendingAnswer {
            answer: answer_rx,
            queued: queued_tx,
        },
    )
}

impl<T> Responder<T> {
    /// Answer, and return once the connection has queued the answer (or dropped it: the
    /// connection is gone).
    pub async fn answer(self, outcome: Outcome<T>) {
        if self.answer.send(outcome).is_ok() {
            let _ = self.queued.await;
        }
    }
}

impl<T> PendingAnswer<T> {
    /// The pump's answer and the release to fire once it is queued; `None` if the pump
    /// went away without answering (the thread shut down).
    pub async fn wait(self) -> Option<(Outcome<T>, Release)> {
        let outcome = self.answer.await.ok()?;
        Some((outcome, Release(self.queued)))
    }
}

/// A pump that must not send anything before the current request's answer (a new
/// thread's first events, such as a warning about its `AGENTS.md`, come after
/// `thread/start`'s answer and `thread/started`): it waits on the receiver.
pub fn gate() -> (Release, oneshot::Receiver<()>) {
    let (tx, rx) = oneshot::channel();
    (Release(tx), rx)
}

impl Release {
    pub fn fire(self) {
        let _ = self.0.send(());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_pump_waits_until_the_answer_is_released() {
        let (responder, pending) = channel();
        let pump = tokio::spawn(responder.answer(Ok(true)));
        let (outcome, release) = pending.wait().await.unwrap();
        assert_eq!(outcome, Ok(true));
        assert!(!pump.is_finished(), "the pump waits for the release");
        release.fire();
        pump.await.unwrap();
    }

    #[tokio::test]
    async fn a_pump_that_never_answers_reads_as_none() {
        let (responder, pending) = channel::<()>();
        drop(responder);
        assert!(pending.wait().await.is_none());
    }
}
