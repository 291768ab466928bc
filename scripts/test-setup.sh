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

# The hostile sandbox tests: python3 (its attacks use ctypes and sockets), setpriv (to run
# as nobody), setcap (file-capability attacks, as root).
missing=()
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
[ -x /usr/sbin/setcap ] || [ -x /sbin/setcap ] || command -v setcap >/dev/null 2>&1 || missing+=(libcap2-bin)
if [ "${#missing[@]}" -gt 0 ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        (apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null) \
            || echo "test-setup: could not install ${missing[*]}; the sandbox tests will fail" >&2
    else
        echo "test-setup: missing ${missing[*]}; the sandbox tests will fail" >&2
    fi
fi

# cargo-deny, for the license, ban and source checks of scripts/test.sh: built from
# crates.io once into ~/.cargo/bin (about 9 minutes on two busy cores, so never per run),
# skipped when present.
if ! command -v cargo-deny >/dev/null 2>&1; then
    cargo install cargo-deny --locked >&2 \
        || echo "test-setup: could not install cargo-deny; scripts/test.sh will fail at its check" >&2
fi

# The official Codex TypeScript SDK, for the test that drives `rein exec` through it.
# Without its optional dependencies, so the Codex binary itself is never fetched; under
# target/ so nothing is committed.
node_dir="${REIN_E2E_NODE_DIR:-target/e2e-node}"
if ! command -v npm >/dev/null 2>&1; then
    echo "test-setup: npm not found; the Codex SDK test will be skipped" >&2
elif [ ! -f "$node_dir/node_modules/@openai/codex-sdk/dist/index.js" ]; then
    mkdir -p "$node_dir"
    [ -f "$node_dir/package.json" ] || printf '{ "name": "rein-e2e-node", "private": true }\n' >"$node_dir/package.json"
    npm install --omit=optional --no-audit --no-fund --prefix "$node_dir" @openai/codex-sdk >&2 \
        || echo "test-setup: could not install @openai/codex-sdk" >&2
fi

# Real MCP servers for the interop tests, under target/ (nothing committed, cached by CI
# with the target dir): the reference TypeScript server from npm, and a PyPI server with
# the Python SDK pinned below 2 (the 2.x SDK breaks the servers written for 1.x).
mcp_node="target/mcp-node"
if ! command -v npm >/dev/null 2>&1; then
    echo "test-setup: npm not found; the MCP interop tests with server-everything will be skipped" >&2
elif [ ! -f "$mcp_node/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ]; then
    mkdir -p "$mcp_node"
    [ -f "$mcp_node/package.json" ] || printf '{ "name": "rein-mcp-node", "private": true }\n' >"$mcp_node/package.json"
    npm install --no-audit --no-fund --prefix "$mcp_node" @modelcontextprotocol/server-everything@2026.8.31 >&2 \
        || echo "test-setup: could not install @modelcontextprotocol/server-everything" >&2
fi
mcp_venv="target/mcp-venv"
if ! command -v python3 >/dev/null 2>&1; then
    echo "test-setup: python3 not found; the MCP interop tests with Python servers will be skipped" >&2
elif [ ! -x "$mcp_venv/bin/mcp-server-time" ]; then
    # Debian's python3 needs python3-venv for `-m venv` (ensurepip).
    if ! python3 -c 'import ensurepip' >/dev/null 2>&1 \
        && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        (apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null) \
            || echo "test-setup: could not install python3-venv" >&2
    fi
    rm -rf "$mcp_venv"
    (python3 -m venv "$mcp_venv" \
        && "$mcp_venv/bin/pip" install -q --disable-pip-version-check "mcp>=1.20,<2" mcp-server-time >&2) \
        || echo "test-setup: could not install mcp-server-time; its tests will be skipped" >&2
fi
# The PyPI ACP SDK (`agent-client-protocol`, pinned: its schema follows the protocol's
# releases), for the test that drives `rein acp` through its client side; its own venv
# under target/, marked installed per version so a new pin reinstalls.
acp_venv="target/acp-venv"
acp_py_pin="agent-client-protocol==0.12.1"
if ! command -v python3 >/dev/null 2>&1; then
    echo "test-setup: python3 not found; the ACP Python SDK test will be skipped" >&2
elif [ ! -f "$acp_venv/installed-$acp_py_pin" ]; then
    if ! python3 -c 'import ensurepip' >/dev/null 2>&1 \
        && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        (apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null) \
            || echo "test-setup: could not install python3-venv" >&2
    fi
    rm -rf "$acp_venv"
    (python3 -m venv "$acp_venv" \
        && "$acp_venv/bin/pip" install -q --disable-pip-version-check "$acp_py_pin" >&2 \
        && touch "$acp_venv/installed-$acp_py_pin") \
        || echo "test-setup: could not install $acp_py_pin" >&2
fi
# The official OpenAI Python SDK (pinned), for the test that drives `rein serve`'s
# Responses API through it; its own venv under target/, marked installed per version.
openai_venv="target/openai-venv"
openai_py_pin="openai==3.57.0"
if ! command -v python3 >/dev/null 2>&1; then
    echo "test-setup: python3 not found; the OpenAI Python SDK test will be skipped" >&2
elif [ ! -f "$openai_venv/installed-$openai_py_pin" ]; then
    if ! python3 -c 'import ensurepip' >/dev/null 2>&1 \
        && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        (apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null) \
            || echo "test-setup: could not install python3-venv" >&2
    fi
    rm -rf "$openai_venv"
    (python3 -m venv "$openai_venv" \
        && "$openai_venv/bin/pip" install -q --disable-pip-version-check "$openai_py_pin" >&2 \
        && touch "$openai_venv/installed-$openai_py_pin") \
        || echo "test-setup: could not install $openai_py_pin" >&2
fi
# The official LangGraph Python client (pinned), for the test that drives `rein serve`'s
# Agent Protocol (threads and runs) through it; its own venv under target/.
langgraph_venv="target/langgraph-venv"
langgraph_pin="langgraph-sdk==0.4.14"
if ! command -v python3 >/dev/null 2>&1; then
    echo "test-setup: python3 not found; the LangGraph SDK test will be skipped" >&2
elif [ ! -f "$langgraph_venv/installed-$langgraph_pin" ]; then
    if ! python3 -c 'import ensurepip' >/dev/null 2>&1 \
        && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        (apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null) \
            || echo "test-setup: could not install python3-venv" >&2
    fi
    rm -rf "$langgraph_venv"
    (python3 -m venv "$langgraph_venv" \
        && "$langgraph_venv/bin/pip" install -q --disable-pip-version-check "$langgraph_pin" >&2 \
        && touch "$langgraph_venv/installed-$langgraph_pin") \
        || echo "test-setup: could not install $langgraph_pin" >&2
fi
# The official ACP TypeScript SDK (it checks every message against the protocol's schema),
# for the test that drives `rein acp` through it; in the same directory, pinned.
if command -v npm >/dev/null 2>&1 \
    && [ ! -f "$node_dir/node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js" ]; then
    mkdir -p "$node_dir"
    [ -f "$node_dir/package.json" ] || printf '{ "name": "rein-e2e-node", "private": true }\n' >"$node_dir/package.json"
    npm install --no-audit --no-fund --prefix "$node_dir" @agentclientprotocol/sdk@2.4.0 zod@4 >&2 \
        || echo "test-setup: could not install @agentclientprotocol/sdk" >&2
fi
# The official OpenAI npm package (pinned), for the test that drives `rein serve`'s
# Responses API through it; in the same directory.
if command -v npm >/dev/null 2>&1 \
    && [ ! -f "$node_dir/node_modules/openai/index.mjs" ]; then
    mkdir -p "$node_dir"
    [ -f "$node_dir/package.json" ] || printf '{ "name": "rein-e2e-node", "private": true }\n' >"$node_dir/package.json"
    npm install --no-audit --no-fund --prefix "$node_dir" openai@7.59.0 >&2 \
        || echo "test-setup: could not install openai (npm)" >&2
fi
# The official Codex CLI (its TUI is a native binary inside the npm package's platform
# dependency), for the test that drives `codex --remote` against `rein app-server` in
# tmux; pinned to the release whose protocol rein implements, under target/.
codex_dir="target/codex-tui"
codex_pin="0.169.0"
if ! command -v tmux >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        (apt-get update -qq && apt-get install -y -qq tmux >/dev/null) \
            || echo "test-setup: could not install tmux; the Codex TUI test will be skipped" >&2
    else
        echo "test-setup: tmux missing and not installable here; the Codex TUI test will be skipped" >&2
    fi
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "test-setup: npm not found; the Codex TUI test will be skipped" >&2
elif [ ! -f "$codex_dir/installed-$codex_pin" ]; then
    mkdir -p "$codex_dir"
    [ -f "$codex_dir/package.json" ] || printf '{ "name": "rein-codex-tui", "private": true }\n' >"$codex_dir/package.json"
    (npm install --no-audit --no-fund --prefix "$codex_dir" "@openai/codex@$codex_pin" >&2 \
        && bin=$(find "$codex_dir/node_modules/@openai" -path '*vendor*' -name codex -type f | head -n 1) \
        && [ -n "$bin" ] && ln -sf "$(realpath "$bin")" "$codex_dir/codex" \
        && touch "$codex_dir/installed-$codex_pin") \
        || echo "test-setup: could not install @openai/codex@$codex_pin; the Codex TUI test will be skipped" >&2
fi
