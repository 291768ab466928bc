#!/usr/bin/env bash
# Installs what the tests need beyond the Rust toolchain. Safe to run repeatedly: what is
# present (and, for pinned packages, at its pin) is skipped.
#
#   scripts/test-setup.sh            everything
#   scripts/test-setup.sh system     the system tools (apt): the build scripts probe these
#                                    (scripts/test_prereqs.rs), so they come before any build
#   scripts/test-setup.sh packages   the npm and PyPI packages and cargo-deny, fetched at once
#                                    (each is mostly waiting on the network); scripts/test.sh
#                                    runs this in the background while it builds
set -euo pipefail
cd "$(dirname "$0")/.."

# apt-get install as root where apt exists; a message naming what the missing tool costs
# otherwise.
apt_install() {
    local why="$1"
    shift
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        (apt-get update -qq && apt-get install -y -qq "$@" >/dev/null) \
            || echo "test-setup: could not install $*; $why" >&2
    else
        echo "test-setup: $* missing and not installable here; $why" >&2
    fi
}

system() {
    # bubblewrap: the sandbox fallback where Landlock is unavailable.
    command -v bwrap >/dev/null 2>&1 || apt_install "its tests will be skipped" bubblewrap
    # The hostile sandbox tests: python3 (its attacks use ctypes and sockets), setpriv (to
    # run as nobody), setcap (file-capability attacks, as root).
    local missing=()
    command -v python3 >/dev/null 2>&1 || missing+=(python3)
    command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
    [ -x /usr/sbin/setcap ] || [ -x /sbin/setcap ] || command -v setcap >/dev/null 2>&1 \
        || missing+=(libcap2-bin)
    if [ "${#missing[@]}" -gt 0 ]; then
        apt_install "the sandbox tests will fail" "${missing[@]}"
    fi
    # tmux, for the Codex TUI test.
    command -v tmux >/dev/null 2>&1 || apt_install "the Codex TUI test will be skipped" tmux
    # Debian's python3 needs python3-venv for `-m venv` (ensurepip).
    if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
        apt_install "the Python SDK tests will be skipped" python3-venv
    fi
}

# cargo-deny, for the license, ban and source checks of scripts/test.sh: built from
# crates.io once into ~/.cargo/bin (about 9 minutes on two busy cores, so never per run).
cargo_deny() {
    command -v cargo-deny >/dev/null 2>&1 && return
    cargo install cargo-deny --locked >&2 \
        || echo "test-setup: could not install cargo-deny; scripts/test.sh will fail at its check" >&2
}

# A Python venv under target/ (nothing committed) with pinned packages, marked installed
# per pin so a new pin reinstalls: venv DIR WHAT-FOR PACKAGE...
venv() {
    local dir="$1" what="$2"
    shift 2
    local pins="$*"
    local marker="$dir/installed-${pins// /+}"
    if ! command -v python3 >/dev/null 2>&1; then
        echo "test-setup: python3 not found; $what will be skipped" >&2
        return
    fi
    [ -f "$marker" ] && return
    rm -rf "$dir"
    (python3 -m venv "$dir" \
        && "$dir/bin/pip" install -q --disable-pip-version-check "$@" >&2 \
        && touch "$marker") \
        || echo "test-setup: could not install $* for $what" >&2
}

# npm packages into DIR under target/ unless FILE (relative to DIR) exists:
# npm_into DIR FILE WHAT-FOR NPM-ARG...
npm_into() {
    local dir="$1" file="$2" what="$3"
    shift 3
    if ! command -v npm >/dev/null 2>&1; then
        echo "test-setup: npm not found; $what will be skipped" >&2
        return
    fi
    [ -f "$dir/$file" ] && return
    mkdir -p "$dir"
    [ -f "$dir/package.json" ] \
        || printf '{ "name": "%s", "private": true }\n' "$(basename "$dir")" >"$dir/package.json"
    npm install --no-audit --no-fund --prefix "$dir" "$@" >&2 \
        || echo "test-setup: could not install $* for $what" >&2
}

# The SDKs the end-to-end tests drive rein through, in one directory (one npm install):
# the Codex TypeScript SDK (without its optional dependencies, so the Codex binary itself
# is never fetched), the ACP TypeScript SDK (it checks every message against the
# protocol's schema) and the OpenAI npm package, pinned.
e2e_node() {
    local dir="${REIN_E2E_NODE_DIR:-target/e2e-node}"
    local m="$dir/node_modules"
    if [ -f "$m/@openai/codex-sdk/dist/index.js" ] \
        && [ -f "$m/@agentclientprotocol/sdk/dist/v1/stable/acp.js" ] \
        && [ -f "$m/openai/index.mjs" ]; then
        return
    fi
    npm_into "$dir" .none "the SDK tests" --omit=optional \
        @openai/codex-sdk @agentclientprotocol/sdk@2.4.0 zod@4 openai@7.59.0
}

# The official Codex CLI (its TUI is a native binary inside the npm package's platform
# dependency), for the test that drives `codex --remote` against `rein app-server` in
# tmux; pinned to the release whose protocol rein implements.
codex_tui() {
    local dir="target/codex-tui" pin="0.169.0"
    [ -f "$dir/installed-$pin" ] && return
    npm_into "$dir" ".none" "the Codex TUI test" "@openai/codex@$pin"
    local bin
    bin=$(find "$dir/node_modules/@openai" -path '*vendor*' -name codex -type f 2>/dev/null | head -n 1)
    if [ -n "$bin" ]; then
        ln -sf "$(realpath "$bin")" "$dir/codex" && touch "$dir/installed-$pin"
    else
        echo "test-setup: could not install @openai/codex@$pin; the Codex TUI test will be skipped" >&2
    fi
}

packages() {
    local pids=()
    cargo_deny & pids+=($!)
    e2e_node & pids+=($!)
    codex_tui & pids+=($!)
    # Real MCP servers for the interop tests: the reference TypeScript server from npm, and
    # a PyPI server with the Python SDK pinned below 2 (the 2.x SDK breaks the servers
    # written for 1.x).
    npm_into target/mcp-node node_modules/@modelcontextprotocol/server-everything/dist/index.js \
        "the MCP interop tests with server-everything" \
        @modelcontextprotocol/server-everything@2026.8.31 & pids+=($!)
    venv target/mcp-venv "the MCP interop tests with Python servers" \
        "mcp>=1.20,<2" mcp-server-time & pids+=($!)
    # The PyPI ACP SDK (pinned: its schema follows the protocol's releases), the official
    # OpenAI Python SDK and the official LangGraph Python client, each in its own venv.
    venv target/acp-venv "the ACP Python SDK test" agent-client-protocol==0.12.1 & pids+=($!)
    venv target/openai-venv "the OpenAI Python SDK test" openai==3.57.0 & pids+=($!)
    venv target/langgraph-venv "the LangGraph SDK test" langgraph-sdk==0.4.14 & pids+=($!)
    local pid
    for pid in "${pids[@]}"; do
        wait "$pid"
    done
}

case "${1:-all}" in
    system) system ;;
    packages) packages ;;
    all) system && packages ;;
    *) echo "usage: scripts/test-setup.sh [system|packages]" >&2; exit 2 ;;
esac
