#!/usr/bin/env python3
"""The smallest MCP server over stdio, for bench/mcp.py: no SDK, one JSON-RPC message a
line, one tool. `timed` busy-waits `ms` milliseconds and answers `{"handled_us": N}`: the
time from its request line read to its answer about to be written, so the server's own
time of a call is known exactly."""
import json, sys, time

TOOL = {"name": "timed", "description": "Busy-wait ms milliseconds; report the handling time.",
        "inputSchema": {"type": "object", "properties": {"ms": {"type": "number"}}}}


def answer(request, start):
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}}, "serverInfo": {"name": "bench", "version": "0"}}
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "ping":
        return {}
    if method == "tools/call" and params.get("name") == "timed":
        end = start + float((params.get("arguments") or {}).get("ms", 0)) / 1000
        while time.perf_counter() < end:
            pass
        handled = round((time.perf_counter() - start) * 1e6, 1)
        return {"content": [{"type": "text", "text": json.dumps({"handled_us": handled})}]}
    return None


def main():
    out = sys.stdout
    for line in sys.stdin:
        start = time.perf_counter()
        request = json.loads(line)
        if "id" not in request:
            continue  # a notification
        result = answer(request, start)
        reply = {"jsonrpc": "2.0", "id": request["id"]}
        if result is None:
            reply["error"] = {"code": -32601, "message": f"no method {request.get('method')}"}
        else:
            reply["result"] = result
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
