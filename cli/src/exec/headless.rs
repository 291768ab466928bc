//! What a headless run says about the requests it cannot put to anyone. `rein exec` answers
//! every approval with a denial (see `turn.rs`): the approval policy asked, and nobody is
//! there to approve. The kernel's tool result reads as a user's denial, which is not what
//! happened, so what the user reads of such a call says who denied it and why, in
//! Codex's words where it has them ("… approval is not supported in exec mode").

use rein_protocol::ClientRequest;

/// Why a call whose approval `request` was denied by the run did not go ahead, if it is an
/// approval.
pub fn denial(request: &ClientRequest) -> Option<&'static str> {
    match request {
        ClientRequest::Command { .. } => Some(
            "denied by the approval policy: command execution approval is not supported in rein exec (nobody was asked)",
        ),
        ClientRequest::Patch { .. } => Some(
            "denied by the approval policy: file change approval is not supported in rein exec (nobody was asked)",
        ),
        _ => None,
    }
}

/// The line for a request the run answers without asking anyone.
pub fn asked(request: &ClientRequest) -> String {
    match request {
        ClientRequest::Command {
            command, reason, ..
        } => format!(
            "approval needed to run `{}` ({reason}); command execution approval is not supported in rein exec, so the approval policy denies it",
            command.join(" ")
        ),
        ClientRequest::Patch { files, reason } => {
            let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            format!(
                "approval needed to change {} ({reason}); file change approval is not supported in rein exec, so the approval policy denies it",
                files.join(", ")
            )
        }
        ClientRequest::Memory { .. } => {
            "the agent asked to keep a memory; rein exec cannot ask the user, so it is not kept"
                .to_owned()
        }
        ClientRequest::Question { .. } => {
            "the agent asked questions; rein exec cannot ask the user, so they go unanswered"
                .to_owned()
        }
        ClientRequest::Elicitation {
            server, message, ..
        } => format!(
            "MCP server `{server}` asked for input ({message}); rein exec cannot ask the user, so it is declined"
        ),
        ClientRequest::ReadTextFile { .. }
        | ClientRequest::WriteTextFile { .. }
        | ClientRequest::Terminal { .. } => {
            "the agent asked the client for a file or a terminal; rein exec has none, so it is refused"
                .to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_denied_command_names_the_policy_and_why_nobody_was_asked() {
        let request = ClientRequest::Command {
            command: vec!["touch".into(), "x".into()],
            cwd: PathBuf::from("/w"),
            reason: "the command is not known to be safe".into(),
        };
        assert_eq!(
            asked(&request),
            "approval needed to run `touch x` (the command is not known to be safe); command execution approval is not supported in rein exec, so the approval policy denies it"
        );
    }
}
