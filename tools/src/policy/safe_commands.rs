//! Commands known to only read: under the `untrusted` approval policy these run without
//! asking. Conservative by design — anything not recognised, any redirection, command
//! substitution or flag that can write or execute makes a command unsafe.

use rein_core::shell_words::simple_commands;

/// Programs that never write files or run other programs, whatever their arguments.
const ALWAYS_SAFE: &[&str] = &[
    "basename", "cat", "cut", "date", "dirname", "echo", "false", "file", "head", "id", "ls", "nl",
    "printf", "pwd", "readlink", "realpath", "stat", "tail", "tr", "true", "uname", "wc", "which",
    "whoami", "grep", "egrep", "fgrep", "tree", "du", "df", "cmp", "diff", "sort",
];

/// Read-only git subcommands.
const SAFE_GIT: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "branch",
    "rev-parse",
    "ls-files",
    "blame",
];

/// Flags that make an otherwise read-only program write or execute.
const UNSAFE_FLAGS: &[(&str, &[&str])] = &[
    (
        "find",
        &[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
            "-fls",
        ],
    ),
    ("rg", &["--pre", "--search-zip", "-z"]),
    ("tree", &["-o"]),
    ("date", &["-s", "--set"]),
    ("file", &["-C", "--compile"]),
    ("sort", &["-o", "--output"]),
];

/// Whether `argv` is known to only read. A shell script form (`sh -c "..."`) is safe when
/// every command of a plain `&&` / `||` / `;` / `|` chain is.
pub fn is_known_safe(argv: &[String]) -> bool {
    if let [shell, flag, script] = argv {
        let shell_name = shell.rsplit('/').next().unwrap_or(shell);
        if matches!(shell_name, "sh" | "bash" | "zsh" | "dash") && (flag == "-c" || flag == "-lc") {
            return is_safe_script(script);
        }
    }
    is_safe_argv(argv)
}

fn is_safe_argv(argv: &[String]) -> bool {
    let Some((program, args)) = argv.split_first() else {
        return false;
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    let has_unsafe_flag = UNSAFE_FLAGS
        .iter()
        .filter(|(p, _)| *p == name)
        .any(|(_, flags)| {
            args.iter().any(|a| {
                flags
                    .iter()
                    .any(|f| a == f || a.starts_with(&format!("{f}=")))
            })
        });
    if has_unsafe_flag {
        return false;
    }
    match name {
        "git" => {
            args.iter()
                .find(|a| !a.starts_with('-'))
                .is_some_and(|sub| SAFE_GIT.contains(&sub.as_str()))
                && !args.iter().any(|a| a.starts_with("--output") || a == "-c")
        }
        "find" | "rg" => true,
        // `sed -n 'Np'` style printing only.
        "sed" => {
            args.first().is_some_and(|a| a == "-n")
                && args.get(1).is_some_and(|e| is_sed_print(e))
                && args.len() <= 3
        }
        _ => ALWAYS_SAFE.contains(&name),
    }
}

fn is_sed_print(expr: &str) -> bool {
    let Some(range) = expr.strip_suffix('p') else {
        return false;
    };
    !range.is_empty()
        && range
            .split(',')
            .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '$'))
}

fn is_safe_script(script: &str) -> bool {
    // Redirections, substitutions, globs that expand to commands, escapes, background
    // jobs and subshells are not analysed: they make the script unsafe.
    if script.chars().any(|c| {
        matches!(
            c,
            '>' | '<' | '$' | '`' | '(' | ')' | '{' | '}' | '\\' | '\n'
        )
    }) {
        return false;
    }
    // A lone `&` (a background job), even one inside quotes: conservative.
    if script.replace("&&", "").contains('&') {
        return false;
    }
    let split = simple_commands(script);
    !split.unterminated
        && !split.commands.is_empty()
        && split.commands.iter().all(|words| is_safe_argv(words))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn read_only_commands_are_safe() {
        assert!(is_known_safe(&argv(&["ls", "-la"])));
        assert!(is_known_safe(&argv(&["git", "status"])));
        assert!(is_known_safe(&argv(&["sed", "-n", "1,20p", "f.rs"])));
        assert!(is_known_safe(&argv(&["find", ".", "-name", "*.rs"])));
        assert!(is_known_safe(&argv(&[
            "bash",
            "-lc",
            "ls && cat 'a b' | wc -l"
        ])));
        // A separator inside quotes is text.
        assert!(is_known_safe(&argv(&["bash", "-c", "grep 'a;b|c' f"])));
    }

    #[test]
    fn writing_or_executing_commands_are_not() {
        assert!(!is_known_safe(&argv(&["rm", "-rf", "/"])));
        assert!(!is_known_safe(&argv(&["find", ".", "-delete"])));
        assert!(!is_known_safe(&argv(&[
            "find", ".", "-exec", "rm", "{}", ";"
        ])));
        assert!(!is_known_safe(&argv(&["git", "push"])));
        assert!(!is_known_safe(&argv(&[
            "git",
            "-c",
            "core.pager=sh",
            "log"
        ])));
        assert!(!is_known_safe(&argv(&["rg", "--pre", "sh", "x"])));
        assert!(!is_known_safe(&argv(&["sed", "-i", "s/a/b/", "f"])));
        assert!(!is_known_safe(&argv(&["sort", "-o", "out", "in"])));
        assert!(!is_known_safe(&argv(&["tree", "-o", "out"])));
        assert!(!is_known_safe(&argv(&["date", "-s", "2020-01-01"])));
        assert!(!is_known_safe(&argv(&["uniq", "in", "out"])));
        assert!(!is_known_safe(&argv(&["bash", "-c", "ls > out"])));
        assert!(!is_known_safe(&argv(&["bash", "-c", "cat $(rm x)"])));
        assert!(!is_known_safe(&argv(&["bash", "-c", "ls; rm x"])));
        assert!(!is_known_safe(&argv(&["bash", "-c", "ls & rm x"])));
        assert!(!is_known_safe(&argv(&["bash", "-c", "ls 'open"])));
        assert!(!is_known_safe(&argv(&["bash", "-c", "echo 'a;b' | rm x"])));
        assert!(!is_known_safe(&argv(&["bash", "-c", ""])));
        assert!(!is_known_safe(&argv(&[])));
    }
}
