//! Listing, search, archive and reindex over real rollout files and a real SQLite index.
#![allow(clippy::unwrap_used)]

use rein_test_support::rollout as support;

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use rein_core::store::{ListQuery, RolloutError, SessionMeta, SortKey};
use rein_protocol::ThreadId;
use rein_rollout::layout;
use rein_rollout::{Durability, RolloutStore};
use support::ThreadScript;

/// Creates a thread with one turn whose user message is `question`.
fn thread(store: &RolloutStore, cwd: &str, question: &str) -> ThreadId {
    let id = ThreadId::new();
    let meta = SessionMeta::new(id, id.into(), PathBuf::from(cwd), "gpt-test", "scripted");
    let mut writer = store.create(&meta).unwrap();
    let mut script = ThreadScript::new(id);
    script.start_turn(question);
    script.complete_turn("ok");
    for event in &script.events {
        writer.record(event).unwrap();
    }
    writer.sync().unwrap();
    id
}

/// A store of `home` as a process would open it.
fn open(home: &Path) -> RolloutStore {
    RolloutStore::new(home).with_durability(Durability::Never)
}

fn ids(store: &RolloutStore, query: &ListQuery) -> Vec<ThreadId> {
    store
        .list(query)
        .unwrap()
        .threads
        .iter()
        .map(|t| t.thread_id)
        .collect()
}

#[test]
fn pages_through_every_thread_newest_first_with_a_cursor() {
    let home = tempfile::tempdir().unwrap();
    let store = open(home.path());
    let created: Vec<ThreadId> = (0..25)
        .map(|n| thread(&store, "/a", &format!("q{n}")))
        .collect();
    let mut seen = Vec::new();
    let mut query = ListQuery {
        limit: 10,
        sort: SortKey::Created,
        ..ListQuery::default()
    };
    loop {
        let page = store.list(&query).unwrap();
        assert!(page.threads.len() <= 10);
        seen.extend(page.threads.iter().map(|t| t.thread_id));
        match page.next_cursor {
            Some(cursor) => query.cursor = Some(cursor),
            None => break,
        }
    }
    // Threads created in the same millisecond are ordered by their (time-ordered) ids.
    let mut expected = created;
    expected.reverse();
    assert_eq!(seen, expected);
    let first = store.list(&ListQuery::default()).unwrap();
    assert_eq!(first.threads[0].title.as_deref(), Some("q24"));
    assert_eq!(first.threads[0].cwd, PathBuf::from("/a"));
    assert!(matches!(
        store.list(&ListQuery {
            cursor: Some("nonsense".into()),
            ..ListQuery::default()
        }),
        Err(RolloutError::BadCursor(_))
    ));
}

#[test]
fn filters_by_cwd_and_searches_titles() {
    let home = tempfile::tempdir().unwrap();
    let store = open(home.path());
    let a = thread(&store, "/a", "fix the parser bug");
    let b = thread(&store, "/b", "write docs for the Parser");
    let c = thread(&store, "/b", "100% coverage_please");
    assert_eq!(
        ids(
            &store,
            &ListQuery {
                cwd: Some("/b".into()),
                ..ListQuery::default()
            }
        ),
        vec![c, b]
    );
    assert_eq!(
        ids(
            &store,
            &ListQuery {
                search: Some("parser".into()),
                ..ListQuery::default()
            }
        ),
        vec![b, a]
    );
    // LIKE wildcards in the search are taken literally.
    assert_eq!(
        ids(
            &store,
            &ListQuery {
                search: Some("0% c".into()),
                ..ListQuery::default()
            }
        ),
        vec![c]
    );
    assert_eq!(
        ids(
            &store,
            &ListQuery {
                search: Some("_".into()),
                ..ListQuery::default()
            }
        ),
        vec![c]
    );
    assert_eq!(store.most_recent_in_cwd(Path::new("/a")).unwrap(), Some(a));
    assert_eq!(store.most_recent_in_cwd(Path::new("/none")).unwrap(), None);
}

#[test]
fn sort_by_updated_moves_a_continued_thread_to_the_top() {
    let home = tempfile::tempdir().unwrap();
    let store = open(home.path());
    let old = thread(&store, "/a", "old");
    let new = thread(&store, "/a", "new");
    let by_updated = |store: &RolloutStore| {
        ids(
            store,
            &ListQuery {
                sort: SortKey::Updated,
                ..ListQuery::default()
            },
        )
    };
    assert_eq!(by_updated(&store), vec![new, old]);
    let newest = store.entry(new).unwrap().unwrap().updated_ms;
    let mut writer = store.open_append(old).unwrap();
    writer.sync().unwrap();
    assert!(
        store.entry(old).unwrap().unwrap().updated_ms >= newest,
        "sync stamps updated_ms"
    );
    // Same-millisecond stamps tie; a strictly later one must lead the list.
    store.index().touch(old, newest + 1);
    assert_eq!(by_updated(&store), vec![old, new]);
}

#[test]
fn archive_and_unarchive_move_the_file_and_the_listing() {
    let home = tempfile::tempdir().unwrap();
    let store = open(home.path());
    let kept = thread(&store, "/a", "kept");
    let gone = thread(&store, "/a", "archived one");
    let original = store.find(gone).unwrap();
    let archived_path = store.archive(gone).unwrap();
    assert!(!original.exists());
    assert!(archived_path.starts_with(layout::archived_dir(home.path())));
    assert_eq!(ids(&store, &ListQuery::default()), vec![kept]);
    assert_eq!(
        ids(
            &store,
            &ListQuery {
                archived: true,
                ..ListQuery::default()
            }
        ),
        vec![gone]
    );
    // Archived threads can still be read and forked.
    assert_eq!(store.load(gone).unwrap().meta.thread_id, gone);
    drop(store.fork(gone, None).unwrap());
    assert!(matches!(
        store.archive(gone),
        Err(RolloutError::AlreadyArchived(_))
    ));

    let back = store.unarchive(gone).unwrap();
    assert_eq!(back, original);
    assert!(matches!(
        store.unarchive(gone),
        Err(RolloutError::NotArchived(_))
    ));
    assert!(ids(&store, &ListQuery::default()).contains(&gone));
}

#[test]
fn archive_is_refused_while_a_writer_holds_the_thread() {
    let home = tempfile::tempdir().unwrap();
    let store = open(home.path());
    let id = thread(&store, "/a", "busy");
    let writer = store.open_append(id).unwrap();
    let err = store.archive(id).unwrap_err();
    assert!(matches!(
        err,
        RolloutError::Recorder(rein_core::recorder::RecorderError::Locked { .. })
    ));
    drop(writer);
    store.archive(id).unwrap();
}

#[test]
fn a_missing_or_stale_index_never_hides_a_thread() {
    let home = tempfile::tempdir().unwrap();
    let store = open(home.path());
    let a = thread(&store, "/a", "first");
    let b = thread(&store, "/a", "second");
    let archived = thread(&store, "/a", "third");
    store.archive(archived).unwrap();
    drop(store);

    // The index is deleted: the next process rebuilds it from the files.
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(home.path().join(format!("{}{suffix}", layout::INDEX_FILE)));
    }
    let store = open(home.path());
    assert_eq!(ids(&store, &ListQuery::default()), vec![b, a]);
    let entry = store.entry(archived).unwrap().unwrap();
    assert!(entry.archived);
    assert_eq!(entry.title.as_deref(), Some("third"));

    // A rollout the index never heard of (copied in from elsewhere) is still found by id
    // at once, and listed by the next process (which looks in directories changed since
    // the index was last reconciled) or after a reindex.
    let other_home = tempfile::tempdir().unwrap();
    let other = open(other_home.path());
    let stray = thread(&other, "/z", "from elsewhere");
    let stray_path = other.find(stray).unwrap();
    let dest = home
        .path()
        .join("sessions/2020/01/01")
        .join(stray_path.file_name().unwrap());
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::copy(&stray_path, &dest).unwrap();
    assert_eq!(store.find(stray).unwrap(), dest);
    let other_stray = thread(&other, "/z", "also from elsewhere");
    let other_path = other.find(other_stray).unwrap();
    let dest2 = home
        .path()
        .join("sessions/2020/01/02")
        .join(other_path.file_name().unwrap());
    std::fs::create_dir_all(dest2.parent().unwrap()).unwrap();
    std::fs::copy(&other_path, &dest2).unwrap();
    assert!(
        !ids(&store, &ListQuery::default()).contains(&other_stray),
        "a listing is one query: it does not scan"
    );
    drop(store);
    let store = open(home.path());
    assert!(ids(&store, &ListQuery::default()).contains(&other_stray));
    std::fs::remove_file(&dest2).unwrap();
    assert_eq!(store.reindex().unwrap().threads, 4);
    assert_eq!(store.index().query(|i| i.count()).unwrap(), 4);
    assert!(ids(&store, &ListQuery::default()).contains(&stray));
}

#[test]
fn an_update_the_index_missed_is_reconciled_at_the_next_listing() {
    let home = tempfile::tempdir().unwrap();
    let store = open(home.path());
    let a = thread(&store, "/a", "first");
    // The first listing of a process reconciles; later ones do not look at the files.
    assert_eq!(ids(&store, &ListQuery::default()), vec![a]);
    // Another process wrote a rollout but could not update the index: it leaves the
    // stale marker, and the next listing looks at the changed directories.
    let other = open(tempfile::tempdir().unwrap().path());
    let stray = thread(&other, "/z", "unindexed");
    let from = other.find(stray).unwrap();
    let to = store
        .find(a)
        .unwrap()
        .with_file_name(from.file_name().unwrap());
    std::fs::copy(&from, &to).unwrap();
    assert_eq!(ids(&store, &ListQuery::default()), vec![a]);
    std::fs::write(home.path().join("index.stale"), "").unwrap();
    assert_eq!(ids(&store, &ListQuery::default()), vec![stray, a]);
    assert!(!home.path().join("index.stale").exists());
}

/// A fork killed before its rename leaves a staging file, which no listing takes: the
/// next process's reconciliation deletes it once it is older than any fork in progress,
/// and keeps a young one (another process may be forking into that directory right now).
#[test]
fn a_killed_forks_staging_file_is_removed_once_stale() {
    use rein_rollout::store::{STAGING_SUFFIX, STALE_STAGING};

    let home = tempfile::tempdir().unwrap();
    let store = open(home.path());
    let a = thread(&store, "/a", "first");
    let rollout = store.find(a).unwrap();
    drop(store);
    // What `write_whole` leaves when the process dies between writing and renaming: a
    // complete rollout under the staging name (the forked thread's own name), once stale,
    // and one being written now.
    let staging = |id: ThreadId| {
        let name = layout::file_name(id, 0).replace("1970-01-01T00-00-00", "2026-12-01T10-00-00");
        rollout.with_file_name(format!("{name}{STAGING_SUFFIX}"))
    };
    let (old, young) = (staging(ThreadId::new()), staging(ThreadId::new()));
    for path in [&old, &young] {
        std::fs::copy(&rollout, path).unwrap();
    }
    let long_ago = std::time::SystemTime::now() - STALE_STAGING - std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();

    let store = open(home.path());
    assert_eq!(ids(&store, &ListQuery::default()), vec![a]);
    assert!(!old.exists(), "the stale staging file was left");
    assert!(young.exists(), "a fork in progress lost its staging file");
    assert!(rollout.exists());

    // A reindex sweeps every directory the same way.
    std::fs::File::options()
        .write(true)
        .open(&young)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    assert_eq!(store.reindex().unwrap().threads, 1);
    assert!(!young.exists());
    assert_eq!(ids(&store, &ListQuery::default()), vec![a]);
}

#[test]
fn an_index_that_could_not_be_opened_is_opened_once_the_cause_is_gone() {
    let home = tempfile::tempdir().unwrap();
    // The index's directory cannot be made while a file stands in its place.
    let blocker = home.path().join("state");
    std::fs::write(&blocker, "not a directory").unwrap();
    let client = rein_rollout::indexer::IndexClient::start(blocker.join("index.sqlite"));
    let first = client.query(|_| Ok(()));
    assert!(
        matches!(first, Err(RolloutError::IndexUnavailable(_))),
        "{first:?}"
    );
    std::fs::remove_file(&blocker).unwrap();
    assert_eq!(client.query(|_| Ok(())).ok(), Some(()));
    assert!(blocker.join("index.sqlite").exists());
}
