#!/usr/bin/env bash
# The workspace's "never depends on" rules, checked against the resolved dependency graph
# (normal dependencies, every target platform): a crate that reaches a forbidden package,
# directly or through anything else, fails the check. The rules are the crate boundaries
# of ARCHITECTURE.md; change them there and here together.
set -euo pipefail
cd "$(dirname "$0")/.."

# The I/O, wire-format and sandbox crates the kernel must reach only through its traits.
kernel_forbidden="rusqlite reqwest hyper toml jsonrpsee tungstenite tokio-tungstenite rmcp
    agent-client-protocol landlock seccompiler rein-config rein-providers rein-rollout
    rein-tools rein-mcp rein-bootstrap rein-app-server rein-app-server-protocol rein-acp
    rein-mock-model"
# What the leaves (tool sources, storage, HTTP) must not reach: one another's I/O and the
# front ends.
front_ends="rein-bootstrap rein-app-server rein-app-server-protocol rein-acp rein-serve rein-cli"

failures=0

# reaches PACKAGE: the names of every package PACKAGE depends on (normal edges only).
reaches() {
    cargo tree --locked -p "$1" -e normal --target all --prefix none --format '{p}' |
        awk '{print $1}' | sort -u
}

# forbid PACKAGE NAME...: PACKAGE must reach none of NAME.
forbid() {
    local package="$1"
    shift
    local graph
    graph="$(reaches "$package")"
    local name
    for name in "$@"; do
        if grep -qx -- "$name" <<<"$graph"; then
            echo "check-deps: $package reaches $name; see 'cargo tree -p $package -i $name -e normal'" >&2
            failures=$((failures + 1))
        fi
    done
}

# forbid_direct PACKAGE NAME...: PACKAGE must not depend on any NAME itself (it may reach
# them through bootstrap, which wires the leaves: that is the point of the rule).
forbid_direct() {
    local package="$1"
    shift
    local direct
    direct="$(cargo tree --locked -p "$package" -e normal --target all --depth 1 --prefix none \
        --format '{p}' | awk 'NR > 1 {print $1}' | sort -u)"
    local name
    for name in "$@"; do
        if grep -qx -- "$name" <<<"$direct"; then
            echo "check-deps: $package depends on $name directly; reach it through rein-bootstrap or a kernel port" >&2
            failures=$((failures + 1))
        fi
    done
}

# The leaves a front end reaches only through the kernel's ports and bootstrap's wiring
# (configuration included: a client's MCP servers reach rein acp's sessions through
# bootstrap's ClientServer).
leaves="rein-rollout rein-tools rein-providers rein-context rein-supervise rein-mock-model
    rein-mcp rein-hooks"

# shellcheck disable=SC2086 # the lists are word lists on purpose
{
    forbid_direct rein-app-server $leaves rein-config
    forbid_direct rein-acp $leaves rein-config
    forbid rein-protocol tokio reqwest rusqlite hyper toml rein-core
    forbid rein-app-server-protocol tokio rein-core rein-protocol
    forbid rein-core $kernel_forbidden
    forbid rein-config tokio reqwest rusqlite rein-core
    forbid rein-tools rusqlite reqwest hyper toml jsonrpsee tungstenite tokio-tungstenite \
        rmcp agent-client-protocol rein-config rein-rollout rein-providers rein-mcp $front_ends
    forbid rein-rollout reqwest hyper toml jsonrpsee landlock seccompiler rein-config \
        rein-providers rein-tools rein-app-server-protocol
    forbid rein-providers rusqlite jsonrpsee landlock seccompiler rein-rollout rein-tools \
        rein-app-server-protocol
    forbid rein-mcp rusqlite jsonrpsee landlock seccompiler rein-rollout \
        rein-providers rein-tools $front_ends
    forbid rein-context tokio reqwest rusqlite hyper toml jsonrpsee rein-core rein-config \
        rein-tools rein-rollout rein-providers rein-mcp $front_ends
    forbid rein-supervise tokio reqwest rusqlite hyper toml rein-protocol rein-core \
        rein-tools rein-mcp $front_ends
    forbid rein-hooks reqwest rusqlite hyper toml jsonrpsee landlock seccompiler rein-config \
        rein-rollout rein-providers rein-tools rein-mcp rein-context $front_ends
    forbid rein-bootstrap jsonrpsee tungstenite tokio-tungstenite rein-app-server \
        rein-app-server-protocol rein-acp rein-serve
    forbid rein-serve jsonrpsee tungstenite tokio-tungstenite rein-app-server \
        rein-app-server-protocol rein-acp rein-cli
    forbid_direct rein-serve rein-rollout rein-tools rein-mcp rein-config rein-providers \
        rein-context rusqlite reqwest
}

if [ "$failures" -ne 0 ]; then
    echo "check-deps: $failures rule(s) broken" >&2
    exit 1
fi
echo "check-deps: every dependency rule holds"
