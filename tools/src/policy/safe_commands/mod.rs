//! Commands known to only read. Two judgements, one per place a command runs:
//!
//! - [`is_known_safe`]: under the `untrusted` approval policy these run inside the sandbox
//!   without asking. Conservative by design: anything not recognised, any redirection,
//!   command substitution, option that can write or execute (read as `getopt` reads it, see
//!   `options`), or environment variable outside a short list of harmless ones makes a
//!   command unsafe.
//! - [`is_safe_unconfined`]: in an editor's terminal (outside rein's sandbox) only a short
//!   allow-list of argv forms runs unasked, and only with no environment set by the model.
//!   No shell scripts, no `git` (a repository's config, which a sandboxed command may have
//!   written, can run programs: `core.fsmonitor`, pagers, diff drivers), no program named
//!   by a path.

mod options;

use std::collections::BTreeMap;

use options::{only_options, uses_dangerous, Dangerous};
use rein_core::shell_words::simple_commands;

/// Programs that never write files or run other programs, whatever their arguments
/// (besides their [`DANGEROUS`] options).
const ALWAYS_SAFE: &[&str] = &[
    "basename", "cat", "cut", "date", "dirname", "echo", "false", "file", "head", "id", "ls", "nl",
    "printf", "pwd", "readlink", "realpath", "stat", "tail", "tr", "true", "uname", "wc", "which",
    "whoami", "grep", "egrep", "fgrep", "tree", "du", "df", "cmp", "diff", "sort",
];

/// What may run unasked in an editor's terminal: programs with no option that writes or
/// runs anything.
const UNCONFINED_SAFE: &[&str] = &[
    "basename", "cat", "dirname", "echo", "false", "head", "id", "ls", "pwd", "readlink",
    "realpath", "stat", "tail", "true", "uname", "wc", "whoami",
];

/// Read-only git subcommands (`branch` only in its listing forms, see [`is_git_listing`]).
const SAFE_GIT: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "blame",
];

/// `git branch` options that list and do nothing else.
const GIT_BRANCH_LISTING: &[&str] = &[
    "-a",
    "--all",
    "-r",
    "--remotes",
    "-v",
    "-vv",
    "--verbose",
    "--show-current",
    "-l",
    "--list",
    "--no-color",
    "--color",
    "--no-column",
];

/// Options that make an otherwise read-only program write or execute.
const DANGEROUS: &[(&str, Dangerous)] = &[
    (
        "sort",
        Dangerous {
            short: &['o', 'T'],
            long: &["output", "compress-program", "temporary-directory"],
        },
    ),
    (
        "rg",
        Dangerous {
            short: &['z'],
            long: &["pre", "search-zip"],
        },
    ),
    (
        "tree",
        Dangerous {
            short: &['o'],
            long: &["output"],
        },
    ),
    (
        "date",
        Dangerous {
            short: &['s'],
            long: &["set"],
        },
    ),
    (
        "file",
        Dangerous {
            short: &['C'],
            long: &["compile"],
        },
    ),
    (
        "git",
        Dangerous {
            short: &[],
            long: &["output", "ext-diff", "textconv", "exec-path", "config-env"],
        },
    ),
];

/// `find` predicates that write or execute (single-dash words, never abbreviated).
const FIND_UNSAFE: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// Environment variables a command may set and still be known-safe: none of them makes a
/// program load code, read a configuration or run a helper.
fn is_harmless_variable(name: &str) -> bool {
    matches!(
        name,
        "LANG" | "LANGUAGE" | "TZ" | "TERM" | "NO_COLOR" | "CLICOLOR" | "COLUMNS" | "LINES"
    ) || (name.starts_with("LC_") && name[3..].chars().all(|c| c.is_ascii_uppercase()))
}

/// Whether every variable of `env` is harmless (`BASH_ENV`, `ENV`, `LD_*`, `GIT_*`, pagers,
/// editors, `PATH`, exported functions... are not).
pub fn is_safe_env(env: &BTreeMap<String, String>) -> bool {
    env.keys().all(|name| is_harmless_variable(name))
}

/// Whether `argv`, with `env` set on top of its environment, is known to only read when it
/// runs inside the sandbox. A shell script form (`sh -c "..."`) is safe when every command
/// of a plain `&&` / `||` / `;` / `|` chain is.
pub fn is_known_safe(argv: &[String], env: &BTreeMap<String, String>) -> bool {
    if !is_safe_env(env) {
        return false;
    }
    if let [shell, flag, script] = argv {
        let shell = system_name(shell);
        if matches!(shell, Some("sh" | "bash" | "zsh" | "dash")) && (flag == "-c" || flag == "-lc")
        {
            return is_safe_script(script);
        }
    }
    is_safe_argv(argv)
}

/// Whether `argv` may run unasked outside rein's sandbox (in an editor's terminal): one of
/// a few programs, by its bare name, with no environment set.
pub fn is_safe_unconfined(argv: &[String], env: &BTreeMap<String, String>) -> bool {
    env.is_empty()
        && argv
            .first()
            .and_then(|program| system_name(program))
            .is_some_and(|name| UNCONFINED_SAFE.contains(&name))
}

/// The name of a system program: a bare name (found on the `PATH`, which the model cannot
/// set, see [`is_safe_env`]) or one in `/bin` or `/usr/bin`. A program named by any other
/// path may be one the model wrote (`./cat`).
fn system_name(program: &str) -> Option<&str> {
    let name = ["/bin/", "/usr/bin/"]
        .iter()
        .find_map(|dir| program.strip_prefix(dir))
        .unwrap_or(program);
    (!name.is_empty() && !name.contains('/')).then_some(name)
}

fn is_safe_argv(argv: &[String]) -> bool {
    let Some((program, args)) = argv.split_first() else {
        return false;
    };
    let Some(name) = system_name(program) else {
        return false;
    };
    let dangerous = DANGEROUS
        .iter()
        .filter(|(p, _)| *p == name)
        .any(|(_, options)| uses_dangerous(args, options));
    if dangerous {
        return false;
    }
    match name {
        "git" => is_safe_git(args),
        "find" => !args.iter().any(|a| FIND_UNSAFE.contains(&a.as_str())),
        "rg" => true,
        // `sed -n 'Np'` style printing only.
        "sed" => {
            args.first().is_some_and(|a| a == "-n")
                && args.get(1).is_some_and(|e| is_sed_print(e))
                && args.len() <= 3
        }
        _ => ALWAYS_SAFE.contains(&name),
    }
}

/// A read-only git subcommand, with no global option before it (`-c`, `--git-dir`,
/// `--exec-path`... change what git runs).
fn is_safe_git(args: &[String]) -> bool {
    let Some((sub, rest)) = args.split_first() else {
        return false;
    };
    if sub == "branch" {
        return is_git_listing(rest);
    }
    SAFE_GIT.contains(&sub.as_str())
}

/// `git branch` that only lists: listing options, and patterns only after `--list`.
fn is_git_listing(args: &[String]) -> bool {
    let listing = args.iter().any(|a| a == "--list" || a == "-l");
    only_options(args, GIT_BRANCH_LISTING, listing)
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

    fn safe(s: &[&str]) -> bool {
        is_known_safe(&argv(s), &BTreeMap::new())
    }

    fn env(vars: &[(&str, &str)]) -> BTreeMap<String, String> {
        vars.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn read_only_commands_are_safe() {
        assert!(safe(&["ls", "-la"]));
        assert!(safe(&["git", "status"]));
        assert!(safe(&["sed", "-n", "1,20p", "f.rs"]));
        assert!(safe(&["find", ".", "-name", "*.rs"]));
        assert!(safe(&["bash", "-lc", "ls && cat 'a b' | wc -l"]));
        // A separator inside quotes is text.
        assert!(safe(&["bash", "-c", "grep 'a;b|c' f"]));
    }

    #[test]
    fn writing_or_executing_commands_are_not() {
        assert!(!safe(&["rm", "-rf", "/"]));
        assert!(!safe(&["find", ".", "-delete"]));
        assert!(!safe(&["find", ".", "-exec", "rm", "{}", ";"]));
        assert!(!safe(&["git", "push"]));
        assert!(!safe(&["git", "-c", "core.pager=sh", "log"]));
        assert!(!safe(&["rg", "--pre", "sh", "x"]));
        assert!(!safe(&["sed", "-i", "s/a/b/", "f"]));
        assert!(!safe(&["sort", "-o", "out", "in"]));
        assert!(!safe(&["tree", "-o", "out"]));
        assert!(!safe(&["date", "-s", "2020-01-01"]));
        assert!(!safe(&["uniq", "in", "out"]));
        assert!(!safe(&["bash", "-c", "ls > out"]));
        assert!(!safe(&["bash", "-c", "cat $(rm x)"]));
        assert!(!safe(&["bash", "-c", "ls; rm x"]));
        assert!(!safe(&["bash", "-c", "ls & rm x"]));
        assert!(!safe(&["bash", "-c", "ls 'open"]));
        assert!(!safe(&["bash", "-c", "echo 'a;b' | rm x"]));
        assert!(!safe(&["bash", "-c", ""]));
        assert!(!safe(&[]));
    }

    #[test]
    fn hidden_option_forms_and_acting_git_branch_forms_are_not() {
        assert!(!safe(&["sort", "-o/outside/x", "in"]));
        assert!(!safe(&["sort", "-ro/outside/x", "in"]));
        assert!(!safe(&["sort", "--out=/outside/x", "in"]));
        assert!(!safe(&["sort", "--compress-program=sh", "in"]));
        assert!(!safe(&["bash", "-c", "sort --compress-prog=sh in"]));
        assert!(!safe(&["git", "log", "--out=/outside/x"]));
        assert!(!safe(&["git", "--git-dir=/x", "status"]));
        assert!(!safe(&["git", "branch", "-D", "victim"]));
        assert!(!safe(&["git", "branch", "new"]));
        assert!(!safe(&["git", "branch", "-m", "a", "b"]));
        assert!(!safe(&["./cat", "f"]));
        assert!(!safe(&["/tmp/ls"]));
        assert!(safe(&["git", "branch"]));
        assert!(safe(&["git", "branch", "-a", "-v"]));
        assert!(safe(&["git", "branch", "--list", "feat*"]));
        assert!(safe(&["sort", "-r", "in"]));
        assert!(safe(&["/usr/bin/sort", "-n", "--", "-o"]));
        assert!(safe(&["/bin/bash", "-lc", "ls"]));
    }

    #[test]
    fn an_environment_that_loads_code_or_configuration_is_not_safe() {
        let ls = argv(&["bash", "-c", "ls"]);
        assert!(!is_known_safe(&ls, &env(&[("BASH_ENV", "evil.sh")])));
        assert!(!is_known_safe(&ls, &env(&[("ENV", "evil.sh")])));
        assert!(!is_known_safe(
            &ls,
            &env(&[("BASH_FUNC_ls%%", "() { id; }")])
        ));
        let status = argv(&["git", "status"]);
        assert!(!is_known_safe(&status, &env(&[("GIT_CONFIG_COUNT", "1")])));
        assert!(!is_known_safe(
            &argv(&["cat", "f"]),
            &env(&[("LD_PRELOAD", "/x.so")])
        ));
        assert!(!is_known_safe(
            &argv(&["git", "log"]),
            &env(&[("PAGER", "sh")])
        ));
        assert!(!is_known_safe(&argv(&["ls"]), &env(&[("PATH", ".")])));
        assert!(is_known_safe(
            &argv(&["ls"]),
            &env(&[("LC_ALL", "C"), ("TZ", "UTC")])
        ));
    }

    #[test]
    fn unconfined_only_a_few_bare_programs_with_no_environment() {
        let none = BTreeMap::new();
        assert!(is_safe_unconfined(&argv(&["ls", "-la"]), &none));
        assert!(is_safe_unconfined(&argv(&["cat", "README.md"]), &none));
        assert!(!is_safe_unconfined(
            &argv(&["cat", "f"]),
            &env(&[("LC_ALL", "C")])
        ));
        assert!(!is_safe_unconfined(&argv(&["git", "status"]), &none));
        assert!(!is_safe_unconfined(&argv(&["sort", "f"]), &none));
        assert!(!is_safe_unconfined(&argv(&["bash", "-c", "ls"]), &none));
        assert!(!is_safe_unconfined(&argv(&["./ls"]), &none));
        assert!(!is_safe_unconfined(&argv(&[]), &none));
    }
}
