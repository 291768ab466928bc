//! Matchers as Claude Code reads them: empty, absent or `*` match every tool; anything
//! else is a regular expression that must match a tool's whole name (`Edit|Write` is
//! `^(?:Edit|Write)$`), so `Bash` does not catch `BashOutput`.

use regex::Regex;

#[derive(Clone, Debug)]
pub struct Matcher {
    source: String,
    regex: Option<Regex>,
}

impl Matcher {
    pub fn any() -> Self {
        Self {
            source: String::new(),
            regex: None,
        }
    }

    pub fn new(pattern: &str) -> Result<Self, regex::Error> {
        let trimmed = pattern.trim();
        if trimmed.is_empty() || trimmed == "*" {
            return Ok(Self {
                source: pattern.to_owned(),
                regex: None,
            });
        }
        Ok(Self {
            source: pattern.to_owned(),
            regex: Some(Regex::new(&format!("^(?:{trimmed})$"))?),
        })
    }

    /// The pattern as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether it accepts one of `subjects` (a tool's names).
    pub fn accepts(&self, subjects: &[&str]) -> bool {
        match &self.regex {
            None => true,
            Some(regex) => subjects.iter().any(|s| regex.is_match(s)),
        }
    }
}
