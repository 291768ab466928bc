//! The line format. Every line is one JSON object, the envelope
//! `{"timestamp": RFC 3339, "type": …, "payload": …}`; the first line is `session_meta`,
//! then one `event` line per persisted [`Event`] whose payload is the event as serde
//! writes it (large strings may be blob references, see [`super::blobs`]).
//! `docs/rollout-format.md` is the reference for other readers.

use std::fmt;
use std::io::Write;

use rein_protocol::Event;
use schemars::JsonSchema;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use rein_core::store::SessionMeta;

use super::decode::EventPayload;
use super::time::rfc3339_ms;

pub const TYPE_SESSION_META: &str = "session_meta";

/// The format this build writes. Readers accept files up to this version.
pub const FORMAT_VERSION: u32 = 1;

/// A `session_meta` line's payload: the thread's meta and the file's format version, in
/// one object (`{"format_version": 1, "thread_id": …}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MetaLine<M> {
    pub format_version: u32,
    #[serde(flatten)]
    pub meta: M,
}

impl<'a> MetaLine<&'a SessionMeta> {
    /// `meta` as this build writes it.
    pub fn current(meta: &'a SessionMeta) -> Self {
        MetaLine {
            format_version: FORMAT_VERSION,
            meta,
        }
    }
}
pub const TYPE_EVENT: &str = "event";

/// One rollout line as other readers see it; only used to generate its JSON Schema
/// (`schema/RolloutLine.json`), the writer formats lines directly.
#[derive(Serialize, JsonSchema)]
pub struct RolloutLine {
    /// RFC 3339, UTC, milliseconds.
    pub timestamp: String,
    #[serde(flatten)]
    pub body: RolloutLineBody,
}

#[derive(Serialize, JsonSchema)]
#[serde(tag = "type", content = "payload", rename_all = "snake_case")]
pub enum RolloutLineBody {
    SessionMeta(MetaLine<SessionMeta>),
    /// Large strings may be blob references (`"\u0001blob:sha256:<hex>"`).
    Event(Event),
}

/// The JSON Schema of a rollout line, as pretty JSON ending with a newline.
pub fn line_schema() -> String {
    rein_protocol::schema::render(schemars::schema_for!(RolloutLine))
}

/// Appends one complete envelope line (with its newline) to `out`.
pub(crate) fn write_line<T: Serialize>(
    out: &mut Vec<u8>,
    timestamp_ms: u64,
    kind: &str,
    payload: &T,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    // Writing into a Vec cannot fail, so only serialisation errors come back.
    let _ = write!(
        out,
        "{{\"timestamp\":\"{}\",\"type\":\"{kind}\",\"payload\":",
        rfc3339_ms(timestamp_ms)
    );
    if let Err(e) = serde_json::to_writer(&mut *out, payload) {
        out.truncate(start);
        return Err(e);
    }
    out.extend_from_slice(b"}\n");
    Ok(())
}

/// What one line holds.
#[derive(Debug)]
pub(crate) enum LineBody {
    Meta(Box<MetaLine<SessionMeta>>),
    Event(Box<Event>),
    /// A line type this build does not know (skipped, reported).
    Unknown(String),
}

/// A parsed line plus how many of its fields (envelope or payload) were not understood.
#[derive(Debug)]
pub(crate) struct ParsedLine {
    pub body: LineBody,
    pub unknown_fields: u32,
}

impl<'de> Deserialize<'de> for ParsedLine {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(LineVisitor)
    }
}

struct LineVisitor;

impl<'de> Visitor<'de> for LineVisitor {
    type Value = ParsedLine;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a rollout line object {timestamp, type, payload}")
    }

    // Single pass in the common case: writers put `type` before `payload`, so the payload
    // is parsed straight into its type. A payload that comes first is buffered as a Value.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ParsedLine, A::Error> {
        let mut kind: Option<String> = None;
        let mut body: Option<LineBody> = None;
        let mut early_payload: Option<serde_json::Value> = None;
        let mut unknown_fields = 0;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "type" => kind = Some(map.next_value()?),
                "payload" => match kind.as_deref() {
                    Some(TYPE_EVENT) => {
                        let EventPayload(event, unknown) = map.next_value()?;
                        unknown_fields += unknown;
                        body = Some(LineBody::Event(Box::new(event)));
                    }
                    Some(TYPE_SESSION_META) => body = Some(LineBody::Meta(map.next_value()?)),
                    Some(other) => {
                        map.next_value::<IgnoredAny>()?;
                        body = Some(LineBody::Unknown(other.to_owned()));
                    }
                    None => early_payload = Some(map.next_value()?),
                },
                "timestamp" => {
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    unknown_fields += 1;
                }
            }
        }
        let kind = kind.ok_or_else(|| de::Error::missing_field("type"))?;
        let body = match (body, early_payload) {
            (Some(body), _) => body,
            (None, Some(value)) => match kind.as_str() {
                TYPE_EVENT => {
                    LineBody::Event(serde_json::from_value(value).map_err(de::Error::custom)?)
                }
                TYPE_SESSION_META => {
                    LineBody::Meta(serde_json::from_value(value).map_err(de::Error::custom)?)
                }
                _ => LineBody::Unknown(kind),
            },
            (None, None) => return Err(de::Error::missing_field("payload")),
        };
        Ok(ParsedLine {
            body,
            unknown_fields,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rein_protocol::{EventMsg, ThreadId};

    /// `schema/RolloutLine.json` is generated from the code; set `REIN_UPDATE_SCHEMA=1`
    /// to rewrite it after a deliberate format change.
    #[test]
    fn checked_in_schema_matches_the_code() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/RolloutLine.json");
        let generated = line_schema();
        if std::env::var_os("REIN_UPDATE_SCHEMA").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &generated).unwrap();
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == generated,
            "{} is stale: run with REIN_UPDATE_SCHEMA=1",
            path.display()
        );
    }

    fn event() -> Event {
        Event {
            thread_id: ThreadId::new(),
            turn_id: None,
            seq: 3,
            timestamp_ms: 1_796_008_609_147,
            msg: EventMsg::Warning {
                message: "careful \"quoted\"\n".into(),
            },
        }
    }

    #[test]
    fn event_line_is_the_envelope_around_the_serde_event() {
        let ev = event();
        let mut out = Vec::new();
        write_line(&mut out, ev.timestamp_ms, TYPE_EVENT, &ev).unwrap();
        assert_eq!(out.last(), Some(&b'\n'));
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["timestamp"], "2026-11-30T03:16:49.147Z");
        assert_eq!(value["type"], "event");
        assert_eq!(value["payload"], serde_json::to_value(&ev).unwrap());
        // The schema type describes exactly what the writer writes.
        let described = RolloutLine {
            timestamp: "2026-11-30T03:16:49.147Z".into(),
            body: RolloutLineBody::Event(ev.clone()),
        };
        assert_eq!(value, serde_json::to_value(&described).unwrap());
        let parsed: ParsedLine = serde_json::from_slice(&out).unwrap();
        match parsed.body {
            LineBody::Event(back) => assert_eq!(*back, ev),
            other => panic!("not an event: {other:?}"),
        }
    }

    #[test]
    fn payload_before_type_and_unknown_fields_are_accepted() {
        let ev = event();
        let line = format!(
            "{{\"payload\":{},\"extra\":1,\"type\":\"event\",\"timestamp\":\"x\"}}",
            serde_json::to_string(&ev).unwrap()
        );
        let parsed: ParsedLine = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed.unknown_fields, 1);
        assert!(matches!(parsed.body, LineBody::Event(back) if *back == ev));
        let unknown: ParsedLine =
            serde_json::from_str(r#"{"type":"future_thing","payload":{"a":[1]}}"#).unwrap();
        assert!(matches!(unknown.body, LineBody::Unknown(k) if k == "future_thing"));
    }
}
