//! What a command does, read from its command line once, in the kernel: `cat f` reads `f`
//! (`cat a b`, `head -n 5 a b`, `sed -n 1,50p a b`, `awk 'NR<=50' a` read each file),
//! `ls` lists files, `rg`/`grep` search, anything else is unknown. A script run by a shell
//! (`bash -lc '...'`) is split into its `&&` / `||` / `;` parts and `|` stages: a `cd d`
//! part moves the paths after it, trailing stages that only shape output (`head`, `wc`,
//! `sed -n`, ...) are dropped, and if any part is not understood — or the script uses what
//! this reader does not follow (redirections, substitutions, subshells) — the whole command
//! is one `Unknown`. The result is for display; nothing decides anything on it.

use std::path::{Path, PathBuf};

use rein_protocol::shell_words::{shell_script, split_script};
use rein_protocol::{shell_join, CommandAction};

/// The actions of the command `argv` runs; `display` is how the command is shown (and what
/// an unknown command reports).
pub fn parse(argv: &[String], display: &str) -> Vec<CommandAction> {
    let unknown = || {
        vec![CommandAction::Unknown {
            command: display.to_owned(),
        }]
    };
    let parts = match shell_script(argv) {
        Some(script) => match split_script(script) {
            Some(parts) => parts,
            None => return unknown(),
        },
        None => vec![vec![argv.to_vec()]],
    };
    let mut actions: Vec<CommandAction> = Vec::new();
    let mut dir: Option<PathBuf> = None;
    let mut fillers = 0;
    for pipeline in &parts {
        let Some((main, rest)) = pipeline.split_first() else {
            continue;
        };
        if !rest.iter().all(|stage| is_formatter(stage)) {
            return unknown();
        }
        match main.first().map(String::as_str) {
            Some("cd") if rest.is_empty() => {
                if let Some(target) = main.iter().skip(1).rfind(|a| !a.starts_with('-')) {
                    dir = Some(match dir {
                        Some(d) => d.join(target),
                        None => PathBuf::from(target),
                    });
                }
                fillers += 1;
                continue;
            }
            Some("echo" | "true" | ":") if rest.is_empty() => {
                fillers += 1;
                continue;
            }
            _ => {}
        }
        let Some(found) = classify(main, dir.as_deref()) else {
            return unknown();
        };
        for action in found {
            if actions.last() != Some(&action) {
                actions.push(action);
            }
        }
    }
    if actions.is_empty() && fillers > 0 {
        return unknown();
    }
    actions
}

/// A stage after a pipe that only trims, counts or numbers what comes in.
fn is_formatter(stage: &[String]) -> bool {
    let operands = || stage.iter().skip(1).filter(|a| !a.starts_with('-'));
    match stage.first().map(String::as_str) {
        Some("head" | "tail" | "wc" | "nl" | "sort" | "uniq" | "cat" | "column" | "less") => {
            // Reading a file of its own is not formatting the pipe.
            operands().all(|a| a.chars().all(|c| c.is_ascii_digit()))
        }
        Some("sed") => stage.get(1).is_some_and(|f| f == "-n") && stage.len() == 3,
        Some("cut" | "tr") => true,
        _ => false,
    }
}

/// The actions of one command (a read of each file it shows), or `None` when it is not
/// one this reader knows.
fn classify(words: &[String], dir: Option<&Path>) -> Option<Vec<CommandAction>> {
    let (program, args) = words.split_first()?;
    let command = shell_join(words);
    let program = Path::new(program).file_name()?.to_str()?;
    let reads = |files: &[&str]| {
        (!files.is_empty()).then(|| {
            files
                .iter()
                .map(|file| read(command.clone(), file, dir))
                .collect()
        })
    };
    match program {
        "cat" | "bat" | "batcat" | "less" | "more" | "nl" => {
            reads(&operands(args, &["--theme", "--language", "-l", "-p"]))
        }
        "head" | "tail" => reads(&operands(args, &["-n", "-c", "--lines", "--bytes"])),
        "sed" => reads(&sed_files(args)?),
        "awk" | "gawk" | "mawk" => reads(&awk_files(args)?),
        _ => classify_other(program, command, args).map(|action| vec![action]),
    }
}

/// The files `sed -n [-e] SCRIPT FILE...` prints from (a script that ends printing).
fn sed_files(args: &[String]) -> Option<Vec<&str>> {
    let (script, files) = match args {
        [n, e, script, files @ ..] if n == "-n" && e == "-e" => (script, files),
        [n, script, files @ ..] if n == "-n" => (script, files),
        _ => return None,
    };
    (script.ends_with('p') && files.iter().all(|f| !f.starts_with('-')))
        .then(|| files.iter().map(String::as_str).collect())
}

/// The files `awk 'PROGRAM' FILE...` reads, for a program that only selects and prints
/// (nothing that runs a command, writes a file or reads another: `system`, `|`, `>`,
/// `getline`).
fn awk_files(args: &[String]) -> Option<Vec<&str>> {
    let (program, files) = args.split_first()?;
    let harmless = !program.starts_with('-')
        && !["system", "|", ">", "getline"]
            .iter()
            .any(|bad| program.contains(bad));
    (harmless
        && files
            .iter()
            .all(|f| !f.starts_with('-') && !f.contains('=')))
    .then(|| files.iter().map(String::as_str).collect())
}

/// The action of a command that reads no file for display: listings and searches.
fn classify_other(program: &str, command: String, args: &[String]) -> Option<CommandAction> {
    match program {
        "ls" | "tree" | "eza" | "exa" | "du" => {
            let paths = operands(args, &["-I", "-L", "-d", "--ignore", "--level"]);
            Some(CommandAction::ListFiles {
                command,
                path: paths.last().map(|p| (*p).to_owned()),
            })
        }
        "rg" | "rga" | "ripgrep" | "grep" | "egrep" | "fgrep" | "ag" | "ack" => {
            search(command, args, program)
        }
        "fd" | "fdfind" => {
            let operands = operands(args, &["-e", "-t", "--type", "--extension", "-E"]);
            Some(CommandAction::Search {
                command,
                query: operands.first().map(|q| (*q).to_owned()),
                path: operands.get(1).map(|p| (*p).to_owned()),
            })
        }
        "find" => {
            let path = args.first().filter(|a| !a.starts_with('-')).cloned();
            let name = args
                .iter()
                .position(|a| a == "-name" || a == "-iname")
                .and_then(|i| args.get(i + 1))
                .cloned();
            Some(match name {
                Some(query) => CommandAction::Search {
                    command,
                    query: Some(query),
                    path,
                },
                None => CommandAction::ListFiles { command, path },
            })
        }
        "git" => match args.split_first() {
            Some((sub, rest)) if sub == "grep" => search(command, rest, "grep"),
            Some((sub, rest)) if sub == "ls-files" => {
                let paths = operands(rest, &["--exclude", "-x"]);
                Some(CommandAction::ListFiles {
                    command,
                    path: paths.last().map(|p| (*p).to_owned()),
                })
            }
            _ => None,
        },
        _ => None,
    }
}

fn read(command: String, file: &str, dir: Option<&Path>) -> CommandAction {
    let path = match dir {
        Some(d) => d.join(file),
        None => PathBuf::from(file),
    };
    let name = Path::new(file)
        .file_name()
        .map_or_else(|| file.to_owned(), |n| n.to_string_lossy().into_owned());
    CommandAction::Read {
        command,
        name,
        path,
    }
}

/// A search: the pattern (`-e p` or the first operand) and the path searched.
fn search(command: String, args: &[String], program: &str) -> Option<CommandAction> {
    let mut pattern = None;
    let mut i = 0;
    while i < args.len() {
        if args[i] == "-e" || args[i] == "--regexp" {
            pattern = args.get(i + 1).cloned();
        }
        i += 1;
    }
    let with_values: &[&str] = &[
        "-e",
        "--regexp",
        "-g",
        "--glob",
        "-t",
        "--type",
        "-T",
        "--type-not",
        "-m",
        "--max-count",
        "-A",
        "-B",
        "-C",
        "--context",
        "-f",
        "--file",
        "--include",
        "--exclude",
        "-M",
        "--max-columns",
    ];
    let operands = operands(args, with_values);
    // `rg --files [path]` lists files rather than searching them.
    if args.iter().any(|a| a == "--files") && program.starts_with("rg") {
        return Some(CommandAction::ListFiles {
            command,
            path: operands.last().map(|p| (*p).to_owned()),
        });
    }
    let (query, path) = match pattern {
        Some(p) => (Some(p), operands.first().map(|p| (*p).to_owned())),
        None => (
            operands.first().map(|p| (*p).to_owned()),
            operands.get(1).map(|p| (*p).to_owned()),
        ),
    };
    Some(CommandAction::Search {
        command,
        query,
        path,
    })
}

/// The words of `args` that are not flags nor the values of the flags in `with_values`.
fn operands<'a>(args: &'a [String], with_values: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut skip = false;
    let mut only_operands = false;
    for arg in args {
        if skip {
            skip = false;
            continue;
        }
        if only_operands {
            out.push(arg.as_str());
        } else if arg == "--" {
            only_operands = true;
        } else if with_values.contains(&arg.as_str()) {
            skip = true;
        } else if !arg.starts_with('-') || arg == "-" {
            out.push(arg.as_str());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn sh(script: &str) -> Vec<CommandAction> {
        let argv = vec!["/bin/bash".to_owned(), "-lc".to_owned(), script.to_owned()];
        parse(&argv, script)
    }

    fn argv(words: &[&str]) -> Vec<CommandAction> {
        let argv: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
        parse(&argv, &shell_join(&argv))
    }

    fn read(command: &str, name: &str, path: &str) -> CommandAction {
        CommandAction::Read {
            command: command.into(),
            name: name.into(),
            path: path.into(),
        }
    }

    fn unknown(command: &str) -> Vec<CommandAction> {
        vec![CommandAction::Unknown {
            command: command.into(),
        }]
    }

    #[test]
    fn reading_a_file_is_a_read() {
        assert_eq!(
            argv(&["cat", "src/main.rs"]),
            vec![read("cat src/main.rs", "main.rs", "src/main.rs")]
        );
        assert_eq!(
            sh("head -n 50 Cargo.toml"),
            vec![read("head -n 50 Cargo.toml", "Cargo.toml", "Cargo.toml")]
        );
        assert_eq!(
            sh("sed -n '1,80p' README.md"),
            vec![read("sed -n 1,80p README.md", "README.md", "README.md")]
        );
    }

    #[test]
    fn several_files_and_awk_and_sed_e_are_a_read_of_each() {
        let cat = "cat SKILL.md ref/a.md";
        assert_eq!(
            sh(cat),
            vec![
                read(cat, "SKILL.md", "SKILL.md"),
                read(cat, "a.md", "ref/a.md")
            ]
        );
        let head = "head -n 5 a.md b.md";
        assert_eq!(
            sh(head),
            vec![read(head, "a.md", "a.md"), read(head, "b.md", "b.md")]
        );
        let awk = "awk 'NR<=50' s/SKILL.md";
        assert_eq!(
            sh(awk),
            vec![read("awk 'NR<=50' s/SKILL.md", "SKILL.md", "s/SKILL.md")]
        );
        assert_eq!(
            sh("sed -n -e 1,50p SKILL.md"),
            vec![read("sed -n -e 1,50p SKILL.md", "SKILL.md", "SKILL.md")]
        );
        // A program that runs commands or writes is not a read.
        for script in [
            "awk '{system(\"id\")}' f",
            "awk '{print > \"out\"}' f",
            "awk -f x.awk f",
        ] {
            assert_eq!(sh(script), unknown(script), "{script}");
        }
    }

    #[test]
    fn a_cd_prefix_moves_the_paths_after_it() {
        assert_eq!(
            sh("cd web && cat 'a b.txt'"),
            vec![read("cat 'a b.txt'", "a b.txt", "web/a b.txt")]
        );
    }

    #[test]
    fn listing_and_searching_are_recognised_through_formatting_pipes() {
        assert_eq!(
            sh("ls -la | head -n 20"),
            vec![CommandAction::ListFiles {
                command: "ls -la".into(),
                path: None
            }]
        );
        assert_eq!(
            sh("rg -n \"fn main\" src | head"),
            vec![CommandAction::Search {
                command: "rg -n 'fn main' src".into(),
                query: Some("fn main".into()),
                path: Some("src".into()),
            }]
        );
        assert_eq!(
            argv(&["grep", "-rn", "-e", "TODO", "."]),
            vec![CommandAction::Search {
                command: "grep -rn -e TODO .".into(),
                query: Some("TODO".into()),
                path: Some(".".into()),
            }]
        );
        assert_eq!(
            sh("rg --files src"),
            vec![CommandAction::ListFiles {
                command: "rg --files src".into(),
                path: Some("src".into()),
            }]
        );
    }

    #[test]
    fn sequences_keep_each_known_part() {
        assert_eq!(
            sh("ls && cat a.txt; echo ---; cat a.txt"),
            vec![
                CommandAction::ListFiles {
                    command: "ls".into(),
                    path: None
                },
                read("cat a.txt", "a.txt", "a.txt"),
            ]
        );
    }

    #[test]
    fn anything_not_understood_makes_the_whole_command_unknown() {
        assert_eq!(argv(&["cargo", "test"]), unknown("cargo test"));
        assert_eq!(sh("cat a.txt > b.txt"), unknown("cat a.txt > b.txt"));
        assert_eq!(sh("ls && make"), unknown("ls && make"));
        assert_eq!(sh("rg foo | xargs rm"), unknown("rg foo | xargs rm"));
        assert_eq!(sh("cat $(ls)"), unknown("cat $(ls)"));
        assert_eq!(sh("cd src"), unknown("cd src"));
        assert_eq!(sh("cat 'unterminated"), unknown("cat 'unterminated"));
    }
}
