//! The probe's verdict cached under rein's home (`rein_tools::sandbox::verdict`): a second
//! start reads it instead of confining a probe process, a changed key or a damaged file
//! probes again, and a stale verdict is caught by the re-check and replaced.
#![allow(clippy::unwrap_used)]

use rein_tools::sandbox::verdict::{self, Key, Source};
use serde_json::Value;

#[test]
fn a_second_start_reads_the_cached_verdict() {
    let home = tempfile::tempdir().unwrap();
    let key = Key::current();
    let (probed, source) = verdict::load_or_probe(home.path(), &key);
    assert_eq!(source, Source::Probed);
    assert!(home.path().join(verdict::FILE).is_file());
    let (cached, source) = verdict::load_or_probe(home.path(), &key);
    assert_eq!(source, Source::Cached);
    assert_eq!(cached.report(), probed.report());
    // The machine did not change: the background re-check agrees and leaves the file.
    assert!(!verdict::recheck(home.path(), &key, &cached));
    assert_eq!(verdict::load_or_probe(home.path(), &key).1, Source::Cached);
}

#[test]
fn a_changed_key_or_a_damaged_file_probes_again() {
    let home = tempfile::tempdir().unwrap();
    let key = Key::current();
    assert_eq!(verdict::load_or_probe(home.path(), &key).1, Source::Probed);
    for change in [
        |k: &mut Key| k.kernel.push_str("-upgraded"),
        |k: &mut Key| k.binary.push_str("-rebuilt"),
        |k: &mut Key| k.euid += 1,
        |k: &mut Key| k.userns.push("/proc/sys/other=1".to_owned()),
    ] {
        let mut other = key.clone();
        change(&mut other);
        assert_eq!(
            verdict::load_or_probe(home.path(), &other).1,
            Source::Probed,
            "{other:?}"
        );
        // The file now holds the other key: this one probes again too.
        assert_eq!(verdict::load_or_probe(home.path(), &key).1, Source::Probed);
    }
    std::fs::write(home.path().join(verdict::FILE), b"{\"key\": tru").unwrap();
    assert_eq!(verdict::load_or_probe(home.path(), &key).1, Source::Probed);
    assert_eq!(verdict::load_or_probe(home.path(), &key).1, Source::Cached);
}

#[test]
fn a_stale_verdict_is_replaced_by_the_recheck() {
    let home = tempfile::tempdir().unwrap();
    let key = Key::current();
    let (fresh, _) = verdict::load_or_probe(home.path(), &key);
    let file = home.path().join(verdict::FILE);
    // Make the cache claim less than this machine gives: no namespaces.
    let mut stored: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let landlock = stored["support"]["landlock"].as_object_mut().unwrap();
    landlock.insert("namespaces".into(), false.into());
    landlock.insert("fresh_proc".into(), false.into());
    std::fs::write(&file, serde_json::to_vec(&stored).unwrap()).unwrap();

    let (stale, source) = verdict::load_or_probe(home.path(), &key);
    assert_eq!(source, Source::Cached);
    assert!(!stale.has_namespaces(), "{:?}", stale.report());
    assert!(verdict::recheck(home.path(), &key, &stale));
    let (after, source) = verdict::load_or_probe(home.path(), &key);
    assert_eq!(source, Source::Cached);
    assert_eq!(after.report(), fresh.report());
    assert!(after.has_namespaces());
}
