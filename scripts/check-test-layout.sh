#!/usr/bin/env bash
# The test layout of CONTRIBUTING.md: one end-to-end test binary (tests/e2e/) and one
# integration-test binary per crate (<crate>/tests/all/), each a main.rs whose `mod NAME;`
# lines are its files. A test file that is not a module of one of them would never be
# built (the crates set `autotests = false`), so it fails here instead of passing unseen.
set -euo pipefail
cd "$(dirname "$0")/.."

failures=0
fail() {
    echo "check-test-layout: $*" >&2
    failures=$((failures + 1))
}

# Test files outside a test binary's directory.
for file in tests/*.rs */tests/*.rs; do
    [ -e "$file" ] || continue
    case "$file" in target/*) continue ;; esac
    fail "$file is not in a test binary; move it into tests/e2e/ (end-to-end) or <crate>/tests/all/ and add a mod line to main.rs there"
done

# Every file of a test binary's directory is a module of its main.rs.
for main in tests/e2e/main.rs */tests/all/main.rs; do
    [ -e "$main" ] || continue
    case "$main" in target/*) continue ;; esac
    dir="$(dirname "$main")"
    for file in "$dir"/*.rs; do
        name="$(basename "$file" .rs)"
        [ "$name" = main ] && continue
        grep -qE "^mod $name;" "$main" || fail "$file is not a module of $main (add 'mod $name;')"
    done
done

if [ "$failures" -ne 0 ]; then
    exit 1
fi
echo "check-test-layout: every test file is a module of its tier's test binary"
