//! `search_skills`: offered to a thread whose skills did not all fit in the list its model
//! was given (2 % of the context window), so that no skill is dropped from reach. It
//! searches the skills the thread was created with (names, descriptions, bodies).

use futures::future::BoxFuture;
use rein_context::skills::render::SEARCH_TOOL;
use rein_context::skills::search::SearchIndex;
use rein_context::skills::Skill;
use rein_core::tools::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};
use serde::Deserialize;
use serde_json::json;

const DEFAULT_LIMIT: usize = 10;
const MAX_LIMIT: usize = 50;

pub struct SearchSkills {
    skills: SearchIndex,
}

impl SearchSkills {
    /// Over the skills the model may use on its own (enabled, not explicit-only).
    pub fn new(skills: impl IntoIterator<Item = Skill>) -> Self {
        Self {
            skills: SearchIndex::new(
                skills
                    .into_iter()
                    .filter(|s| s.enabled && s.allow_implicit)
                    .collect(),
            ),
        }
    }
}

#[derive(Deserialize)]
struct Args {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
}

impl Tool for SearchSkills {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SEARCH_TOOL.into(),
            description: "Find skills that are not in the skills list by words of their name, \
                          description or instructions. Returns each match's name, description \
                          and SKILL.md path; open the SKILL.md of the one you use."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words to look for."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                              "description": "At most this many skills (default 10)."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        }
    }

    fn run<'a>(&'a self, call: ToolCall, _ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match serde_json::from_str(&call.arguments) {
                Ok(args) => args,
                Err(e) => return ToolResult::err(format!("invalid arguments: {e}")),
            };
            let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
            let found = self.skills.search(&args.query, limit);
            if found.is_empty() {
                return ToolResult::ok(format!("No skill matches `{}`.", args.query));
            }
            let lines: Vec<String> = found
                .iter()
                .map(|s| {
                    format!(
                        "- {}: {} (file: {})",
                        s.name,
                        s.description,
                        s.path.display()
                    )
                })
                .collect();
            ToolResult::ok(lines.join("\n"))
        })
    }
}
