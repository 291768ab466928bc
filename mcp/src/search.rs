//! Tools past the budget, behind a search, as Codex's `tool_search` offers deferred tools:
//! when a thread's MCP servers together offer more than `mcp_tool_budget` tools (40 by
//! default), the model is offered `tool_search` (`query`, `limit`, default 8) instead of
//! them. A search ranks the tools by BM25 over their name, server, title, description and
//! argument names, answers the matches (name, description, parameters), and offers them
//! from the next step on, for the rest of the thread (searches add up).
//!
//! What was found is kept in memory, a cache like the servers' tool lists: after a restart
//! the model searches again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use futures::future::BoxFuture;
use rein_core::tools::{Tool, ToolCall, ToolContext, ToolResult, ToolSet, ToolSpec};
use rein_protocol::ToolAction;
use serde_json::{json, Value};

pub const TOOL_SEARCH_NAME: &str = "tool_search";
/// MCP tools offered directly at most; past it they are all behind `tool_search`.
pub const DEFAULT_TOOL_BUDGET: usize = 40;
const DEFAULT_LIMIT: usize = 8;
const MAX_LIMIT: usize = 50;

/// One thread's deferred tools: every MCP tool it has, and those a search found.
#[derive(Default)]
pub(crate) struct Deferred {
    catalog: RwLock<Arc<ToolSet>>,
    found: Mutex<Vec<String>>,
    /// Bumped when a search finds a new tool, so the thread's set is rebuilt.
    pub(crate) version: AtomicU64,
}

impl Deferred {
    pub(crate) fn set_catalog(&self, catalog: Arc<ToolSet>) {
        *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = catalog;
    }

    /// What the model is offered: `tool_search`, then the tools found so far.
    pub(crate) fn offered(self: &Arc<Self>) -> ToolSet {
        let catalog = self.catalog();
        let found = self.found.lock().unwrap_or_else(PoisonError::into_inner);
        let search: Arc<dyn Tool> = Arc::new(ToolSearch {
            deferred: Arc::clone(self),
        });
        let tools = std::iter::once(search)
            .chain(found.iter().filter_map(|name| catalog.get(name)))
            .collect();
        ToolSet::new(tools)
    }

    fn catalog(&self) -> Arc<ToolSet> {
        Arc::clone(&self.catalog.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn search(&self, query: &str, limit: usize) -> Vec<ToolSpec> {
        let catalog = self.catalog();
        let specs = catalog.specs();
        let documents: Vec<Vec<String>> = specs.iter().map(document).collect();
        let ranked = bm25(&documents, &words(query));
        let matches: Vec<ToolSpec> = ranked
            .into_iter()
            .take(limit)
            .map(|i| specs[i].clone())
            .collect();
        let mut found = self.found.lock().unwrap_or_else(PoisonError::into_inner);
        let before = found.len();
        for spec in &matches {
            if !found.contains(&spec.name) {
                found.push(spec.name.clone());
            }
        }
        if found.len() != before {
            self.version.fetch_add(1, Ordering::Relaxed);
        }
        matches
    }
}

/// The words of a text: lower-case runs of letters and digits (`get_weather` is two).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// What a tool is searched by: its name (server and tool), description, argument names.
fn document(spec: &ToolSpec) -> Vec<String> {
    let mut text = format!("{} {}", spec.name, spec.description);
    if let Some(properties) = spec.parameters["properties"].as_object() {
        for key in properties.keys() {
            text.push(' ');
            text.push_str(key);
        }
    }
    words(&text)
}

/// The documents that match `query`, best first (Okapi BM25, k1 = 1.2, b = 0.75; ties in
/// catalog order).
fn bm25(documents: &[Vec<String>], query: &[String]) -> Vec<usize> {
    let n = documents.len() as f64;
    let average = documents.iter().map(Vec::len).sum::<usize>() as f64 / n.max(1.0);
    let mut scores: Vec<(usize, f64)> = Vec::new();
    let frequency: HashMap<&str, usize> = query
        .iter()
        .map(|term| {
            let df = documents.iter().filter(|d| d.contains(term)).count();
            (term.as_str(), df)
        })
        .collect();
    for (i, document) in documents.iter().enumerate() {
        let mut score = 0.0;
        for term in query {
            let tf = document.iter().filter(|w| *w == term).count() as f64;
            if tf == 0.0 {
                continue;
            }
            let df = frequency[term.as_str()] as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            let norm = 1.2 * (0.25 + 0.75 * document.len() as f64 / average.max(1.0));
            score += idf * tf * 2.2 / (tf + norm);
        }
        if score > 0.0 {
            scores.push((i, score));
        }
    }
    scores.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scores.into_iter().map(|(i, _)| i).collect()
}

struct ToolSearch {
    deferred: Arc<Deferred>,
}

impl Tool for ToolSearch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL_SEARCH_NAME.into(),
            description: format!(
                "Searches the tools of the MCP servers, which are not offered until found \
                 ({} of them). Matching tools are listed and offered from your next request \
                 on, for the rest of the thread; searches add up. Search when a task needs a \
                 capability none of your tools has.",
                self.deferred.catalog().specs().len()
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Search query for the tools (words of what they do)."},
                    "limit": {"type": "number", "description": format!("Maximum number of tools to return (defaults to {DEFAULT_LIMIT}).")}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        }
    }

    fn describe(&self, call: &ToolCall, _ctx: &ToolContext) -> ToolAction {
        ToolAction::other(TOOL_SEARCH_NAME, &call.arguments)
    }

    fn run<'a>(&'a self, call: ToolCall, _ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Value = match serde_json::from_str(&call.arguments) {
                Ok(v) => v,
                Err(e) => return ToolResult::err(format!("the arguments are not JSON: {e}")),
            };
            let Some(query) = args["query"].as_str().filter(|q| !q.trim().is_empty()) else {
                return ToolResult::err("query must be a non-empty string");
            };
            let limit = match args.get("limit").and_then(Value::as_f64) {
                None => DEFAULT_LIMIT,
                Some(l) if l >= 1.0 => (l as usize).min(MAX_LIMIT),
                Some(_) => return ToolResult::err("limit must be greater than zero"),
            };
            let tools: Vec<Value> = self
                .deferred
                .search(query, limit)
                .into_iter()
                .map(|s| json!({"name": s.name, "description": s.description, "parameters": s.parameters}))
                .collect();
            ToolResult::ok(json!({ "tools": tools }).to_string())
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn bm25_ranks_the_documents_that_hold_the_rarer_words_first() {
        let docs: Vec<Vec<String>> = ["weather in lima", "weather in paris", "sum two numbers"]
            .iter()
            .map(|d| words(d))
            .collect();
        assert_eq!(bm25(&docs, &words("Lima weather")), vec![0, 1]);
        assert_eq!(bm25(&docs, &words("numbers")), vec![2]);
        assert!(bm25(&docs, &words("nothing")).is_empty());
    }
}
