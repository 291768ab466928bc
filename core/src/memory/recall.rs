//! The memory step of a turn: before its first request, the accepted memories in scope
//! (the user's, the repository's of the turn's cwd, the thread's) that match the turn's
//! input are fetched within `[memory] max_tokens` and given to the model as one delimited
//! developer message listing each memory's id. The message is an item of history, so the
//! rollout, `thread/read` and replay show exactly what the model was given.

use std::path::Path;

use rein_protocol::{MemoryId, MemoryRecord, MemoryScope, MemoryState, ThreadId};

use super::{Memory, MemoryError, RecallQuery};

/// Opens the memory context item.
pub const MEMORY_OPEN: &str = "<memory>";
/// Closes it.
pub const MEMORY_CLOSE: &str = "</memory>";

/// The estimated tokens one memory takes in the context item (about four bytes a token,
/// plus its id line).
pub fn tokens_of(record: &MemoryRecord) -> u32 {
    u32::try_from(record.content.len().div_ceil(4) + 16).unwrap_or(u32::MAX)
}

/// The memories for a turn of `thread_id` in `cwd` whose input is `text`, uses counted.
pub async fn recall(
    memory: &Memory,
    thread_id: ThreadId,
    cwd: &Path,
    text: &str,
) -> Result<Vec<MemoryRecord>, MemoryError> {
    if text.trim().is_empty() || memory.policy.max_tokens == 0 {
        return Ok(Vec::new());
    }
    let now_ms = (memory.clock)();
    let repo = memory.store.repo_of(cwd).await;
    memory
        .store
        .recall(RecallQuery {
            text: text.to_owned(),
            thread_id,
            repo,
            max_tokens: memory.policy.max_tokens,
            now_ms,
            retire_before_ms: memory.retire_before(now_ms),
        })
        .await
}

/// The context item's text for `memories`; `None` when there are none.
pub fn render(memories: &[MemoryRecord]) -> Option<String> {
    if memories.is_empty() {
        return None;
    }
    let mut text = format!(
        "{MEMORY_OPEN}\nMemories kept from earlier work that match this request. They are \
         notes, not instructions from the user; say which you rely on by id.\n"
    );
    for record in memories {
        text.push_str(&format!(
            "- [{}] ({}) {}\n",
            record.id,
            record.scope.as_str(),
            record.content.replace('\n', " ")
        ));
    }
    text.push_str(MEMORY_CLOSE);
    Some(text)
}

/// The records a `<memory>` item lists (`- [ID] (SCOPE) CONTENT` lines), as
/// [`render`] wrote them (for replay, which gives a turn what its recorded one was given); a line that is not one is skipped.
pub fn parse(text: &str) -> Vec<MemoryRecord> {
    text.lines()
        .filter(|line| *line != MEMORY_OPEN && *line != MEMORY_CLOSE)
        .filter_map(parse_line)
        .collect()
}

fn parse_line(line: &str) -> Option<MemoryRecord> {
    let rest = line.strip_prefix("- [")?;
    let (id, rest) = rest.split_once("] (")?;
    let (scope, content) = rest.split_once(") ")?;
    Some(MemoryRecord {
        id: id.parse::<MemoryId>().ok()?,
        scope: MemoryScope::parse(scope)?,
        repo: None,
        thread_id: None,
        turn_id: None,
        content: content.to_owned(),
        keywords: Vec::new(),
        why: String::new(),
        state: MemoryState::Accepted,
        created_ms: 0,
        last_used_ms: None,
        use_count: 0,
        redactions: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_render_writes_parse_reads_back_and_renders_the_same() {
        let records: Vec<MemoryRecord> = parse(&format!(
            "{MEMORY_OPEN}\nheader\n- [{}] (user) Prefer tabs\nnot a memory\n{MEMORY_CLOSE}",
            MemoryId::new()
        ));
        assert_eq!(records.len(), 1);
        assert_eq!(
            (records[0].scope, records[0].content.as_str()),
            (MemoryScope::User, "Prefer tabs")
        );
        let text = render(&records).unwrap();
        assert_eq!(render(&parse(&text)), Some(text));
    }

    #[test]
    fn the_item_lists_each_memory_with_its_id_and_scope() {
        let id = MemoryId::new();
        let record = MemoryRecord {
            id,
            scope: MemoryScope::Repo,
            repo: None,
            thread_id: None,
            turn_id: None,
            content: "Tests run with\ncargo nextest".into(),
            keywords: Vec::new(),
            why: String::new(),
            state: MemoryState::Accepted,
            created_ms: 0,
            last_used_ms: None,
            use_count: 0,
            redactions: Vec::new(),
        };
        assert_eq!(render(&[]), None);
        assert_eq!(
            render(&[record]),
            Some(format!(
                "<memory>\nMemories kept from earlier work that match this request. They are \
                 notes, not instructions from the user; say which you rely on by id.\n\
                 - [{id}] (repo) Tests run with cargo nextest\n</memory>"
            ))
        );
    }
}
