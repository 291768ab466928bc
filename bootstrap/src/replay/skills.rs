//! A replay reads each attached skill's `SKILL.md` again: a file changed since the recording
//! is what the replay sends, so that step's input differs from the recording and the
//! comparison names it (`input item k`, with a diff of the file's text). A file gone since
//! is sent as recorded: the replay can only say what a skill is now, not invent one.

use rein_context::skills::attach::part_of;
use rein_protocol::InputPart;

/// `input` with every skill part read from its file now.
pub async fn reread(input: &[InputPart]) -> Vec<InputPart> {
    let mut parts = Vec::with_capacity(input.len());
    for part in input {
        let now = match part {
            InputPart::Skill {
                name,
                path,
                sha256,
                allowed_tools,
                fork,
                ..
            } => match tokio::fs::read(path).await {
                Ok(bytes) => {
                    let mut now = part_of(name, path, &bytes, allowed_tools.clone());
                    if let InputPart::Skill { fork: f, .. } = &mut now {
                        *f = *fork;
                    }
                    match &now {
                        InputPart::Skill { sha256: new, .. } if new != sha256 => Some(now),
                        _ => None,
                    }
                }
                Err(_) => None,
            },
            _ => None,
        };
        parts.push(now.unwrap_or_else(|| part.clone()));
    }
    parts
}
