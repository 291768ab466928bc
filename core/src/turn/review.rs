//! Review turns: what the reviewer is asked, and the settings it runs under. A review reads
//! and reports; it never changes the workspace, so its turn runs read-only and cannot ask
//! for approval (a request that needs one fails back to the model). The reviewer starts
//! from a clean context (only the review request), so the conversation so far does not
//! bias it; its findings then stay in the thread's history for the turns that follow.

use rein_protocol::{ApprovalPolicy, InputPart, ReviewTarget, SandboxPolicy, ThreadSettings};

/// The content of the user message that opens a review turn: the reviewer's brief, then
/// what to review. The last part alone is what a client shows as the review's subject.
pub(crate) fn review_request(target: &ReviewTarget) -> Vec<InputPart> {
    vec![
        InputPart::text(REVIEW_PREAMBLE),
        InputPart::text(review_subject(target)),
    ]
}

fn review_subject(target: &ReviewTarget) -> String {
    let scope = match target {
        ReviewTarget::UncommittedChanges => "the uncommitted changes in the working tree \
             (staged, unstaged and untracked files; `git status` and `git diff HEAD` show them)"
            .to_owned(),
        ReviewTarget::BaseBranch { branch } => format!(
            "the changes of the current branch since it forked from `{branch}` \
             (diff against `git merge-base HEAD {branch}`)"
        ),
        ReviewTarget::Commit { sha, title } => match title {
            Some(title) => format!("commit {sha} \"{title}\" (`git show {sha}`)"),
            None => format!("commit {sha} (`git show {sha}`)"),
        },
        ReviewTarget::Custom { instructions } => return instructions.clone(),
    };
    format!("Review {scope}.")
}

const REVIEW_PREAMBLE: &str = "<code review> For this review only, act as a reviewer: read \
the code and run read-only commands, but do not change any file. Report concrete problems (bugs, security \
holes, missing tests, misleading names or comments) with file and line, the most serious \
first, and say how to fix each. If you find nothing worth changing, say so plainly.";

/// The thread's settings as a review turn uses them.
pub(crate) fn review_settings(mut settings: ThreadSettings) -> ThreadSettings {
    settings.sandbox_policy = SandboxPolicy::ReadOnly;
    settings.approval_policy = ApprovalPolicy::Never;
    settings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_names_what_to_review() {
        let request = review_request(&ReviewTarget::UncommittedChanges);
        assert!(
            matches!(&request[0], InputPart::Text { text } if text.starts_with("<code review>"))
        );
        let branch = review_subject(&ReviewTarget::BaseBranch {
            branch: "main".into(),
        });
        assert!(branch.contains("git merge-base HEAD main"), "{branch}");
        let commit = review_subject(&ReviewTarget::Commit {
            sha: "abc123".into(),
            title: Some("Fix parser".into()),
        });
        assert!(commit.contains("abc123 \"Fix parser\""), "{commit}");
        let custom = review_subject(&ReviewTarget::Custom {
            instructions: "Look at the error handling in src/io.rs".into(),
        });
        assert_eq!(custom, "Look at the error handling in src/io.rs");
    }
}
