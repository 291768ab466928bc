//! Reading a shell command line as words, for the judges that look at what a command runs
//! (the advisor's risk screen, the policy's known-safe commands). A reader, not a shell:
//! single and double quotes group and are removed, nothing is expanded, and each judge
//! decides itself what it refuses to read (redirections, substitutions...).

/// A command line cut into simple commands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimpleCommands {
    /// Each simple command as its words, quotes removed; empty commands are left out.
    pub commands: Vec<Vec<String>>,
    /// A quote was still open at the end of the line (its text is in the last word).
    pub unterminated: bool,
}

/// Cut `line` at `;`, `&`, `|`, newlines, `(`, `)` and backquotes outside quotes, and each
/// piece into words at whitespace outside quotes.
pub fn simple_commands(line: &str) -> SimpleCommands {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    let end_word = |word: &mut String, words: &mut Vec<String>, in_word: &mut bool| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, ';' | '&' | '|' | '\n' | '(' | ')' | '`') => {
                end_word(&mut word, &mut words, &mut in_word);
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            (None, c) if c.is_whitespace() => end_word(&mut word, &mut words, &mut in_word),
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    end_word(&mut word, &mut words, &mut in_word);
    if !words.is_empty() {
        commands.push(words);
    }
    SimpleCommands {
        commands,
        unterminated: quote.is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn words(commands: &[&[&str]]) -> Vec<Vec<String>> {
        commands
            .iter()
            .map(|c| c.iter().map(|w| (*w).to_owned()).collect())
            .collect()
    }

    #[test]
    fn a_line_is_cut_at_separators_outside_quotes() {
        assert_eq!(
            simple_commands("cd 'a b' && ls -l | wc -l; echo \"x;y\" (rm z)"),
            SimpleCommands {
                commands: words(&[
                    &["cd", "a b"],
                    &["ls", "-l"],
                    &["wc", "-l"],
                    &["echo", "x;y"],
                    &["rm", "z"],
                ]),
                unterminated: false,
            }
        );
        assert_eq!(simple_commands("echo ''").commands, words(&[&["echo", ""]]));
        assert_eq!(
            simple_commands("echo 'open"),
            SimpleCommands {
                commands: words(&[&["echo", "open"]]),
                unterminated: true,
            }
        );
    }
}
