#!/usr/bin/env bash
# Installs what the tests need beyond the Rust toolchain. Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

# bubblewrap: the sandbox fallback where Landlock is unavailable; its tests run when present.
if ! command -v bwrap >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null) \
            || echo "test-setup: could not install bubblewrap; its tests will be skipped" >&2
    else
        echo "test-setup: bubblewrap missing and not installable here; its tests will be skipped" >&2
    fi
fi
