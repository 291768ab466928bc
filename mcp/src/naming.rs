//! The names the model sees for a server's tools, formed as Codex forms them:
//! `mcp__<server>__<tool>`, each part reduced to `[A-Za-z0-9_]`, at most 64 bytes. A name
//! that is too long or that two tools would share gets `_` and 12 hex digits of the SHA-1
//! of the raw identity, the tool part cut to fit. Tools are named in the order of their raw
//! names, so the same list always gives the same names. The raw name is what `tools/call`
//! sends.

use std::collections::HashSet;

use sha1::{Digest, Sha1};

use rein_config::mcp::sanitize;

pub const MAX_TOOL_NAME_LEN: usize = 64;
const HASH_LEN: usize = 12;
const PREFIX: &str = "mcp";
const DELIMITER: &str = "__";

/// The model-visible names of `tools` (raw names) of `server`, in the same order. Exact
/// duplicates get `None` (the later one is dropped).
pub fn model_names(server: &str, tools: &[&str]) -> Vec<Option<String>> {
    let namespace = format!("{PREFIX}{DELIMITER}{}{DELIMITER}", sanitize(server));
    let mut order: Vec<usize> = (0..tools.len()).collect();
    order.sort_by(|&a, &b| tools[a].cmp(tools[b]).then(a.cmp(&b)));
    let mut taken = HashSet::new();
    let mut raw_seen = HashSet::new();
    let mut names = vec![None; tools.len()];
    for i in order {
        let raw = tools[i];
        if !raw_seen.insert(raw) {
            tracing::warn!(
                server,
                tool = raw,
                "the server lists this tool twice; the second is dropped"
            );
            continue;
        }
        let plain = format!("{namespace}{}", sanitize(raw));
        let mut name = plain;
        let mut salt = 0u32;
        // A name taken (or too long) gets a hash; one whose hash is taken too, another.
        while name.len() > MAX_TOOL_NAME_LEN || taken.contains(&name) {
            name = hashed(&namespace, server, raw, salt);
            salt += 1;
        }
        taken.insert(name.clone());
        names[i] = Some(name);
    }
    names
}

fn hashed(namespace: &str, server: &str, raw: &str, salt: u32) -> String {
    let identity = match salt {
        0 => format!("{server}{DELIMITER}{raw}"),
        n => format!("{server}{DELIMITER}{raw}#{n}"),
    };
    let digest = Sha1::digest(identity.as_bytes());
    let hex: String = digest
        .iter()
        .flat_map(|b| [b >> 4, b & 0xf])
        .take(HASH_LEN)
        .map(|n| char::from_digit(u32::from(n), 16).unwrap_or('0'))
        .collect();
    let suffix = format!("_{hex}");
    let tool = sanitize(raw);
    let room = MAX_TOOL_NAME_LEN.saturating_sub(suffix.len());
    let mut base = format!("{namespace}{tool}");
    // Everything is ASCII after sanitizing, so any byte index is a char boundary.
    base.truncate(room);
    format!("{base}{suffix}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn names_are_sanitized_prefixed_and_capped() {
        let long = "a".repeat(80);
        let names = model_names("my-server", &["get-sum", "echo", "get_sum", &long, "echo"]);
        assert_eq!(names[1].as_deref(), Some("mcp__my_server__echo"));
        assert_eq!(names[4], None);
        // `get-sum` and `get_sum` sanitize alike: the first in raw order keeps the plain
        // name, the other is told apart by its hash.
        assert_eq!(names[0].as_deref(), Some("mcp__my_server__get_sum"));
        let other = names[2].as_deref().unwrap();
        assert!(other.starts_with("mcp__my_server__get_sum_"), "{other}");
        assert_eq!(other.len(), "mcp__my_server__get_sum_".len() + 12);
        let capped = names[3].as_deref().unwrap();
        assert_eq!(capped.len(), MAX_TOOL_NAME_LEN);
        assert!(capped.starts_with("mcp__my_server__aaaa"), "{capped}");
        assert_eq!(
            model_names("my-server", &[&long])[0].as_deref(),
            Some(capped)
        );
    }
}
