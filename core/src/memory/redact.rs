//! Secrets out of memories: before a memory is proposed or stored, values given to
//! secret-looking names (the words of the command environment filter,
//! `tools/src/process/env.rs`: `KEY`, `TOKEN`, `SECRET`, `PASS`, ...), strings shaped like
//! keys or tokens (`sk-…`, `ghp_…`, `AKIA…`, `Bearer …`, long mixed-case alphanumerics) and
//! passwords in URLs are replaced by `[REDACTED]`, and each cut is reported.

use std::ops::Range;

use rein_protocol::Redaction;

/// What a redacted value is replaced by.
pub const REDACTED: &str = "[REDACTED]";

/// Words that mark a name as a secret anywhere in it (upper-cased); the command
/// environment filter's list.
const SECRET_WORDS: &[&str] = &[
    "KEY", "TOKEN", "SECRET", "PASS", "PWD", "AUTH", "CRED", "WEBHOOK",
];
/// Components (between `_`) too short to match inside other words (`PAT` is in `PATH`).
const SECRET_COMPONENTS: &[&str] = &["PAT", "PW"];
/// Names that contain a secret word but hold none.
const NOT_SECRETS: &[&str] = &["PWD", "OLDPWD"];
/// Prefixes of well-known keys and tokens.
const TOKEN_PREFIXES: &[&str] = &[
    "sk-",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xapp-",
    "AKIA",
    "AIza",
    "hf_",
];
/// A token without a known prefix: at least this long, with upper and lower case and digits.
const GENERIC_TOKEN_LEN: usize = 32;

/// `text` with its secrets replaced, and what was replaced.
pub fn redact(text: &str) -> (String, Vec<Redaction>) {
    let words = words(text);
    let mut cuts: Vec<(Range<usize>, Redaction)> = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let slice = &text[word.clone()];
        if let Some((name, value)) = assignment(slice) {
            if is_secret_name(name) && !value.is_empty() {
                let start = word.start + slice.len() - value.len();
                cuts.push((start..word.end, redaction("secret_assignment", name)));
                continue;
            }
        }
        let bare = trim_punct(slice);
        let label_of_next = if bare.eq_ignore_ascii_case("bearer") {
            Some("Bearer".to_owned())
        } else {
            bare.strip_suffix(':')
                .map(trim_punct)
                .filter(|n| is_secret_name(n))
                .map(str::to_owned)
        };
        if let (Some(label), Some(next)) = (label_of_next, words.get(i + 1)) {
            let value = trim_punct(&text[next.clone()]);
            // `Authorization: Bearer TOKEN`: the scheme is no secret, the next word is.
            let scheme = ["bearer", "basic", "token"]
                .iter()
                .any(|s| value.eq_ignore_ascii_case(s));
            if !value.is_empty() && !scheme && !cuts.iter().any(|(r, _)| r.start >= next.start) {
                let start = next.start + text[next.clone()].find(value).unwrap_or(0);
                cuts.push((
                    start..start + value.len(),
                    redaction("secret_assignment", &label),
                ));
            }
            continue;
        }
        if cuts.iter().any(|(r, _)| r.start >= word.start) {
            continue;
        }
        if let Some(cut) = url_password(slice) {
            cuts.push((
                word.start + cut.start..word.start + cut.end,
                redaction("url_password", "url"),
            ));
        } else if let Some(label) = token_label(bare) {
            let start = word.start + slice.find(bare).unwrap_or(0);
            cuts.push((start..start + bare.len(), redaction("token", &label)));
        }
    }
    cuts.sort_by_key(|(r, _)| r.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut reported = Vec::with_capacity(cuts.len());
    for (range, what) in cuts {
        if range.start < at {
            continue;
        }
        out.push_str(&text[at..range.start]);
        out.push_str(REDACTED);
        at = range.end;
        reported.push(what);
    }
    out.push_str(&text[at..]);
    (out, reported)
}

fn redaction(kind: &str, label: &str) -> Redaction {
    Redaction {
        kind: kind.to_owned(),
        label: label.to_owned(),
    }
}

/// The byte ranges of the whitespace-separated words of `text`.
fn words(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push(s..i);
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(s..text.len());
    }
    out
}

fn trim_punct(word: &str) -> &str {
    word.trim_matches(|c: char| {
        matches!(
            c,
            '"' | '\'' | '`' | ',' | ';' | '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>'
        )
    })
    .trim_end_matches('.')
}

/// `NAME=value` (quotes around either side allowed): the name and the value.
fn assignment(word: &str) -> Option<(&str, &str)> {
    let (name, value) = word.split_once('=')?;
    let name = trim_punct(name.trim_start_matches("--"));
    let value = trim_punct(value);
    (!name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
    .then_some((name, value))
}

/// Whether a variable of this name holds a secret (the command environment filter's rule).
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase().replace('-', "_");
    if upper.is_empty() || NOT_SECRETS.contains(&upper.as_str()) {
        return false;
    }
    SECRET_WORDS.iter().any(|w| upper.contains(w))
        || upper
            .split('_')
            .any(|part| SECRET_COMPONENTS.contains(&part))
}

/// The password of a `scheme://user:password@host` URL in `word`.
fn url_password(word: &str) -> Option<Range<usize>> {
    let scheme_end = word.find("://")? + 3;
    let rest = &word[scheme_end..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    let colon = rest[..at].find(':')?;
    (colon + 1 < at).then(|| scheme_end + colon + 1..scheme_end + at)
}

/// What kind of token `word` looks like, if it looks like one.
fn token_label(word: &str) -> Option<String> {
    if let Some(prefix) = TOKEN_PREFIXES
        .iter()
        .find(|p| word.starts_with(**p) && word.len() >= p.len() + 12)
    {
        return Some((*prefix).to_owned());
    }
    let token_chars = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '/' | '='));
    let mixed = word.chars().any(|c| c.is_ascii_uppercase())
        && word.chars().any(|c| c.is_ascii_lowercase())
        && word.chars().any(|c| c.is_ascii_digit());
    (word.len() >= GENERIC_TOKEN_LEN && token_chars && mixed).then(|| "token".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn assignments_tokens_and_urls_are_redacted_and_reported() {
        let (text, cuts) = redact(
            "use OPENAI_API_KEY=sk-abcdefghijklmnop1234 and password: hunter2, \
             curl -H 'Authorization: Bearer abc.def.ghi' https://bob:pw123@example.com/x \
             token ghp_0123456789abcdefghijkl ok",
        );
        assert_eq!(
            text,
            "use OPENAI_API_KEY=[REDACTED] and password: [REDACTED], \
             curl -H 'Authorization: Bearer [REDACTED]' https://bob:[REDACTED]@example.com/x \
             token [REDACTED] ok"
        );
        let kinds: Vec<(&str, &str)> = cuts
            .iter()
            .map(|r| (r.kind.as_str(), r.label.as_str()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("secret_assignment", "OPENAI_API_KEY"),
                ("secret_assignment", "password"),
                ("secret_assignment", "Bearer"),
                ("url_password", "url"),
                ("token", "ghp_"),
            ]
        );
    }

    #[test]
    fn ordinary_text_is_kept() {
        let text = "Run cargo test -p rein-core; PATH=/usr/bin; commit 0123456789abcdef0123456789abcdef01234567";
        assert_eq!(redact(text), (text.to_owned(), Vec::new()));
    }

    #[test]
    fn a_long_mixed_token_without_a_prefix_is_redacted() {
        let (text, cuts) = redact("key is Zx8kLmN0pQrStUvWxYz1234567890AbCd");
        assert_eq!(text, "key is [REDACTED]");
        assert_eq!(cuts, vec![redaction("token", "token")]);
    }
}
