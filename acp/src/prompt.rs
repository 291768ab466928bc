//! A `session/prompt`'s content blocks as rein's input, and the slash commands a prompt
//! may be. Text and images are input as they are; a linked resource becomes a markdown link
//! and an embedded one its text in a `<context>` block naming it, so the model knows where
//! it came from. Audio is refused (it is not advertised).

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, ContentBlock, EmbeddedResourceResource,
    UnstructuredCommandInput,
};
use rein_bootstrap::skills::attach::NamedSkill;
use rein_bootstrap::skills::Skill;
use rein_protocol::{InputPart, ReviewTarget};

/// The input of a prompt, or why it cannot be taken.
pub fn input_of(blocks: &[ContentBlock]) -> Result<Vec<InputPart>, String> {
    let mut parts = Vec::with_capacity(blocks.len());
    for block in blocks {
        let part = match block {
            ContentBlock::Text(t) => InputPart::text(t.text.clone()),
            ContentBlock::Image(image) => {
                if image.data.is_empty() {
                    match &image.uri {
                        Some(uri) => InputPart::Image { url: uri.clone() },
                        None => return Err("an image block has neither data nor uri".into()),
                    }
                } else {
                    InputPart::Image {
                        url: format!("data:{};base64,{}", image.mime_type, image.data),
                    }
                }
            }
            ContentBlock::ResourceLink(link) => {
                InputPart::text(format!("[{}]({})", link.name, link.uri))
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(text) => InputPart::text(format!(
                    "<context ref=\"{}\">\n{}\n</context>",
                    text.uri, text.text
                )),
                EmbeddedResourceResource::BlobResourceContents(blob) => match &blob.mime_type {
                    Some(mime) if mime.starts_with("image/") => InputPart::Image {
                        url: format!("data:{mime};base64,{}", blob.blob),
                    },
                    _ => {
                        return Err(format!(
                            "the binary resource {} is not an image; rein takes text and images",
                            blob.uri
                        ))
                    }
                },
                _ => return Err("a resource of a kind rein does not know".into()),
            },
            ContentBlock::Audio(_) => {
                return Err("audio is not supported (promptCapabilities.audio is false)".into())
            }
            _ => return Err("a content block of a kind rein does not know".into()),
        };
        parts.push(part);
    }
    Ok(parts)
}

/// A prompt that is one of rein's commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Summarise the conversation to free context.
    Compact,
    Review(ReviewTarget),
    /// Branch the session into a new one.
    Fork,
    /// Switch the model (the argument), or say which are known.
    Model(Option<String>),
    /// Set, show or clear the thread's goal.
    Goal(GoalCommand),
}

/// What `/goal` was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GoalCommand {
    /// `/goal`: say where the goal stands.
    Status,
    /// `/goal clear`.
    Clear,
    /// `/goal OBJECTIVE`, or `/goal --auto-resume OBJECTIVE`: a goal that continues by
    /// itself when the session is loaded again after rein died mid-goal.
    Set {
        objective: String,
        auto_resume: bool,
    },
}

/// The command a prompt is, when its whole text is `/name [args]` with a known name.
pub fn command_of(blocks: &[ContentBlock]) -> Option<Command> {
    let [ContentBlock::Text(text)] = blocks else {
        return None;
    };
    let line = text.text.trim().strip_prefix('/')?;
    let (name, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let args = args.trim();
    match name {
        "compact" if args.is_empty() => Some(Command::Compact),
        "review" => Some(Command::Review(if args.is_empty() {
            ReviewTarget::UncommittedChanges
        } else {
            ReviewTarget::Custom {
                instructions: args.to_owned(),
            }
        })),
        "fork" if args.is_empty() => Some(Command::Fork),
        "model" => Some(Command::Model((!args.is_empty()).then(|| args.to_owned()))),
        "goal" => Some(Command::Goal(match args {
            "" => GoalCommand::Status,
            "clear" => GoalCommand::Clear,
            objective => match objective.strip_prefix("--auto-resume") {
                Some(rest) if rest.is_empty() || rest.starts_with(char::is_whitespace) => {
                    match rest.trim() {
                        "" => GoalCommand::Status,
                        objective => GoalCommand::Set {
                            objective: objective.to_owned(),
                            auto_resume: true,
                        },
                    }
                }
                _ => GoalCommand::Set {
                    objective: objective.to_owned(),
                    auto_resume: false,
                },
            },
        })),
        _ => None,
    }
}

/// A skill as a slash command (`/name what to do`): every skill of the directory, the
/// explicit-only ones included (naming one is what they are for), unless its name is one
/// of rein's own commands.
pub fn skill_commands(skills: &[Skill]) -> Vec<AvailableCommand> {
    let hint = AvailableCommandInput::Unstructured(UnstructuredCommandInput::new("what to do"));
    skills
        .iter()
        // A skill switched off (`[[skills.config]]`) cannot be attached, so is no command.
        .filter(|s| s.enabled && !COMMANDS.contains(&s.name.as_str()))
        .map(|s| AvailableCommand::new(&s.name, &s.description).input(hint.clone()))
        .collect()
}

/// When the prompt starts with `/name` and `name` is one of `skills` (not a rein
/// command): that skill, and the prompt without the command.
pub fn skill_invocation(
    blocks: &[ContentBlock],
    skills: &[Skill],
) -> Option<(NamedSkill, Vec<ContentBlock>)> {
    let (ContentBlock::Text(first), rest) = blocks.split_first()? else {
        return None;
    };
    let line = first.text.trim_start().strip_prefix('/')?;
    let (name, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    if COMMANDS.contains(&name) {
        return None;
    }
    let skill = skills.iter().find(|s| s.enabled && s.name == name)?;
    let mut blocks = Vec::with_capacity(blocks.len());
    if !args.trim().is_empty() {
        blocks.push(ContentBlock::from(args.trim().to_owned()));
    }
    blocks.extend(rest.iter().cloned());
    let named = NamedSkill {
        name: skill.name.clone(),
        path: Some(skill.path.clone()),
    };
    Some((named, blocks))
}

/// rein's own command names, which a skill of the same name does not shadow.
const COMMANDS: [&str; 5] = ["compact", "review", "fork", "model", "goal"];

/// The commands `available_commands_update` advertises.
pub fn available() -> Vec<AvailableCommand> {
    let hint = |h: &str| AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(h));
    vec![
        AvailableCommand::new("compact", "Summarise the conversation to free context"),
        AvailableCommand::new(
            "review",
            "Review the uncommitted changes, or what the instructions ask for",
        )
        .input(hint("optional instructions")),
        AvailableCommand::new("fork", "Branch this session into a new one"),
        AvailableCommand::new("model", "Switch the model").input(hint("model name")),
        AvailableCommand::new(
            "goal",
            "Set a goal worked on until it is done (--auto-resume: it continues after a \
             restart); /goal shows it, /goal clear removes it",
        )
        .input(hint("objective, --auto-resume objective, or clear")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        AudioContent, EmbeddedResource, ResourceLink, TextResourceContents,
    };
    use pretty_assertions::assert_eq;

    #[test]
    fn blocks_become_input_parts_and_audio_is_refused() {
        let blocks = vec![
            ContentBlock::from("look at".to_owned()),
            ContentBlock::ResourceLink(ResourceLink::new("a.rs", "file:///w/a.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///w/b.rs",
                )),
            )),
        ];
        assert_eq!(
            input_of(&blocks).unwrap(),
            vec![
                InputPart::text("look at"),
                InputPart::text("[a.rs](file:///w/a.rs)"),
                InputPart::text("<context ref=\"file:///w/b.rs\">\nfn main() {}\n</context>"),
            ]
        );
        let audio = ContentBlock::Audio(AudioContent::new("AAAA", "audio/wav"));
        assert!(input_of(&[audio]).is_err());
    }

    #[test]
    fn only_a_whole_known_command_is_a_command() {
        let text = |t: &str| vec![ContentBlock::from(t.to_owned())];
        assert_eq!(command_of(&text("/compact")), Some(Command::Compact));
        assert_eq!(
            command_of(&text("/review the parser")),
            Some(Command::Review(ReviewTarget::Custom {
                instructions: "the parser".into()
            }))
        );
        assert_eq!(
            command_of(&text("/model m2")),
            Some(Command::Model(Some("m2".into())))
        );
        assert_eq!(
            command_of(&text("/goal make the tests pass")),
            Some(Command::Goal(GoalCommand::Set {
                objective: "make the tests pass".into(),
                auto_resume: false,
            }))
        );
        assert_eq!(
            command_of(&text("/goal --auto-resume  make the tests pass")),
            Some(Command::Goal(GoalCommand::Set {
                objective: "make the tests pass".into(),
                auto_resume: true,
            }))
        );
        // Not the flag: part of the objective.
        assert_eq!(
            command_of(&text("/goal --auto-resumed x")),
            Some(Command::Goal(GoalCommand::Set {
                objective: "--auto-resumed x".into(),
                auto_resume: false,
            }))
        );
        assert_eq!(
            command_of(&text("/goal")),
            Some(Command::Goal(GoalCommand::Status))
        );
        assert_eq!(
            command_of(&text("/goal clear")),
            Some(Command::Goal(GoalCommand::Clear))
        );
        assert_eq!(command_of(&text("/unknown")), None);
        assert_eq!(command_of(&text("please /compact")), None);
    }
}
