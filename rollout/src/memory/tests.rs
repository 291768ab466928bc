use std::path::PathBuf;

use pretty_assertions::assert_eq;
use rein_core::memory::{MemoryError, MemoryFilter, MemoryUpdate, RecallQuery};
use rein_protocol::{MemoryId, MemoryRecord, MemoryScope, MemoryState, RepoKey, ThreadId};

use super::{MemoryDb, SqliteMemoryStore};

const DAY: u64 = 86_400_000;

fn repo(name: &str) -> RepoKey {
    RepoKey {
        root: PathBuf::from(format!("/src/{name}")),
        remote: Some(format!("git@example.com:{name}.git")),
    }
}

fn record(scope: MemoryScope, content: &str, created_ms: u64) -> MemoryRecord {
    MemoryRecord {
        id: MemoryId::new(),
        scope,
        repo: None,
        thread_id: None,
        turn_id: None,
        content: content.into(),
        keywords: Vec::new(),
        why: String::new(),
        state: MemoryState::Accepted,
        created_ms,
        last_used_ms: None,
        use_count: 0,
        redactions: Vec::new(),
    }
}

fn query(text: &str, thread_id: ThreadId, repo: RepoKey, now_ms: u64) -> RecallQuery {
    RecallQuery {
        text: text.into(),
        thread_id,
        repo,
        max_tokens: 1000,
        now_ms,
        retire_before_ms: None,
    }
}

fn ids(records: &[MemoryRecord]) -> Vec<MemoryId> {
    let mut ids: Vec<MemoryId> = records.iter().map(|r| r.id).collect();
    ids.sort();
    ids
}

fn open() -> (tempfile::TempDir, MemoryDb) {
    let dir = tempfile::tempdir().unwrap();
    let db = MemoryDb::open(&dir.path().join("memory.sqlite")).unwrap();
    (dir, db)
}

#[test]
fn recall_returns_only_what_is_in_scope_and_matches_and_counts_uses() {
    let (_dir, mut db) = open();
    let thread = ThreadId::new();
    let user = record(
        MemoryScope::User,
        "The user prefers tabs for indentation",
        1,
    );
    let mut in_a = record(MemoryScope::Repo, "Run the tests with cargo nextest", 1);
    in_a.repo = Some(repo("a"));
    let mut in_b = record(MemoryScope::Repo, "Run the tests with make check", 1);
    in_b.repo = Some(repo("b"));
    let mut mine = record(MemoryScope::Thread, "The tests of this thread are flaky", 1);
    mine.thread_id = Some(thread);
    let mut other_thread = record(MemoryScope::Thread, "Other thread tests", 1);
    other_thread.thread_id = Some(ThreadId::new());
    let mut proposed = record(MemoryScope::User, "tests proposed only", 1);
    proposed.state = MemoryState::Proposed;
    for r in [&user, &in_a, &in_b, &mine, &other_thread, &proposed] {
        assert!(db.insert(r).unwrap());
    }
    let found = db
        .recall(&query(
            "how do I run the tests? indentation?",
            thread,
            repo("a"),
            5,
        ))
        .unwrap();
    assert_eq!(ids(&found), ids(&[user.clone(), in_a.clone(), mine]));
    assert!(found
        .iter()
        .all(|r| r.use_count == 1 && r.last_used_ms == Some(5)));
    let stored = db.get(in_a.id).unwrap().unwrap();
    assert_eq!((stored.use_count, stored.last_used_ms), (1, Some(5)));
    // Repo B's thread sees B's memory and the user's, never A's.
    let found = db
        .recall(&query(
            "run tests indentation",
            ThreadId::new(),
            repo("b"),
            6,
        ))
        .unwrap();
    assert_eq!(ids(&found), ids(&[user, in_b]));
    // Nothing significant to match: nothing.
    assert_eq!(
        db.recall(&query("and the", thread, repo("a"), 7)).unwrap(),
        Vec::new()
    );
}

#[test]
fn the_budget_bounds_what_is_recalled_and_relevance_orders_it() {
    let (_dir, mut db) = open();
    let mut best = record(
        MemoryScope::User,
        "deploy deploy deploy with the deploy script",
        1,
    );
    best.keywords = vec!["deploy".into()];
    let weaker = record(MemoryScope::User, &format!("deploy {}", "x".repeat(400)), 1);
    db.insert(&best).unwrap();
    db.insert(&weaker).unwrap();
    let mut q = query("deploy", ThreadId::new(), repo("a"), 2);
    q.max_tokens = rein_core::memory::recall::tokens_of(&best) + 5;
    let found = db.recall(&q).unwrap();
    assert_eq!(ids(&found), vec![best.id]);
    q.max_tokens = 10_000;
    let found = db.recall(&q).unwrap();
    assert_eq!(
        found.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![best.id, weaker.id]
    );
}

#[test]
fn forgotten_memories_are_tombstones_until_purged() {
    let (_dir, mut db) = open();
    let kept = record(MemoryScope::User, "kept fact about widgets", 1);
    let forgotten = record(MemoryScope::User, "forgotten fact about widgets", 1);
    db.insert(&kept).unwrap();
    db.insert(&forgotten).unwrap();
    let update = MemoryUpdate {
        state: Some(MemoryState::Forgotten),
        ..MemoryUpdate::default()
    };
    assert_eq!(
        db.update(forgotten.id, &update).unwrap().state,
        MemoryState::Forgotten
    );
    let found = db
        .recall(&query("widgets", ThreadId::new(), repo("a"), 2))
        .unwrap();
    assert_eq!(ids(&found), vec![kept.id]);
    assert_eq!(
        db.get(forgotten.id).unwrap().unwrap().state,
        MemoryState::Forgotten
    );
    assert_eq!(db.purge().unwrap(), 1);
    assert_eq!(db.get(forgotten.id).unwrap(), None);
    let missing = MemoryId::new();
    assert!(matches!(
        db.update(missing, &update),
        Err(MemoryError::NotFound(id)) if id == missing
    ));
}

#[test]
fn memories_unused_for_max_unused_days_retire_by_the_given_clock() {
    let (_dir, mut db) = open();
    let old = record(MemoryScope::User, "old fact about gadgets", 0);
    let used = record(MemoryScope::User, "used fact about gadgets", 0);
    let fresh = record(MemoryScope::User, "fresh fact about gadgets", 25 * DAY);
    for r in [&old, &used, &fresh] {
        db.insert(r).unwrap();
    }
    // Day 20: only `used` matches, so only its clock restarts.
    let mut q = query("used", ThreadId::new(), repo("a"), 20 * DAY);
    assert_eq!(ids(&db.recall(&q).unwrap()), vec![used.id]);
    // Day 40 with max_unused_days = 30: `old` (created day 0, never used) retires first;
    // `used` (day 20) and `fresh` (day 25) stay and are recalled.
    q.text = "gadgets".into();
    q.now_ms = 40 * DAY;
    q.retire_before_ms = Some(40 * DAY - 30 * DAY);
    assert_eq!(ids(&db.recall(&q).unwrap()), ids(&[used.clone(), fresh]));
    assert_eq!(db.get(old.id).unwrap().unwrap().state, MemoryState::Retired);
    assert_eq!(
        db.get(used.id).unwrap().unwrap().state,
        MemoryState::Accepted
    );
    assert_eq!(db.retire_unused(100 * DAY).unwrap(), 2);
}

#[test]
fn listing_filters_by_scope_state_repo_and_text() {
    let (_dir, db) = open();
    let user = record(MemoryScope::User, "alpha user fact", 1);
    let mut in_a = record(MemoryScope::Repo, "beta repo fact", 2);
    in_a.repo = Some(repo("a"));
    let mut in_b = record(MemoryScope::Repo, "gamma repo fact", 3);
    in_b.repo = Some(repo("b"));
    for r in [&user, &in_a, &in_b] {
        db.insert(r).unwrap();
    }
    let all = db.list(&MemoryFilter::default()).unwrap();
    assert_eq!(all, vec![in_b.clone(), in_a.clone(), user.clone()]);
    let repo_a = MemoryFilter {
        repo: Some(repo("a")),
        ..MemoryFilter::default()
    };
    assert_eq!(db.list(&repo_a).unwrap(), vec![in_a, user.clone()]);
    let text = MemoryFilter {
        text: Some("gamma".into()),
        ..MemoryFilter::default()
    };
    assert_eq!(db.list(&text).unwrap(), vec![in_b]);
    let users = MemoryFilter {
        scope: Some(MemoryScope::User),
        states: vec![MemoryState::Accepted],
        ..MemoryFilter::default()
    };
    assert_eq!(db.list(&users).unwrap(), vec![user]);
}

#[test]
fn a_damaged_database_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.sqlite");
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    let store = SqliteMemoryStore::new(&path);
    let err = store
        .with_db(|db| db.list(&MemoryFilter::default()))
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::Damaged { path: p, .. } if *p == path),
        "{err:?}"
    );
    assert!(err.to_string().contains(&path.display().to_string()));
}

#[test]
fn two_writers_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.sqlite");
    let writers: Vec<_> = (0..2)
        .map(|w| {
            // Each its own store and connection, as two processes would be.
            let store = SqliteMemoryStore::new(&path);
            std::thread::spawn(move || {
                let mut written = Vec::new();
                for i in 0..100 {
                    let r = record(MemoryScope::User, &format!("writer {w} fact {i}"), i);
                    store.with_db(|db| db.insert(&r)).unwrap();
                    written.push(r.id);
                }
                written
            })
        })
        .collect();
    let mut written: Vec<MemoryId> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    written.sort();
    let store = SqliteMemoryStore::new(&path);
    let listed = store
        .with_db(|db| db.list(&MemoryFilter::default()))
        .unwrap();
    assert_eq!(ids(&listed), written);
}
