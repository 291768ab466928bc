#!/usr/bin/env bash
# ARCHITECTURE.md must stay true: every repository path it names in backticks (a path whose
# first component is a top-level directory of the repository) must exist.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=0
while IFS= read -r path; do
    top="${path%%/*}"
    [ -d "$top" ] || continue
    if [ ! -e "$path" ]; then
        echo "check-architecture: ARCHITECTURE.md names $path, which does not exist" >&2
        missing=$((missing + 1))
    fi
done < <(grep -o '`[^` ]*/[^` ]*`' ARCHITECTURE.md | tr -d '`' | sort -u)

if [ "$missing" -ne 0 ]; then
    exit 1
fi
echo "check-architecture: every path in ARCHITECTURE.md exists"
