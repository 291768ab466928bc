//! `rein memory consolidate` through the real binary: the accepted memories of a scope in
//! one `MEMORY.md` under `$REIN_HOME/memories`, each with its id and provenance; another
//! repository's and forgotten ones left out; idempotent (the same memories: the file is
//! not rewritten); written whole (no temporary file left); the database stays the truth.
//! With `[memory] consolidate`, each completed extraction writes them too, before the
//! thread is reported done.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use rein_test_support::app_server::MockModel;
use rein_test_support::exec::{rein_in, rein_ok};
use rein_test_support::memory::{memory_home_with, remember, repo, stored};
use serde_json::json;

/// 2026-12-04, so the files' dates are known.
const NOW_MS: &str = "1796400000000";

fn rein_at(home: &Path, args: &[&str]) -> String {
    let out = rein_in(home, args)
        .env("REIN_MEMORY_NOW_MS", NOW_MS)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rein {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn add(home: &Path, content: &str, scope: &str, cd: &Path) -> String {
    let cd = cd.to_str().unwrap();
    rein_at(
        home,
        &["memory", "add", content, "--scope", scope, "-C", cd],
    )
    .trim()
    .to_owned()
}

/// The paths and verbs of `consolidate`'s output lines (`wrote PATH (N memories)`).
fn consolidate(home: &Path, args: &[&str]) -> Vec<(String, PathBuf, String)> {
    let mut all = vec!["memory", "consolidate"];
    all.extend_from_slice(args);
    rein_at(home, &all)
        .lines()
        .map(|line| {
            let (verb, rest) = line.split_once(' ').unwrap();
            let (path, count) = rest.rsplit_once(" (").unwrap();
            (verb.to_owned(), PathBuf::from(path), count.to_owned())
        })
        .collect()
}

const NOTE: &str = "<!-- Written by `rein memory consolidate` from rein's memory database, \
                    which stays the truth: edits here are not read back. -->";

#[test]
fn consolidate_writes_one_memory_md_per_scope_with_provenance_and_is_idempotent() {
    let home = tempfile::tempdir().unwrap();
    let repo_a = repo("git@example.com:a.git");
    let repo_b = repo("git@example.com:b.git");
    let user = add(
        home.path(),
        "Answer in British English",
        "user",
        repo_a.path(),
    );
    let gone = add(home.path(), "Prefer tabs", "user", repo_a.path());
    rein_ok(home.path(), &["memory", "forget", &gone]);
    let mine = add(
        home.path(),
        "Run the tests with cargo nextest\nand never with --release",
        "repo",
        repo_a.path(),
    );
    add(home.path(), "Deploy with make ship", "repo", repo_b.path());

    let cd = repo_a.path().to_str().unwrap();
    let done = consolidate(home.path(), &["-C", cd]);
    let root = std::fs::canonicalize(repo_a.path()).unwrap();
    let name = root.file_name().unwrap().to_str().unwrap();
    assert_eq!(
        done.iter()
            .map(|(v, _, n)| (v.as_str(), n.as_str()))
            .collect::<Vec<_>>(),
        vec![("wrote", "1 memories)"), ("wrote", "1 memories)")]
    );
    let (user_file, repo_file) = (&done[0].1, &done[1].1);
    assert_eq!(user_file, &home.path().join("memories/user/MEMORY.md"));
    let repo_dir = repo_file.parent().unwrap();
    assert_eq!(
        repo_dir.parent().unwrap(),
        home.path().join("memories/repos")
    );
    assert!(
        repo_dir
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with(&format!("{name}-")),
        "{}",
        repo_file.display()
    );
    assert_eq!(
        std::fs::read_to_string(user_file).unwrap(),
        format!(
            "# Memory: the user's\n\n{NOTE}\n\n- Answer in British English\n  \
             <!-- id {user}, kept 2026-12-04 -->\n"
        )
    );
    assert_eq!(
        std::fs::read_to_string(repo_file).unwrap(),
        format!(
            "# Memory: repository {} (git@example.com:a.git)\n\n{NOTE}\n\n\
             - Run the tests with cargo nextest\n  and never with --release\n  \
             <!-- id {mine}, kept 2026-12-04 -->\n",
            root.display()
        )
    );

    // The same memories again: nothing rewritten, nothing left beside the files.
    let again = consolidate(home.path(), &["-C", cd]);
    assert_eq!(
        again
            .iter()
            .map(|(v, p, _)| (v.as_str(), p))
            .collect::<Vec<_>>(),
        vec![("unchanged", user_file), ("unchanged", repo_file)]
    );
    let entries: Vec<_> = std::fs::read_dir(repo_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries, vec![std::ffi::OsString::from("MEMORY.md")]);

    // The store is the truth: a memory forgotten there leaves the file at the next run.
    rein_ok(home.path(), &["memory", "forget", &mine]);
    let after = consolidate(home.path(), &["--scope", "repo", "-C", cd]);
    assert_eq!(after[0].0, "wrote");
    assert_eq!(after[0].2, "0 memories)");
    assert!(std::fs::read_to_string(repo_file)
        .unwrap()
        .ends_with(&format!("{NOTE}\n\nNo accepted memories.\n")));
}

#[test]
fn thread_memories_are_not_consolidated_and_say_so() {
    let home = tempfile::tempdir().unwrap();
    let out = rein_in(home.path(), &["memory", "consolidate", "--scope", "thread"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("thread memories are not consolidated (they end with their thread)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!home.path().join("memories").exists());
}

#[test]
fn with_consolidate_on_an_extraction_writes_the_files_before_exec_exits() {
    let model = MockModel::start(json!({ "replies": [
        { "text": "Noted." },
        remember("Run the tests with cargo nextest", "repo"),
        { "text": "Proposed one memory." },
    ], "when_exhausted": "error" }));
    let home = memory_home_with(&model, "auto", "extract = true\nconsolidate = true\n");
    let cwd = repo("git@example.com:a.git");
    rein_at(
        home.path(),
        &[
            "exec",
            "-C",
            cwd.path().to_str().unwrap(),
            "We use cargo nextest here.",
        ],
    );
    let id = stored(home.path())[0]["id"].as_str().unwrap().to_owned();
    let thread = stored(home.path())[0]["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let turn = stored(home.path())[0]["turn_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The files are what `rein memory consolidate` would write now: it finds them current.
    let again = consolidate(home.path(), &["-C", cwd.path().to_str().unwrap()]);
    assert_eq!(
        again
            .iter()
            .map(|(v, _, n)| (v.as_str(), n.as_str()))
            .collect::<Vec<_>>(),
        vec![("unchanged", "0 memories)"), ("unchanged", "1 memories)")]
    );
    let root = std::fs::canonicalize(cwd.path()).unwrap();
    assert_eq!(
        std::fs::read_to_string(&again[1].1).unwrap(),
        format!(
            "# Memory: repository {} (git@example.com:a.git)\n\n{NOTE}\n\n\
             - Run the tests with cargo nextest\n  \
             <!-- id {id}, kept 2026-12-04, from thread {thread} turn {turn} -->\n",
            root.display()
        )
    );
}
