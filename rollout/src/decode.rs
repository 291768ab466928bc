//! Fast decoding of persisted events. The protocol enums are internally tagged
//! (`"type"` inside the object), which serde's derive decodes by first buffering the
//! whole object, so every string is copied twice more before it lands in the event. On a
//! large rollout that dominated resume time. Writers always put `"type"` first, so this
//! decoder reads it and then the fields straight into the variant, for the variants that
//! carry bulk (`ItemCompleted` and its items). Anything else, or an object whose tag is
//! not first, goes through serde's derive, so the result is always what derive gives.
//!
//! It is also where old rollouts are upgraded, once: a tool call's begin written before
//! tools described their calls gets the action nothing more is known of
//! ([`ToolAction::other`]), and its end written before tools reported outcomes gets what
//! is known ([`ToolOutcome::unreported`]), so in memory a tool fact is never missing.

use std::borrow::Cow;
use std::fmt;

use rein_protocol::{
    Event, EventMsg, InputPart, Item, ItemId, ThreadId, ToolAction, ToolFacts, ToolOutcome, TurnId,
};
use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// An [`Event`] decoded from a rollout line's payload, and how many fields in it were not
/// understood (skipped, and counted so the reader can report them).
pub(crate) struct EventPayload(pub Event, pub u32);

impl<'de> Deserialize<'de> for EventPayload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EventVisitor)
    }
}

struct EventVisitor;

impl<'de> Visitor<'de> for EventVisitor {
    type Value = EventPayload;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EventPayload, A::Error> {
        let mut thread_id: Option<ThreadId> = None;
        let mut turn_id: Option<TurnId> = None;
        let mut seq: Option<u64> = None;
        let mut timestamp_ms: Option<u64> = None;
        let mut msg: Option<EventMsg> = None;
        let mut unknown = 0;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "thread_id" => thread_id = Some(map.next_value()?),
                "turn_id" => turn_id = map.next_value()?,
                "seq" => seq = Some(map.next_value()?),
                "timestamp_ms" => timestamp_ms = Some(map.next_value()?),
                "msg" => {
                    let MsgPayload(m, n) = map.next_value()?;
                    msg = Some(m);
                    unknown += n;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    unknown += 1;
                }
            }
        }
        let event = Event {
            thread_id: thread_id.ok_or_else(|| de::Error::missing_field("thread_id"))?,
            turn_id,
            seq: seq.ok_or_else(|| de::Error::missing_field("seq"))?,
            timestamp_ms: timestamp_ms.ok_or_else(|| de::Error::missing_field("timestamp_ms"))?,
            msg: msg.ok_or_else(|| de::Error::missing_field("msg"))?,
        };
        Ok(EventPayload(event, unknown))
    }
}

/// Collects the rest of a tagged object and lets serde's derive decode it, counting the
/// fields derive skipped: the keys the decoded value does not write back. (A tracking
/// deserializer cannot see through serde's internally tagged enums.) Only the rare shapes
/// take this path, so encoding the value again costs nothing that matters.
fn by_derive<'de, A: MapAccess<'de>, T: DeserializeOwned + Serialize>(
    mut map: A,
    mut object: Map<String, Value>,
) -> Result<(T, u32), A::Error> {
    while let Some((key, value)) = map.next_entry::<String, Value>()? {
        object.insert(key, value);
    }
    upgrade_tool_facts(&mut object);
    let keys: Vec<String> = object.keys().cloned().collect();
    let value: T = serde_json::from_value(Value::Object(object)).map_err(de::Error::custom)?;
    let unknown = match serde_json::to_value(&value) {
        Ok(Value::Object(known)) => keys.iter().filter(|k| !known.contains_key(*k)).count(),
        _ => 0,
    };
    Ok((value, u32::try_from(unknown).unwrap_or(u32::MAX)))
}

/// A tool call's begin without its `action`, or its end without its `outcome` (rein's
/// rollouts from before tools described calls and reported outcomes): given what is
/// known. Anything else is left as it is.
fn upgrade_tool_facts(object: &mut Map<String, Value>) {
    let text = |object: &Map<String, Value>, key: &str| {
        object
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let upgraded = match object.get("type").and_then(Value::as_str) {
        Some("tool_call_begin") if !object.contains_key("action") => {
            let action = ToolAction::other(&text(object, "name"), &text(object, "arguments"));
            ("action", serde_json::to_value(action))
        }
        Some("tool_call_end") if !object.contains_key("outcome") => {
            let success = object.get("success").and_then(Value::as_bool);
            let outcome = ToolOutcome::unreported(success.unwrap_or(false));
            ("outcome", serde_json::to_value(outcome))
        }
        _ => return,
    };
    if let (key, Ok(value)) = upgraded {
        object.insert(key.to_owned(), value);
    }
}

/// What the first key of a tagged object was.
enum Tag<'de> {
    First(Cow<'de, str>),
    /// Not the tag: the object read so far, for the derive path.
    NotFirst(Map<String, Value>),
}

fn read_tag<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Tag<'de>, A::Error> {
    let Some(first) = map.next_key::<Cow<'de, str>>()? else {
        return Err(de::Error::missing_field("type"));
    };
    if first == "type" {
        return Ok(Tag::First(map.next_value()?));
    }
    let mut object = Map::new();
    object.insert(first.into_owned(), map.next_value()?);
    Ok(Tag::NotFirst(object))
}

fn tagged(kind: &str) -> Map<String, Value> {
    let mut object = Map::new();
    object.insert("type".to_owned(), Value::String(kind.to_owned()));
    object
}

struct MsgPayload(EventMsg, u32);

impl<'de> Deserialize<'de> for MsgPayload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MsgVisitor)
    }
}

struct MsgVisitor;

impl<'de> Visitor<'de> for MsgVisitor {
    type Value = MsgPayload;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MsgPayload, A::Error> {
        let kind = match read_tag(&mut map)? {
            Tag::First(kind) => kind,
            Tag::NotFirst(object) => return by_derive(map, object).map(|(m, n)| MsgPayload(m, n)),
        };
        if kind != "item_completed" {
            return by_derive(map, tagged(&kind)).map(|(m, n)| MsgPayload(m, n));
        }
        let mut item = None;
        let mut unknown = 0;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "item" {
                let ItemPayload(i, n) = map.next_value()?;
                item = Some(i);
                unknown += n;
            } else {
                map.next_value::<IgnoredAny>()?;
                unknown += 1;
            }
        }
        let item = item.ok_or_else(|| de::Error::missing_field("item"))?;
        Ok(MsgPayload(EventMsg::ItemCompleted { item }, unknown))
    }
}

struct ItemPayload(Item, u32);

impl<'de> Deserialize<'de> for ItemPayload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ItemVisitor)
    }
}

struct ItemVisitor;

/// The fields any item variant may have; each variant takes the ones it owns.
#[derive(Default)]
struct ItemFields {
    id: Option<ItemId>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
    output: Option<String>,
    success: Option<bool>,
    facts: Option<Box<ToolFacts>>,
    text: Option<String>,
    partial: Option<bool>,
    encrypted_content: Option<String>,
    content: Option<Vec<InputPart>>,
}

fn required<T, E: de::Error>(value: Option<T>, field: &'static str) -> Result<T, E> {
    value.ok_or_else(|| de::Error::missing_field(field))
}

impl<'de> Visitor<'de> for ItemVisitor {
    type Value = ItemPayload;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a history item object")
    }

    /// One pass over the object's keys, then one arm per item kind: long because there are
    /// that many kinds and fields, kept in one visitor so an item is decoded without a
    /// second parse.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ItemPayload, A::Error> {
        let kind = match read_tag(&mut map)? {
            Tag::First(kind) => kind,
            Tag::NotFirst(object) => return by_derive(map, object).map(|(i, n)| ItemPayload(i, n)),
        };
        let known = [
            "user_message",
            "agent_message",
            "reasoning",
            "tool_call",
            "tool_output",
            "developer_message",
            "interruption",
        ];
        if !known.contains(&kind.as_ref()) {
            return by_derive(map, tagged(&kind)).map(|(i, n)| ItemPayload(i, n));
        }
        let mut f = ItemFields::default();
        let mut unknown = 0;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            // Only the fields of this variant are decoded; others are ignored as derive does.
            match (kind.as_ref(), key.as_ref()) {
                (_, "id") => f.id = Some(map.next_value()?),
                ("tool_call" | "tool_output", "call_id") => f.call_id = Some(map.next_value()?),
                ("tool_call", "name") => f.name = Some(map.next_value()?),
                ("tool_call", "arguments") => f.arguments = Some(map.next_value()?),
                ("tool_output", "output") => f.output = Some(map.next_value()?),
                ("tool_output", "success") => f.success = Some(map.next_value()?),
                ("tool_output", "facts") => f.facts = map.next_value()?,
                ("agent_message" | "reasoning" | "developer_message" | "interruption", "text") => {
                    f.text = Some(map.next_value()?)
                }
                ("agent_message", "partial") => f.partial = Some(map.next_value()?),
                ("reasoning", "encrypted_content") => f.encrypted_content = map.next_value()?,
                ("user_message", "content") => f.content = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    unknown += 1;
                }
            }
        }
        let id = required(f.id, "id")?;
        let item = match kind.as_ref() {
            "user_message" => Item::UserMessage {
                id,
                content: required(f.content, "content")?,
            },
            "agent_message" => Item::AgentMessage {
                id,
                text: required(f.text, "text")?,
                partial: f.partial.unwrap_or(false),
            },
            "reasoning" => Item::Reasoning {
                id,
                text: required(f.text, "text")?,
                encrypted_content: f.encrypted_content,
            },
            "tool_call" => Item::ToolCall {
                id,
                call_id: required(f.call_id, "call_id")?,
                name: required(f.name, "name")?,
                arguments: required(f.arguments, "arguments")?,
            },
            "tool_output" => Item::ToolOutput {
                id,
                call_id: required(f.call_id, "call_id")?,
                output: required(f.output, "output")?,
                success: required(f.success, "success")?,
                facts: f.facts,
            },
            "developer_message" => Item::DeveloperMessage {
                id,
                text: required(f.text, "text")?,
            },
            _ => Item::Interruption {
                id,
                text: required(f.text, "text")?,
            },
        };
        Ok(ItemPayload(item, unknown))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn both(json: &str) -> (Result<Event, String>, Result<Event, String>) {
        let fast = serde_json::from_str::<EventPayload>(json)
            .map(|p| p.0)
            .map_err(|e| e.to_string());
        let derive = serde_json::from_str::<Event>(json).map_err(|e| e.to_string());
        (fast, derive)
    }

    #[test]
    fn agrees_with_derive_on_odd_but_valid_input() {
        let thread = ThreadId::new();
        let cases = [
            // Tag not first, unknown fields, nulls for optional fields.
            format!(
                r#"{{"thread_id":"{thread}","seq":1,"timestamp_ms":2,"turn_id":null,"msg":{{"item":{{"id":"i","type":"reasoning","text":"t","encrypted_content":null}},"type":"item_completed"}}}}"#
            ),
            format!(
                r#"{{"thread_id":"{thread}","seq":1,"timestamp_ms":2,"extra":[1],"msg":{{"type":"item_completed","item":{{"type":"tool_output","id":"i","call_id":"c","output":"o\n\"x\"","success":false,"text":5}}}}}}"#
            ),
            format!(
                r#"{{"thread_id":"{thread}","seq":1,"timestamp_ms":2,"msg":{{"type":"item_completed","item":{{"type":"agent_message","id":"i","text":"t"}}}}}}"#
            ),
            format!(
                r#"{{"thread_id":"{thread}","seq":1,"timestamp_ms":2,"msg":{{"type":"item_completed","item":{{"type":"user_message","id":"i","content":[{{"type":"image","url":"u"}}]}}}}}}"#
            ),
            format!(
                r#"{{"thread_id":"{thread}","seq":1,"timestamp_ms":2,"msg":{{"type":"warning","message":"w"}}}}"#
            ),
        ];
        for json in &cases {
            let (fast, derive) = both(json);
            assert!(derive.is_ok(), "{json}: {derive:?}");
            assert_eq!(fast, derive, "{json}");
        }
    }

    #[test]
    fn a_tool_call_from_before_tool_facts_is_given_what_is_known_of_it() {
        let thread = ThreadId::new();
        let line = |msg: &str| {
            format!(r#"{{"thread_id":"{thread}","seq":1,"timestamp_ms":2,"msg":{msg}}}"#)
        };
        let decode = |json: &str| serde_json::from_str::<EventPayload>(json).unwrap();
        let EventPayload(begin, unknown) = decode(&line(
            r#"{"type":"tool_call_begin","call_id":"c","name":"custom","arguments":"{\"a\":1}"}"#,
        ));
        assert_eq!(unknown, 0);
        assert_eq!(
            begin.msg,
            EventMsg::ToolCallBegin {
                call_id: "c".into(),
                name: "custom".into(),
                arguments: r#"{"a":1}"#.into(),
                action: ToolAction::other("custom", r#"{"a":1}"#),
            }
        );
        for success in [true, false] {
            let EventPayload(end, unknown) = decode(&line(&format!(
                r#"{{"type":"tool_call_end","call_id":"c","success":{success},"duration_ms":4}}"#
            )));
            assert_eq!(unknown, 0);
            assert_eq!(
                end.msg,
                EventMsg::ToolCallEnd {
                    call_id: "c".into(),
                    success,
                    duration_ms: 4,
                    outcome: ToolOutcome::unreported(success),
                }
            );
        }
    }

    #[test]
    fn rejects_what_derive_rejects() {
        let thread = ThreadId::new();
        let cases = [
            format!(
                r#"{{"thread_id":"{thread}","seq":1,"timestamp_ms":2,"msg":{{"type":"item_completed","item":{{"type":"tool_output","id":"i","call_id":"c","output":"o"}}}}}}"#
            ),
            format!(r#"{{"thread_id":"{thread}","seq":1,"msg":{{"type":"shutdown_complete"}}}}"#),
            format!(
                r#"{{"thread_id":"{thread}","seq":1,"timestamp_ms":2,"msg":{{"type":"item_completed","item":{{"type":"nope","id":"i"}}}}}}"#
            ),
            format!(
                r#"{{"thread_id":"{thread}","seq":1,"timestamp_ms":2,"msg":{{"type":"no_such_event"}}}}"#
            ),
        ];
        for json in &cases {
            let (fast, derive) = both(json);
            assert!(derive.is_err(), "{json}");
            assert!(fast.is_err(), "{json}: {fast:?}");
        }
    }
}
