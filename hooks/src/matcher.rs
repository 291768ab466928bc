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

#[cfg(test)]
mod tests {
    use super::Matcher;

    #[test]
    fn matchers_read_as_claude_code_reads_them() {
        let m = |p: &str, s: &[&str]| Matcher::new(p).map(|m| m.accepts(s)).unwrap_or(false);
        assert!(m("", &["Bash"]));
        assert!(m("*", &["anything"]));
        assert!(m("Bash", &["Bash", "shell"]));
        assert!(!m("Bash", &["BashOutput"]));
        assert!(m("Edit|Write", &["apply_patch", "Edit", "Write"]));
        assert!(m("mcp__.*", &["mcp__memory__create"]));
        assert!(m("^shell$", &["Bash", "shell"]));
        assert!(!m("Read", &["Bash", "shell"]));
    }
}
