//! The stdio transport of `rein acp`: NDJSON lines on stdin and stdout, as the SDK's own
//! `Stdio`, except that a line which is not UTF-8 does not end the connection. The SDK reads
//! lines as text, and a read error is fatal to it; here such a line is handed on as a line
//! that is not JSON, which the SDK answers with a JSON-RPC parse error (`-32700`) before it
//! reads on. Nothing else is changed: valid lines pass through as they came.

use std::pin::Pin;

use agent_client_protocol::{ConnectTo, Lines, Role};
use futures::{Sink, Stream};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// What a line that is not UTF-8 becomes: not JSON, so the SDK answers a parse error.
const NOT_UTF8: &str = "(a line that is not UTF-8)";

/// stdin and stdout, line by line.
#[derive(Debug, Default)]
pub struct Stdio;

impl Stdio {
    pub fn new() -> Self {
        Self
    }
}

type Incoming = Pin<Box<dyn Stream<Item = std::io::Result<String>> + Send>>;
type Outgoing = Pin<Box<dyn Sink<String, Error = std::io::Error> + Send>>;

impl<Counterpart: Role> ConnectTo<Counterpart> for Stdio {
    async fn connect_to(
        self,
        client: impl ConnectTo<Counterpart::Counterpart>,
    ) -> Result<(), agent_client_protocol::Error> {
        let incoming: Incoming = Box::pin(lines(BufReader::new(tokio::io::stdin())));
        let outgoing: Outgoing = Box::pin(futures::sink::unfold(
            tokio::io::stdout(),
            async move |mut out, line: String| {
                out.write_all(line.as_bytes()).await?;
                out.write_all(b"\n").await?;
                out.flush().await?;
                Ok::<_, std::io::Error>(out)
            },
        ));
        ConnectTo::<Counterpart>::connect_to(Lines::new(outgoing, incoming), client).await
    }
}

/// The lines of `input`, without their `\n`; a line that is not UTF-8 as [`NOT_UTF8`].
fn lines<R>(input: R) -> impl Stream<Item = std::io::Result<String>> + Send
where
    R: tokio::io::AsyncBufRead + Unpin + Send,
{
    futures::stream::unfold(input, |mut input| async move {
        let mut line = Vec::new();
        match input.read_until(b'\n', &mut line).await {
            Ok(0) => None,
            Ok(_) => {
                // As the SDK's own reader: without the `\n`, or the `\r\n`.
                if line.last() == Some(&b'\n') {
                    line.pop();
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                }
                let text = String::from_utf8(line).unwrap_or_else(|e| {
                    tracing::warn!("an ACP line is not UTF-8: {e}");
                    NOT_UTF8.to_owned()
                });
                Some((Ok(text), input))
            }
            Err(e) => Some((Err(e), input)),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[tokio::test]
    async fn a_line_that_is_not_utf8_becomes_one_that_is_not_json_and_reading_goes_on() {
        let input: &[u8] = b"{\"a\":1}\n\xff\xfe{\n\n{\"b\":2}";
        let got: Vec<String> = lines(input).map(Result::unwrap).collect().await;
        assert_eq!(got, vec!["{\"a\":1}", NOT_UTF8, "", "{\"b\":2}"]);
    }
}
