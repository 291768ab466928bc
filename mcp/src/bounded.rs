//! A stdio server's output, read one bounded line at a time: a line (one JSON-RPC
//! message) longer than [`MAX_MESSAGE_BYTES`] ends the connection before any of it is
//! parsed, and the reason is kept so that the call waiting for an answer, and the server's
//! status, say what happened instead of a timeout. (rmcp alone would drop such a line and
//! keep going, leaving its request to time out.)

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The longest message a server may send over stdio (and over HTTP: a response body or
/// one event of a stream).
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// Why rein ended a connection itself, when it did.
#[derive(Clone, Default)]
pub(crate) struct Broken(Arc<Mutex<Option<String>>>);

impl Broken {
    pub(crate) fn set(&self, why: String) {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert(why);
    }

    pub(crate) fn get(&self) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn clear(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// `default`, unless rein ended the connection, which is then the reason.
    pub(crate) fn or(&self, default: String) -> String {
        self.get().unwrap_or(default)
    }
}

/// `inner`, failing once a line grows past `max` bytes.
pub(crate) struct BoundedLines<R> {
    inner: R,
    max: usize,
    since_newline: usize,
    server: String,
    broken: Broken,
}

impl<R> BoundedLines<R> {
    pub(crate) fn new(inner: R, max: usize, server: &str, broken: Broken) -> Self {
        Self {
            inner,
            max,
            since_newline: 0,
            server: server.to_owned(),
            broken,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        let mut run = this.since_newline;
        let mut longest = 0;
        for segment in buf.filled()[before..].split_inclusive(|&b| b == b'\n') {
            run += segment.len();
            if segment.ends_with(b"\n") {
                longest = longest.max(run - 1);
                run = 0;
            }
        }
        this.since_newline = run;
        if longest.max(run) > this.max {
            let why = format!(
                "MCP server '{}' sent a message of more than {} bytes (the limit); rein closed the connection",
                this.server, this.max
            );
            tracing::warn!("{why}");
            this.broken.set(why.clone());
            // A failed read hands over no bytes.
            buf.set_filled(before);
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, why)));
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_line_past_the_limit_fails_the_read_and_says_why() {
        let broken = Broken::default();
        let data = format!("{}\n{}\n", "a".repeat(10), "b".repeat(30));
        let mut reader = BoundedLines::new(data.as_bytes(), 20, "s", broken.clone());
        let mut out = Vec::new();
        let error = reader.read_to_end(&mut out).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert_eq!(
            broken.get().unwrap(),
            "MCP server 's' sent a message of more than 20 bytes (the limit); rein closed the connection"
        );
        let fine = "a\n".repeat(100);
        let mut reader = BoundedLines::new(fine.as_bytes(), 20, "s", Broken::default());
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await.unwrap();
        assert_eq!(out.len(), 200);
    }
}
