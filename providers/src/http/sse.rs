//! An incremental Server-Sent Events parser. Bytes arrive in whatever chunks the socket
//! gives; the parser keeps the unfinished line between chunks and hands out each event
//! as soon as its blank line arrives. It follows the WHATWG event-stream rules the model
//! servers rely on: `\n`, `\r\n` and `\r` line ends, multi-line `data:`, `:` comments,
//! one optional space after the colon, and events without data are not dispatched.

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; empty when the server sent none (the spec's "message").
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// The stream broke a limit that protects memory from a misbehaving server.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("an SSE event exceeded {limit} bytes")]
pub struct SseTooLarge {
    pub limit: usize,
}

/// Events larger than this are refused: no model server sends one, and an endless line
/// must not grow memory without bound.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 32 * 1024 * 1024;

#[derive(Debug)]
pub struct SseParser {
    /// Bytes of the line not yet terminated.
    line: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    /// The previous chunk ended in `\r`: a `\n` opening the next chunk belongs to it.
    after_cr: bool,
    /// Bytes seen so far, up to 3: a UTF-8 byte order mark may open the stream.
    started: usize,
    max_event_bytes: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    pub fn new() -> Self {
        Self::with_limit(DEFAULT_MAX_EVENT_BYTES)
    }

    pub fn with_limit(max_event_bytes: usize) -> Self {
        Self {
            line: Vec::new(),
            event: String::new(),
            data: String::new(),
            has_data: false,
            after_cr: false,
            started: 0,
            max_event_bytes,
        }
    }

    /// Feed one chunk; every event it completes is passed to `on_event` in order.
    pub fn feed(
        &mut self,
        mut chunk: &[u8],
        on_event: &mut impl FnMut(SseEvent),
    ) -> Result<(), SseTooLarge> {
        chunk = self.skip_bom(chunk);
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(end) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            let terminator = chunk[end];
            if self.line.is_empty() {
                self.process_line(&chunk[..end], on_event);
            } else {
                self.line.extend_from_slice(&chunk[..end]);
                let line = std::mem::take(&mut self.line);
                self.process_line(&line, on_event);
                self.line = line;
                self.line.clear();
            }
            chunk = &chunk[end + 1..];
            if terminator == b'\r' {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.check_size()?;
        }
        self.line.extend_from_slice(chunk);
        self.check_size()
    }

    /// The stream ended. Per the spec an event without its closing blank line is
    /// discarded; returns whether anything was left unfinished.
    pub fn finish(&mut self) -> bool {
        let unfinished = !self.line.is_empty() || self.has_data;
        self.line.clear();
        self.reset_event();
        unfinished
    }

    /// Drops a leading byte order mark, even one split across chunks.
    fn skip_bom<'c>(&mut self, chunk: &'c [u8]) -> &'c [u8] {
        const BOM: &[u8] = b"\xef\xbb\xbf";
        let mut chunk = chunk;
        while self.started < BOM.len() {
            match chunk.first() {
                Some(&b) if b == BOM[self.started] => {
                    chunk = &chunk[1..];
                    self.started += 1;
                }
                Some(_) => {
                    // Not a BOM after all: give back the bytes taken for one.
                    self.line.extend_from_slice(&BOM[..self.started]);
                    self.started = BOM.len();
                }
                None => return chunk,
            }
        }
        chunk
    }

    fn check_size(&self) -> Result<(), SseTooLarge> {
        if self.line.len() + self.data.len() > self.max_event_bytes {
            return Err(SseTooLarge {
                limit: self.max_event_bytes,
            });
        }
        Ok(())
    }

    fn reset_event(&mut self) {
        self.event.clear();
        self.data.clear();
        self.has_data = false;
    }

    fn process_line(&mut self, line: &[u8], on_event: &mut impl FnMut(SseEvent)) {
        if line.is_empty() {
            if self.has_data {
                on_event(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.reset_event();
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                push_utf8(&mut self.data, value);
            }
            b"event" => {
                self.event.clear();
                push_utf8(&mut self.event, value);
            }
            // `id` and `retry` steer browser reconnection; a sampling request is never
            // resumed mid-stream, so they carry nothing for us.
            _ => {}
        }
    }
}

/// Appends bytes as text. Lines are only split at ASCII terminators, so a well-formed
/// stream never splits a character; a malformed one gets replacement characters rather
/// than an error that would lose the rest of the reply.
fn push_utf8(out: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => out.push_str(s),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parse_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            parser.feed(c, &mut |e| out.push(e)).unwrap();
        }
        out
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn parses_named_events_and_multiline_data() {
        let got = parse_chunks(&[b"event: a\ndata: one\ndata: two\n\ndata:x\n\n"]);
        assert_eq!(got, vec![ev("a", "one\ntwo"), ev("", "x")]);
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let text = b"event: e1\r\ndata: {\"a\":1}\r\n\r\n: keep-alive\n\nevent: e2\rdata: h\xc3\xa9\r\rdata: z\n\n";
        let whole = parse_chunks(&[text]);
        assert_eq!(
            whole,
            vec![ev("e1", "{\"a\":1}"), ev("e2", "h\u{e9}"), ev("", "z")]
        );
        for split in 0..text.len() {
            let (a, b) = text.split_at(split);
            assert_eq!(parse_chunks(&[a, b]), whole, "split at {split}");
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(parse_chunks(&bytes), whole);
    }

    #[test]
    fn a_leading_byte_order_mark_is_ignored() {
        assert_eq!(
            parse_chunks(&[b"\xef\xbb", b"\xbfdata: a\n\n"]),
            vec![ev("", "a")]
        );
        assert_eq!(parse_chunks(&[b"data: b\n\n"]), vec![ev("", "b")]);
    }

    #[test]
    fn comments_and_empty_events_are_not_dispatched() {
        let got = parse_chunks(&[b": ping\n\nevent: only-name\n\nretry: 5\nid: 3\ndata\n\n"]);
        assert_eq!(got, vec![ev("", "")]);
    }

    #[test]
    fn unfinished_event_is_reported_at_finish() {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        parser.feed(b"data: half", &mut |e| out.push(e)).unwrap();
        assert!(out.is_empty());
        assert!(parser.finish());
        assert!(!parser.finish());
    }

    #[test]
    fn an_endless_line_is_refused() {
        let mut parser = SseParser::with_limit(16);
        let err = parser
            .feed(b"data: 0123456789abcdefghij", &mut |_| {})
            .unwrap_err();
        assert_eq!(err, SseTooLarge { limit: 16 });
    }
}
