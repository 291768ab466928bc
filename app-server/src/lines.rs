//! Newline-delimited framing with a size limit: a line longer than the limit is skipped
//! (never buffered whole) and reported, so one huge message cannot exhaust memory.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    Message(Vec<u8>),
    /// A line over the limit was skipped; `bytes` is how long it was.
    TooLong {
        bytes: usize,
    },
}

pub struct LineReader<R> {
    reader: R,
    max_bytes: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(reader: R, max_bytes: usize) -> Self {
        Self { reader, max_bytes }
    }

    /// The next non-blank line; `None` at end of input.
    pub async fn next(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            match self.read_one().await? {
                None => return Ok(None),
                Some(Line::Message(bytes)) if bytes.iter().all(u8::is_ascii_whitespace) => {}
                Some(line) => return Ok(Some(line)),
            }
        }
    }

    async fn read_one(&mut self) -> std::io::Result<Option<Line>> {
        let mut buf = Vec::new();
        let mut total = 0usize;
        let mut overflow = false;
        loop {
            let chunk = self.reader.fill_buf().await?;
            if chunk.is_empty() {
                if total == 0 {
                    return Ok(None);
                }
                break;
            }
            let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            let body = if done { &chunk[..take - 1] } else { chunk };
            total += body.len();
            if total > self.max_bytes {
                overflow = true;
                buf = Vec::new();
            } else if !overflow {
                buf.extend_from_slice(body);
            }
            self.reader.consume(take);
            if done {
                break;
            }
        }
        if overflow {
            return Ok(Some(Line::TooLong { bytes: total }));
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        Ok(Some(Line::Message(buf)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn long_lines_are_skipped_and_the_next_line_survives() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\n\n{\"a\":1}\r\nlast");
        let mut r = LineReader::new(&input[..], 10);
        assert_eq!(r.next().await.unwrap(), Some(Line::TooLong { bytes: 100 }));
        assert_eq!(
            r.next().await.unwrap(),
            Some(Line::Message(b"{\"a\":1}".to_vec()))
        );
        assert_eq!(
            r.next().await.unwrap(),
            Some(Line::Message(b"last".to_vec()))
        );
        assert_eq!(r.next().await.unwrap(), None);
    }
}
