//! A tool result's content blocks, for the model and for front ends. The model reads text
//! blocks as they are and a readable line for each other block (an image, audio, an
//! embedded resource, a resource link); front ends get the blocks themselves, as the
//! server sent them, whenever they are more than that text.

use serde_json::Value;

/// The model's text of `blocks`, one block a paragraph.
pub(crate) fn model_text(blocks: &[Value]) -> String {
    blocks.iter().map(block_text).collect::<Vec<_>>().join("\n")
}

/// The blocks to keep for front ends: none when plain text blocks say it all.
pub(crate) fn shown_blocks(blocks: Vec<Value>) -> Vec<Value> {
    let plain = blocks.iter().all(|b| {
        b.get("type").and_then(Value::as_str) == Some("text")
            && b.as_object().is_some_and(|o| o.len() == 2)
    });
    if plain {
        Vec::new()
    } else {
        blocks
    }
}

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// Roughly how many bytes base64 `data` decodes to.
fn decoded_len(data: &str) -> usize {
    data.trim_end_matches('=').len() * 3 / 4
}

fn block_text(block: &Value) -> String {
    let mime = |v: &Value| str_of(v, "mimeType").unwrap_or("unknown type").to_owned();
    match str_of(block, "type") {
        Some("text") => str_of(block, "text").unwrap_or_default().to_owned(),
        Some(kind @ ("image" | "audio")) => format!(
            "[{kind}: {}, {} bytes]",
            mime(block),
            decoded_len(str_of(block, "data").unwrap_or_default())
        ),
        Some("resource") => {
            let resource = block.get("resource").unwrap_or(&Value::Null);
            let uri = str_of(resource, "uri").unwrap_or("?");
            match (str_of(resource, "text"), str_of(resource, "blob")) {
                (Some(text), _) => format!("[resource {uri} ({})]\n{text}", mime(resource)),
                (None, Some(blob)) => format!(
                    "[resource {uri}: {}, {} bytes]",
                    mime(resource),
                    decoded_len(blob)
                ),
                (None, None) => format!("[resource {uri}]"),
            }
        }
        Some("resource_link") => {
            let mut line = format!(
                "[resource link: {} <{}>",
                str_of(block, "name").unwrap_or_default(),
                str_of(block, "uri").unwrap_or("?")
            );
            if let Some(mime) = str_of(block, "mimeType") {
                line.push_str(&format!(" ({mime})"));
            }
            if let Some(description) = str_of(block, "description") {
                line.push_str(&format!(": {description}"));
            }
            line.push(']');
            line
        }
        _ => block.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn every_kind_of_block_reads_as_a_line_and_only_plain_text_is_not_kept() {
        let blocks = vec![
            json!({"type": "text", "text": "Here:"}),
            json!({"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}),
            json!({"type": "audio", "data": "aGVsbG8gd29ybGQ=", "mimeType": "audio/wav"}),
            json!({"type": "resource", "resource": {"uri": "demo://a", "mimeType": "text/plain", "text": "A"}}),
            json!({"type": "resource", "resource": {"uri": "demo://b", "blob": "aGk="}}),
            json!({"type": "resource_link", "name": "B", "uri": "demo://b", "mimeType": "text/plain", "description": "the b"}),
        ];
        assert_eq!(
            model_text(&blocks),
            "Here:\n[image: image/png, 5 bytes]\n[audio: audio/wav, 11 bytes]\n\
             [resource demo://a (text/plain)]\nA\n[resource demo://b: unknown type, 2 bytes]\n\
             [resource link: B <demo://b> (text/plain): the b]"
        );
        assert_eq!(shown_blocks(blocks.clone()), blocks);
        let plain = vec![
            json!({"type": "text", "text": "a"}),
            json!({"type": "text", "text": "b"}),
        ];
        assert_eq!(shown_blocks(plain), Vec::<Value>::new());
        let annotated = vec![json!({"type": "text", "text": "a", "annotations": {"priority": 1}})];
        assert_eq!(shown_blocks(annotated.clone()), annotated);
    }
}
