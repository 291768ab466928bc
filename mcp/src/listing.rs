//! A server's tools, listed within limits: a hostile server must not make rein hold what it
//! likes. Every `tools/list` request is timed (`startup_timeout`), at most
//! [`MAX_LIST_PAGES`] pages are followed, at most [`MAX_TOOLS`] tools kept, a description
//! past [`MAX_DESCRIPTION_BYTES`] is cut, a tool whose definition is still past
//! [`MAX_TOOL_BYTES`] is dropped, and a server's kept tools together stay under
//! [`MAX_LISTED_BYTES`]. What was cut or dropped is said in the listing's warnings (shown
//! on the server's status) rather than failing the server: its other tools still work.
//! The size of a single message is bounded before it is parsed (see `crate::bounded`).

use std::time::Duration;

use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::{Peer, RoleClient};

/// Pages of one `tools/list` followed at most.
pub const MAX_LIST_PAGES: usize = 20;
/// Tools of one server kept at most.
pub const MAX_TOOLS: usize = 500;
/// A tool's description is cut past this many bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 4 * 1024;
/// A tool whose definition (schemas, title, annotations) is longer than this as JSON is
/// not offered.
pub const MAX_TOOL_BYTES: usize = 64 * 1024;
/// The kept tools of one server together, as JSON.
pub const MAX_LISTED_BYTES: usize = 4 * 1024 * 1024;

/// The tools kept and what was left out of them.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub tools: Vec<Tool>,
    pub warnings: Vec<String>,
}

/// What a listing left out, counted as it goes.
#[derive(Default)]
struct Excess {
    descriptions_cut: usize,
    too_big: Vec<String>,
    over_total: usize,
    over_count: bool,
    bytes: usize,
}

/// List every page of the server's tools, within the limits.
pub(crate) async fn list(peer: &Peer<RoleClient>, timeout: Duration) -> Result<Listing, String> {
    let mut listing = Listing::default();
    let mut excess = Excess::default();
    let mut cursor = None;
    let mut pages = 0;
    let more = loop {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let page = tokio::time::timeout(timeout, peer.list_tools(Some(params)))
            .await
            .map_err(|_| {
                format!(
                    "tools/list got no answer within {}s (startup_timeout_sec)",
                    timeout.as_secs_f64()
                )
            })?
            .map_err(|e| format!("tools/list failed: {e}"))?;
        pages += 1;
        for tool in page.tools {
            if listing.tools.len() == MAX_TOOLS {
                excess.over_count = true;
                break;
            }
            if let Some(tool) = excess.admit(tool) {
                listing.tools.push(tool);
            }
        }
        match page.next_cursor {
            None => break false,
            Some(_) if excess.over_count => break false,
            Some(_) if pages == MAX_LIST_PAGES => break true,
            Some(next) => cursor = Some(next),
        }
    };
    listing.warnings = excess.warnings(more);
    for warning in &listing.warnings {
        tracing::warn!("MCP server tools: {warning}");
    }
    Ok(listing)
}

impl Excess {
    /// `tool` as it is kept (its description cut), or `None` when it is dropped.
    fn admit(&mut self, mut tool: Tool) -> Option<Tool> {
        if let Some(description) = tool.description.as_mut() {
            if description.len() > MAX_DESCRIPTION_BYTES {
                let cut = description.floor_char_boundary(MAX_DESCRIPTION_BYTES);
                description.to_mut().truncate(cut);
                self.descriptions_cut += 1;
            }
        }
        let size = json_size(&tool);
        if size > MAX_TOOL_BYTES {
            if self.too_big.len() < 5 {
                let name = &tool.name[..tool.name.floor_char_boundary(64)];
                self.too_big.push(name.to_owned());
            } else {
                self.too_big.push(String::new());
            }
            return None;
        }
        if self.bytes + size > MAX_LISTED_BYTES {
            self.over_total += 1;
            return None;
        }
        self.bytes += size;
        Some(tool)
    }

    fn warnings(&self, more_pages: bool) -> Vec<String> {
        let mut warnings = Vec::new();
        if more_pages {
            warnings.push(format!(
                "tools/list has more than {MAX_LIST_PAGES} pages; the rest were not listed"
            ));
        }
        if self.over_count {
            warnings.push(format!(
                "the server listed more than {MAX_TOOLS} tools; only the first {MAX_TOOLS} are offered"
            ));
        }
        if self.descriptions_cut > 0 {
            warnings.push(format!(
                "{} tool descriptions cut to {MAX_DESCRIPTION_BYTES} bytes",
                self.descriptions_cut
            ));
        }
        if !self.too_big.is_empty() {
            let named: Vec<&str> = self
                .too_big
                .iter()
                .filter(|n| !n.is_empty())
                .map(String::as_str)
                .collect();
            warnings.push(format!(
                "{} tools not offered, their definitions being over {MAX_TOOL_BYTES} bytes: {}",
                self.too_big.len(),
                named.join(", ")
            ));
        }
        if self.over_total > 0 {
            warnings.push(format!(
                "{} tools not offered: the server's tools passed {MAX_LISTED_BYTES} bytes together",
                self.over_total
            ));
        }
        warnings
    }
}

/// The length of `value` as JSON, counted without keeping the text.
fn json_size(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        // Not serializable: never offered.
        Err(_) => usize::MAX,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn tool(name: &str, description: &str, schema_bytes: usize) -> Tool {
        let schema = serde_json::json!({"type": "object", "description": "x".repeat(schema_bytes)});
        let serde_json::Value::Object(schema) = schema else {
            unreachable!()
        };
        Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema))
    }

    #[test]
    fn descriptions_are_cut_big_tools_dropped_and_the_total_bounded() {
        let mut excess = Excess::default();
        let cut = excess.admit(tool("a", &"é".repeat(3000), 10)).unwrap();
        assert_eq!(
            cut.description.as_deref().unwrap().len(),
            MAX_DESCRIPTION_BYTES
        );
        assert!(excess.admit(tool("big", "d", MAX_TOOL_BYTES)).is_none());
        let mut kept = 1;
        while excess.admit(tool("t", "d", 60 * 1024)).is_some() {
            kept += 1;
        }
        assert_eq!(kept, 1 + MAX_LISTED_BYTES / (60 * 1024 + 60));
        assert_eq!(
            excess.warnings(true),
            vec![
                format!(
                    "tools/list has more than {MAX_LIST_PAGES} pages; the rest were not listed"
                ),
                "1 tool descriptions cut to 4096 bytes".to_owned(),
                "1 tools not offered, their definitions being over 65536 bytes: big".to_owned(),
                "1 tools not offered: the server's tools passed 4194304 bytes together".to_owned(),
            ]
        );
    }
}
