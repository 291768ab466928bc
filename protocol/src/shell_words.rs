//! Reading a `bash -lc SCRIPT` command as the simple command its script is, and showing a
//! command as Codex does. An approval rule ("don't ask again for commands that start with
//! `printf x`") names the words of the script, not the `bash -lc` wrapper; only a script
//! with nothing a shell would expand or chain is read as words, so a rule never covers a
//! script that could also do something else (`printf x; rm -rf ~`).

/// Characters that make a script more than one plain command: chaining, pipes,
/// redirections, substitutions, globs, comments, brace and tilde expansion.
const NOT_PLAIN: &[char] = &[
    ';', '&', '|', '<', '>', '(', ')', '$', '`', '\n', '\r', '*', '?', '[', ']', '{', '}', '~',
    '#', '!',
];

/// The words of a `bash -lc` script that is one plain command (quotes removed), else
/// `None`.
pub fn command_words(argv: &[String]) -> Option<Vec<String>> {
    let script = shell_script(argv)?;
    if script.contains(NOT_PLAIN) {
        return None;
    }
    // One part of one stage; `NAME=value cmd` sets a variable for the command, which is
    // not a plain command either.
    match split_script(script)?.as_slice() {
        [pipeline] => match pipeline.as_slice() {
            [words] if words.first().is_some_and(|first| !first.contains('=')) => {
                Some(words.clone())
            }
            _ => None,
        },
        _ => None,
    }
}

/// The script of `sh -c script` (and bash/zsh/dash, with `-lc` too).
pub fn shell_script(argv: &[String]) -> Option<&str> {
    let [shell, flag, script] = argv else {
        return None;
    };
    let name = std::path::Path::new(shell).file_name()?.to_str()?;
    let is_shell = matches!(name, "sh" | "bash" | "zsh" | "dash" | "ksh");
    (is_shell && matches!(flag.as_str(), "-c" | "-lc")).then_some(script.as_str())
}

/// A script as its `&&`/`||`/`;`-separated parts, each a pipeline of stages, each stage its
/// words; `None` for anything this reader does not follow.
pub fn split_script(script: &str) -> Option<Vec<Vec<Vec<String>>>> {
    let mut parts: Vec<Vec<Vec<String>>> = Vec::new();
    let mut pipeline: Vec<Vec<String>> = Vec::new();
    let mut stage: Vec<String> = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = script.chars().peekable();
    let end_word = |word: &mut Option<String>, stage: &mut Vec<String>| {
        if let Some(w) = word.take() {
            stage.push(w);
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        other => w.push(other),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            escaped @ ('"' | '\\' | '$' | '`') => w.push(escaped),
                            other => {
                                w.push('\\');
                                w.push(other);
                            }
                        },
                        '$' | '`' => return None,
                        other => w.push(other),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            ' ' | '\t' => end_word(&mut word, &mut stage),
            '\n' | ';' => {
                end_word(&mut word, &mut stage);
                close_stage(&mut stage, &mut pipeline)?;
                close_pipeline(&mut pipeline, &mut parts);
            }
            '&' if chars.peek() == Some(&'&') => {
                chars.next();
                end_word(&mut word, &mut stage);
                close_stage(&mut stage, &mut pipeline)?;
                close_pipeline(&mut pipeline, &mut parts);
            }
            '|' if chars.peek() == Some(&'|') => {
                chars.next();
                end_word(&mut word, &mut stage);
                close_stage(&mut stage, &mut pipeline)?;
                close_pipeline(&mut pipeline, &mut parts);
            }
            '|' => {
                end_word(&mut word, &mut stage);
                if stage.is_empty() {
                    return None;
                }
                pipeline.push(std::mem::take(&mut stage));
            }
            '<' | '>' | '$' | '`' | '(' | ')' | '&' | '{' | '}' | '*' | '?' | '#' => return None,
            other => word.get_or_insert_with(String::new).push(other),
        }
    }
    end_word(&mut word, &mut stage);
    close_stage(&mut stage, &mut pipeline)?;
    close_pipeline(&mut pipeline, &mut parts);
    (!parts.is_empty()).then_some(parts)
}

/// End the stage before an operator: a pipe with nothing after it is not understood.
fn close_stage(stage: &mut Vec<String>, pipeline: &mut Vec<Vec<String>>) -> Option<()> {
    if stage.is_empty() {
        return if pipeline.is_empty() { Some(()) } else { None };
    }
    pipeline.push(std::mem::take(stage));
    Some(())
}

fn close_pipeline(pipeline: &mut Vec<Vec<String>>, parts: &mut Vec<Vec<Vec<String>>>) {
    if !pipeline.is_empty() {
        parts.push(std::mem::take(pipeline));
    }
}

/// A command as Codex shows it: `bash -lc "SCRIPT"` keeps the script as written (double
/// quotes, `"` `\` `$` and backquotes escaped, when it has a single quote), any other argv
/// is joined with quotes where needed.
pub fn display_command(argv: &[String]) -> String {
    match shell_script(argv) {
        Some(script) => {
            let quoted = if script.contains('\'') {
                let mut q = String::with_capacity(script.len() + 2);
                q.push('"');
                for c in script.chars() {
                    if matches!(c, '"' | '\\' | '$' | '`') {
                        q.push('\\');
                    }
                    q.push(c);
                }
                q.push('"');
                q
            } else {
                format!("'{script}'")
            };
            format!("{} {} {quoted}", argv[0], argv[1])
        }
        None => crate::shell_join(argv),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn a_plain_script_is_its_words() {
        let cmd = argv(&["/bin/bash", "-lc", r"printf 'reinbar-tui-%s\n' marker-ok"]);
        assert_eq!(
            command_words(&cmd),
            Some(argv(&["printf", r"reinbar-tui-%s\n", "marker-ok"]))
        );
        assert_eq!(
            command_words(&argv(&["sh", "-c", r#"echo "a \"b\"" c\ d"#])),
            Some(argv(&["echo", r#"a "b""#, "c d"]))
        );
    }

    #[test]
    fn a_script_that_could_do_more_is_not_words() {
        for script in [
            "printf x; rm -rf ~",
            "echo a && echo b",
            "echo $(id)",
            "echo `id`",
            "cat < /etc/passwd",
            "echo x > f",
            "ls *",
            "echo 'unterminated",
            "a=b echo",
            "echo a\nrm b",
        ] {
            assert_eq!(
                command_words(&argv(&["bash", "-lc", script])),
                None,
                "{script}"
            );
        }
        assert_eq!(command_words(&argv(&["python3", "-c", "print(1)"])), None);
        assert_eq!(command_words(&argv(&["printf", "x"])), None);
    }

    #[test]
    fn commands_are_shown_as_codex_shows_them() {
        let cmd = argv(&["/bin/bash", "-lc", r"printf 'reinbar-tui-%s\n' marker-ok"]);
        assert_eq!(
            display_command(&cmd),
            r#"/bin/bash -lc "printf 'reinbar-tui-%s\\n' marker-ok""#
        );
        assert_eq!(
            display_command(&argv(&["bash", "-lc", "ls -la"])),
            "bash -lc 'ls -la'"
        );
        assert_eq!(display_command(&argv(&["touch", "a b"])), "touch 'a b'");
    }
}
