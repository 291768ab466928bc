//! The supervisor's pid parser (`rein-supervise`, which has no unit-test binary of its own:
//! its behaviour is tested through the tools that run commands under it).
use rein_supervise::parse_pid;

#[test]
fn pids_are_parsed_without_surprises() {
    assert_eq!(parse_pid(b"1234"), Some(1234));
    assert_eq!(parse_pid(b""), None);
    assert_eq!(parse_pid(b"0"), None);
    assert_eq!(parse_pid(b"12a"), None);
    assert_eq!(parse_pid(b"99999999999"), None);
}
