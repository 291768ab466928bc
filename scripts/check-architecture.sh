#!/usr/bin/env bash
# ARCHITECTURE.md must stay true. Three checks:
# 1. every repository path it names in backticks (a path whose first component is a
#    top-level directory of the repository) exists;
# 2. its crate graph (the `text` block under "## Crate graph") is the workspace's: the same
#    crates, each with exactly its normal dependencies on workspace crates (`cargo metadata`);
# 3. its entry points name every `rein` subcommand (`enum Command` in cli/src/main.rs) as
#    **`rein NAME`**, and no subcommand that does not exist.
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

metadata="$(mktemp)"
trap 'rm -f "$metadata"' EXIT
cargo metadata --format-version 1 --no-deps --offline --locked >"$metadata"
python3 - "$metadata" <<'PY'
import json, re, sys

failures = []
meta = json.load(open(sys.argv[1]))
members = {p["name"] for p in meta["packages"]}
actual = {
    p["name"]: {d["name"] for d in p["dependencies"] if d["name"] in members and d["kind"] is None}
    for p in meta["packages"]
}

doc = open("ARCHITECTURE.md").read()
block = re.search(r"^## Crate graph\n.*?```text\n(.*?)```", doc, re.S | re.M)
if not block:
    sys.exit("check-architecture: ARCHITECTURE.md has no ```text block under '## Crate graph'")
stated = {}
for line in block.group(1).splitlines():
    if not line.strip():
        continue
    m = re.fullmatch(r"(rein-[a-z-]+)\s*(?:->\s*(.*))?", line.strip())
    if not m:
        failures.append(f"crate graph line not understood: {line!r}")
        continue
    deps = {d.strip() for d in (m.group(2) or "").split(",") if d.strip()}
    stated[m.group(1)] = {d if d.startswith("rein-") else "rein-" + d for d in deps}
for name in sorted(members - stated.keys()):
    failures.append(f"crate {name} is in the workspace but not in the map's crate graph")
for name in sorted(stated.keys() - members):
    failures.append(f"the map's crate graph names {name}, which is not a workspace crate")
for name in sorted(members & stated.keys()):
    for dep in sorted(actual[name] - stated[name]):
        failures.append(f"{name} depends on {dep}; the map's crate graph does not say so")
    for dep in sorted(stated[name] - actual[name]):
        failures.append(f"the map says {name} depends on {dep}; it does not")

main = open("cli/src/main.rs").read()
enum = re.search(r"enum Command \{\n(.*?)\n\}", main, re.S)
variants = re.findall(r"^    ([A-Z][A-Za-z]*)\b", enum.group(1), re.M) if enum else []
commands = {re.sub(r"(?<!^)([A-Z])", r"-\1", v).lower() for v in variants}
if not commands:
    failures.append("no subcommands found in cli/src/main.rs's enum Command")
mapped = set(re.findall(r"\*\*`rein ([a-z-]+)`\*\*", doc))
for c in sorted(commands - mapped):
    failures.append(f"subcommand `rein {c}` has no **`rein {c}`** entry point in the map")
for c in sorted(mapped - commands):
    failures.append(f"the map's entry points name `rein {c}`, which is not a subcommand")

for f in failures:
    print(f"check-architecture: {f}", file=sys.stderr)
sys.exit(1 if failures else 0)
PY
echo "check-architecture: every path, crate edge and subcommand in ARCHITECTURE.md is true"
