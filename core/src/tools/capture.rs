//! Bounded capture of a command's output. A command may print gigabytes; the model needs
//! the start (what ran) and the end (how it failed), so we keep a head and a tail of the
//! byte stream and drop the middle, counting what was dropped.

use std::collections::VecDeque;

/// Keeps at most `cap` bytes: the first half of the cap verbatim, and the most recent
/// bytes in a ring for the other half.
#[derive(Debug)]
pub struct HeadTailBuffer {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    omitted: u64,
}

impl HeadTailBuffer {
    pub fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Self {
            head_cap,
            tail_cap: cap - head_cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            omitted: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let take = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.tail_cap {
            let dropped = self.tail.len() + bytes.len() - self.tail_cap;
            self.omitted += dropped as u64;
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.omitted += overflow as u64;
        self.tail.extend(bytes);
    }

    pub fn is_empty(&self) -> bool {
        self.head.is_empty() && self.tail.is_empty()
    }

    /// Bytes dropped from the middle so far.
    pub fn omitted(&self) -> u64 {
        self.omitted
    }

    /// The kept text, with a marker where the middle was dropped. Invalid UTF-8 (including
    /// a character cut at the seam) is replaced, never an error.
    pub fn render(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.omitted > 0 {
            text.push_str(&truncation_marker(self.omitted));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}

/// The marker that stands for dropped output.
pub fn truncation_marker(omitted: u64) -> String {
    format!("\n[... {omitted} bytes of output truncated ...]\n")
}

/// Turns a byte stream into text deltas without splitting a UTF-8 character across two
/// deltas: an incomplete trailing sequence waits for the next chunk.
#[derive(Debug, Default)]
pub struct Utf8Decoder {
    pending: Vec<u8>,
}

impl Utf8Decoder {
    pub fn decode(&mut self, chunk: &[u8]) -> String {
        self.pending.extend_from_slice(chunk);
        let valid_up_to = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            // A genuinely invalid byte: emit everything lossily rather than stall.
            Err(_) => self.pending.len(),
        };
        let rest = self.pending.split_off(valid_up_to);
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending = rest;
        text
    }

    pub fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut b = HeadTailBuffer::new(100);
        b.push(b"hello ");
        b.push(b"world");
        assert_eq!(b.render(), "hello world");
        assert_eq!(b.omitted(), 0);
    }

    #[test]
    fn truncation_keeps_head_and_tail_with_marker() {
        let mut b = HeadTailBuffer::new(20);
        for i in 0..100u8 {
            b.push(&[b'a' + (i % 26)]);
        }
        let text = b.render();
        assert!(text.starts_with("abcdefghij"), "{text}");
        // The last ten pushed bytes are i = 90..100.
        let tail: String = (90..100u8).map(|i| char::from(b'a' + (i % 26))).collect();
        assert!(text.ends_with(&tail), "{text}");
        assert!(
            text.contains("[... 80 bytes of output truncated ...]"),
            "{text}"
        );
    }

    #[test]
    fn one_huge_chunk_is_cut_the_same_way() {
        let mut b = HeadTailBuffer::new(10);
        let data: Vec<u8> = (0..1000).map(|i| b'0' + (i % 10) as u8).collect();
        b.push(&data);
        assert_eq!(b.omitted(), 990);
        let text = b.render();
        assert!(text.starts_with("01234\n"));
        assert!(text.ends_with("\n56789"));
    }

    #[test]
    fn decoder_does_not_split_characters() {
        let mut d = Utf8Decoder::default();
        let bytes = "é".as_bytes();
        assert_eq!(d.decode(&bytes[..1]), "");
        assert_eq!(d.decode(&bytes[1..]), "é");
        assert_eq!(d.finish(), "");
    }
}
