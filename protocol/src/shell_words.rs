//! Reading a `bash -lc SCRIPT` command as the simple command its script is, and showing a
//! command as Codex does. An approval rule ("don't ask again for commands that start with
//! `printf x`") names the words of the script, not the `bash -lc` wrapper; only a script
//! with nothing a shell would expand or chain is read as words, so a rule never covers a
//! script that could also do something else (`printf x; rm -rf ~`).

/// The shells whose `-c` / `-lc` scripts are read.
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash"];

/// Characters that make a script more than one plain command: chaining, pipes,
/// redirections, substitutions, globs, comments, brace and tilde expansion.
const NOT_PLAIN: &[char] = &[
    ';', '&', '|', '<', '>', '(', ')', '$', '`', '\n', '\r', '*', '?', '[', ']', '{', '}', '~',
    '#', '!',
];

/// The script of `[shell, -c|-lc, script]`, if `argv` is that.
pub fn shell_script(argv: &[String]) -> Option<&str> {
    let [shell, flag, script] = argv else {
        return None;
    };
    let name = shell.rsplit('/').next().unwrap_or(shell);
    (SHELLS.contains(&name) && (flag == "-c" || flag == "-lc")).then_some(script.as_str())
}

/// The words of a `bash -lc` script that is one plain command (quotes removed), else
/// `None`.
pub fn command_words(argv: &[String]) -> Option<Vec<String>> {
    let script = shell_script(argv)?;
    if script.contains(NOT_PLAIN) {
        return None;
    }
    // `NAME=value cmd` sets a variable for the command: not a plain command either.
    split_words(script).filter(|w| w.first().is_some_and(|first| !first.contains('=')))
}

/// Split on blanks, honouring single quotes, double quotes (with `\` escaping `"` and
/// `\`) and backslashes. `None` for an unterminated quote.
fn split_words(script: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = script.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\') => w.push(c),
                            c => {
                                w.push('\\');
                                w.push(c);
                            }
                        },
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Some(words)
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
