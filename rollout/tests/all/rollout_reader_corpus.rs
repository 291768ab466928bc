//! The tolerant reader against damaged files: torn last line, BOM, blank lines, unknown
//! line types and fields, corrupt middle lines, out-of-order events, random corruption.
#![allow(clippy::unwrap_used)]

use rein_test_support::rollout as support;

use pretty_assertions::assert_eq;
use rein_core::store::{Diagnostic, DiagnosticKind, RolloutError, SessionMeta};
use rein_protocol::ThreadId;
use rein_rollout::blobs::BlobStore;
use rein_rollout::reader::{read_rollout, read_rollout_with_workers};
use rein_rollout::writer::{RolloutWriter, WriterOptions};
use support::ThreadScript;

/// A valid rollout's lines (each with its newline) and its events.
fn valid_lines(dir: &std::path::Path) -> (Vec<String>, Vec<rein_protocol::Event>) {
    let mut script = ThreadScript::new(ThreadId::new());
    script.simple_turn(1, "one".into());
    script.simple_turn(2, "two".into());
    let path = dir.join("src.jsonl");
    let meta = SessionMeta::new(script.thread, script.thread.into(), "/w".into(), "m", "p");
    let mut writer = RolloutWriter::create(
        &path,
        &meta,
        WriterOptions::new(BlobStore::new(dir.join("blobs"))),
    )
    .unwrap();
    for e in &script.events {
        writer.record(e).unwrap();
    }
    drop(writer);
    let text = std::fs::read_to_string(&path).unwrap();
    (
        text.split_inclusive('\n').map(str::to_owned).collect(),
        script.events,
    )
}

fn diag(line: usize, kind: DiagnosticKind) -> Diagnostic {
    Diagnostic { line, kind }
}

#[test]
fn damaged_file_loads_every_good_event_and_reports_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let (lines, events) = valid_lines(dir.path());
    let blobs = BlobStore::new(dir.path().join("blobs"));
    let mut damaged = String::from("\u{feff}");
    damaged.push_str(&lines[0]); // line 1: meta with a BOM
    damaged.push_str(&lines[1]); // line 2
    damaged.push('\n'); // line 3: blank
    damaged.push_str("   \r\n"); // line 4: blank, CRLF
    damaged.push_str("{\"type\":\"future_kind\",\"payload\":{\"x\":1}}\n"); // line 5
    damaged.push_str("{\"type\":\"event\",\"payload\":{\"seq\":\n"); // line 6: corrupt
    damaged.push_str(&lines[2].replace("{\"timestamp\"", "{\"new_field\":[1,2],\"timestamp\"")); // line 7
                                                                                                 // line 8: CRLF, and fields this version does not know inside the payload, at the
                                                                                                 // event's level and inside its message (which then goes through the derive path).
    let line8 = lines[3]
        .replace('\n', "\r\n")
        .replacen("\"payload\":{", "\"payload\":{\"trace\":7,", 1)
        .replacen("\"msg\":{", "\"msg\":{\"extra\":true,", 1);
    assert_ne!(
        line8,
        lines[3].replace('\n', "\r\n"),
        "the line was changed"
    );
    damaged.push_str(&line8);
    damaged.push_str(&lines[2]); // line 9: a duplicate of an earlier event
    damaged.push_str("not json at all\n"); // line 10
    for line in &lines[4..] {
        damaged.push_str(line); // lines 11..
    }
    let torn_at = 11 + lines.len() - 4;
    damaged.push_str(&lines[1][..lines[1].len() / 2]); // torn last line
    let path = dir.path().join("damaged.jsonl");
    std::fs::write(&path, damaged).unwrap();

    let loaded = read_rollout(&path, &blobs).unwrap();
    assert_eq!(loaded.events, events);
    // Split into ranges parsed by several threads, the result is the same.
    for workers in 2..=6 {
        let parallel = read_rollout_with_workers(&path, &blobs, workers).unwrap();
        assert_eq!(parallel.events, loaded.events, "{workers} workers");
        assert_eq!(
            parallel.diagnostics, loaded.diagnostics,
            "{workers} workers"
        );
    }
    let kinds: Vec<Diagnostic> = loaded
        .diagnostics
        .iter()
        .map(|d| match &d.kind {
            DiagnosticKind::Corrupt(_) => diag(d.line, DiagnosticKind::Corrupt(String::new())),
            _ => d.clone(),
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            diag(1, DiagnosticKind::ByteOrderMark),
            diag(3, DiagnosticKind::BlankLine),
            diag(4, DiagnosticKind::BlankLine),
            diag(5, DiagnosticKind::UnknownLineType("future_kind".into())),
            diag(6, DiagnosticKind::Corrupt(String::new())),
            diag(7, DiagnosticKind::UnknownFields(1)),
            diag(8, DiagnosticKind::UnknownFields(2)),
            diag(9, DiagnosticKind::OutOfOrder { seq: 1, after: 2 }),
            diag(10, DiagnosticKind::Corrupt(String::new())),
            diag(torn_at, DiagnosticKind::TornLastLine),
        ]
    );
}

#[test]
fn file_without_meta_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.jsonl");
    std::fs::write(&path, "garbage\n\n").unwrap();
    let err = read_rollout(&path, &BlobStore::new(dir.path())).unwrap_err();
    assert!(matches!(err, RolloutError::MissingMeta { .. }), "{err}");
    let future = "{\"type\":\"session_meta\",\"payload\":{\"format_version\":99,\"thread_id\":\"01a22a74-816c-7bf0-bd41-5b49f30ed77c\",\"session_id\":\"01a22a74-816c-7bf0-bd41-5b49f30ed77c\",\"cwd\":\"/\",\"model\":\"m\",\"provider\":\"p\",\"created_at\":\"x\"}}\n";
    std::fs::write(&path, future).unwrap();
    let err = read_rollout(&path, &BlobStore::new(dir.path())).unwrap_err();
    assert!(
        matches!(err, RolloutError::UnsupportedVersion { found: 99, .. }),
        "{err}"
    );
}

/// Deterministic pseudo-random numbers (xorshift), so a failure reproduces.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn random_corruption_never_panics_and_keeps_untouched_lines() {
    let dir = tempfile::tempdir().unwrap();
    let (lines, events) = valid_lines(dir.path());
    let blobs = BlobStore::new(dir.path().join("blobs"));
    let path = dir.path().join("fuzz.jsonl");
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for round in 0..300 {
        // Damage one event line (never the meta) in one of several ways.
        let victim = 1 + rng.below(lines.len() - 1);
        let mut bytes: Vec<u8> = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let mut line = line.as_bytes().to_vec();
            if i == victim {
                match rng.below(4) {
                    0 => {
                        let at = rng.below(line.len() - 1);
                        line[at] = (rng.next() & 0xff) as u8;
                    }
                    1 => line.truncate(rng.below(line.len() - 1)),
                    2 => {
                        let from = rng.below(line.len());
                        let to = from + rng.below(line.len() - from);
                        line.drain(from..to);
                    }
                    _ => line
                        .splice(0..0, vec![(rng.next() & 0xff) as u8; 3])
                        .for_each(drop),
                }
                if !line.ends_with(b"\n") && i + 1 < lines.len() {
                    line.push(b'\n');
                }
            }
            bytes.extend(line);
        }
        std::fs::write(&path, &bytes).unwrap();
        let loaded = read_rollout(&path, &blobs).unwrap_or_else(|e| panic!("round {round}: {e}"));
        // Everything before the damage is intact; what follows is a subsequence of the
        // original (a damaged seq may make later events look out of order), and nothing
        // but the damaged line can differ from what was written.
        let damaged_seq = victim - 1;
        assert_eq!(
            loaded.events[..damaged_seq],
            events[..damaged_seq],
            "round {round}"
        );
        let mut originals = events.iter();
        let foreign = loaded.events.iter().filter(|e| !events.contains(e)).count();
        assert!(foreign <= 1, "round {round}: {foreign} events nobody wrote");
        for event in loaded.events.iter().filter(|e| events.contains(e)) {
            assert!(originals.any(|o| o == event), "round {round}: out of order");
        }
    }
}
