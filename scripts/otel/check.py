#!/usr/bin/env python3
"""The checks of scripts/interop-otel, read from the JSON lines of scripts/otel/receiver.py.

    check.py FILE --http-port PORT [--sentinel FILE2 | --no-sentinel WHY]

FILE holds what the receiver decoded, each line labelled with the run it came in (the driver
marks each run: `harness-stdio`, `harness-http`, `stdio-add`, `stdio-fail`, `stdio-reject`,
`http-add`, `http-add-legacy`, `no-endpoint`). FILE2 is what a second receiver on the OTLP
default port (127.0.0.1:4318) got during `no-endpoint`. PORT is the Python server's HTTP port.

Prints one line per check, `ok NAME` or `FAIL NAME: why`, and after a FAIL about a span or
metric point the receiver's JSON line of it (`   line: {...}`). Exits 1 on any FAIL.

The checks (numbered as in the brief of issue 34):
- harness: the Python SDK's own client (scripts/otel/py_client.py) and server reach the receiver,
  the server's span a child of the client's (so a failure below is mcpc's, not the harness's);
- 1: mcpc's CLIENT span `tools/call add` with the conventions' attributes, per transport;
- 2: `tools/call fail` (an isError result) and `tools/call reject` (a JSON-RPC error) as failures;
- 3: the Python server's SERVER span for the call is in mcpc's trace, its parent mcpc's span;
- 4: the `mcp.client.operation.duration` and `mcp.client.session.duration` histograms;
- 5: without OTEL_EXPORTER_OTLP_ENDPOINT mcpc sends nothing (and, traced with strace, opens no
  TCP connection at all);
- 6: every request mcpc sends carries its trace (issue 34: `traceparent` in `params._meta` of
  every request, a client span per request): each SERVER span of the Python server for a
  request (one with a `jsonrpc.request.id`) in an mcpc run is the child of an mcpc client span;
- 7: with OTEL_EXPORTER_OTLP_COMPRESSION=gzip (one of the standard variables mcpc says it
  reads) mcpc's exports arrive gzip-encoded, and decode.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from typing import Any

SERVICE = "mcpc-interop"
PY_SERVER = "py-server"
PY_CLIENT = "py-client"
BOUNDS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]
MODERN = "2026-07-28"


class Report:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, problems: list[str], line: dict[str, Any] | None = None) -> None:
        if not problems:
            print(f"ok   {name}", flush=True)
            self.passed += 1
            return
        print(f"FAIL {name}: " + "; ".join(problems), flush=True)
        if line is not None:
            print("   line: " + json.dumps(line, sort_keys=True), flush=True)
        self.failed += 1


def load(path: str) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    runs[r.get("run", "")].append(r)
    except FileNotFoundError:
        pass
    return runs


def spans(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in recs if r["signal"] == "span"]


def service(r: dict[str, Any]) -> Any:
    return r.get("resource", {}).get("service.name")


def is_tool_call(s: dict[str, Any], tool: str) -> bool:
    a = s["attributes"]
    return (a.get("mcp.method.name") == "tools/call" and a.get("gen_ai.tool.name") == tool) or s["name"] in (
        f"tools/call {tool}",
        f"MCP send tools/call {tool}",
    )


def client_span(recs: list[dict[str, Any]], tool: str) -> tuple[dict[str, Any] | None, str]:
    """mcpc's span of `tools/call TOOL` in a run (any span not from the Python peers), or why none."""
    mine = [s for s in spans(recs) if service(s) not in (PY_SERVER, PY_CLIENT)]
    calls = [s for s in mine if is_tool_call(s, tool)]
    if len(calls) == 1:
        return calls[0], ""
    if not calls:
        names = sorted({f"{s['name']} ({service(s)})" for s in mine})
        return None, f"no span of tools/call {tool} from mcpc; its spans: {names or 'none'}"
    return None, f"{len(calls)} spans of tools/call {tool} from mcpc, expected one: " + ", ".join(
        f"{s['name']}/{s['kind']}/{s['span_id']}" for s in calls
    )


def server_span(recs: list[dict[str, Any]], tool: str, trace_id: str | None = None) -> dict[str, Any] | None:
    found = [
        s
        for s in spans(recs)
        if service(s) == PY_SERVER and s["kind"] == "SERVER" and is_tool_call(s, tool)
        and (trace_id is None or s["trace_id"] == trace_id)
    ]
    if not found:
        found = [s for s in spans(recs) if service(s) == PY_SERVER and s["kind"] == "SERVER" and is_tool_call(s, tool)]
    return found[0] if found else None


def want(problems: list[str], attrs: dict[str, Any], key: str, value: Any) -> None:
    if key not in attrs:
        problems.append(f"{key} missing (wanted {value!r})")
    elif attrs[key] != value:
        problems.append(f"{key}={attrs[key]!r} (wanted {value!r})")


def want_present(problems: list[str], attrs: dict[str, Any], key: str, kind: type = str) -> None:
    if key not in attrs:
        problems.append(f"{key} missing")
    elif not isinstance(attrs[key], kind) or attrs[key] in ("", None):
        problems.append(f"{key}={attrs[key]!r} (wanted a non-empty {kind.__name__})")


def check_client_add(rep: Report, runs: dict, run: str, transport: str, http_port: int | None, label: str) -> dict | None:
    recs = runs.get(run, [])
    s, why = client_span(recs, "add")
    name = f"1 {label}: mcpc's client span of tools/call add"
    if s is None:
        rep.check(name, [why])
        return None
    p: list[str] = []
    a = s["attributes"]
    if s["name"] != "tools/call add":
        p.append(f"span name {s['name']!r} (wanted 'tools/call add')")
    if s["kind"] != "CLIENT":
        p.append(f"kind {s['kind']} (wanted CLIENT)")
    want(p, a, "mcp.method.name", "tools/call")
    want(p, a, "gen_ai.tool.name", "add")
    want(p, a, "gen_ai.operation.name", "execute_tool")
    want_present(p, a, "jsonrpc.request.id")
    want_present(p, a, "mcp.protocol.version")
    want(p, a, "network.transport", transport)
    if transport == "tcp":
        want(p, a, "server.address", "127.0.0.1")
        want(p, a, "server.port", http_port)
        # The Python server keeps a session (Mcp-Session-Id) in the handshake era only; the
        # 2026-07-28 era is stateless.
        if a.get("mcp.protocol.version") and a.get("mcp.protocol.version") < MODERN:
            want_present(p, a, "mcp.session.id")
        elif "mcp.session.id" in a:
            p.append(f"mcp.session.id={a['mcp.session.id']!r} in the stateless {MODERN} era")
    for k in ("error.type", "rpc.response.status_code"):
        if k in a:
            p.append(f"{k}={a[k]!r} on a call that succeeded")
    if s["status_code"] not in ("UNSET", "OK"):
        p.append(f"status {s['status_code']} {s['status_message']!r} (wanted UNSET or OK)")
    if service(s) != SERVICE:
        p.append(f"resource service.name={service(s)!r} (wanted {SERVICE!r})")
    rep.check(name, p, s)
    return s


def check_failure(rep: Report, runs: dict, run: str, tool: str, error_type: str, status_code: str | None, message: str | None) -> None:
    s, why = client_span(runs.get(run, []), tool)
    name = f"2 stdio: tools/call {tool}: error.type={error_type}, status ERROR"
    if status_code:
        name += f", rpc.response.status_code={status_code}"
    if s is None:
        rep.check(name, [why])
        return
    p: list[str] = []
    a = s["attributes"]
    if s["name"] != f"tools/call {tool}":
        p.append(f"span name {s['name']!r} (wanted 'tools/call {tool}')")
    if s["kind"] != "CLIENT":
        p.append(f"kind {s['kind']} (wanted CLIENT)")
    want(p, a, "error.type", error_type)
    if status_code:
        want(p, a, "rpc.response.status_code", status_code)
    elif "rpc.response.status_code" in a:
        p.append(f"rpc.response.status_code={a['rpc.response.status_code']!r} on a result (no JSON-RPC error)")
    if s["status_code"] != "ERROR":
        p.append(f"status {s['status_code']} (wanted ERROR)")
    if message and message not in s["status_message"]:
        p.append(f"status message {s['status_message']!r} (wanted the JSON-RPC error's message {message!r})")
    rep.check(name, p, s)


def check_parent(rep: Report, runs: dict, run: str, label: str, client: dict | None, who: str = "mcpc") -> None:
    name = f"3 {label}: the Python server's span continues {who}'s trace (parent = {who}'s client span)"
    if client is None:
        rep.check(name, [f"no client span of {who} to compare with (see check 1)"])
        return
    s = server_span(runs.get(run, []), "add", client["trace_id"])
    if s is None:
        rep.check(name, ["no SERVER span of tools/call add from py-server in this run (the harness checks say whether the server exports)"])
        return
    p = []
    if s["trace_id"] != client["trace_id"]:
        p.append(f"server trace {s['trace_id']} != client trace {client['trace_id']} (no traceparent in _meta, or one the SDK could not read)")
    if s["parent_span_id"] != client["span_id"]:
        p.append(f"server parent {s['parent_span_id'] or 'none'} != client span {client['span_id']}")
    rep.check(name, p, s if p else None)


def metric_points(recs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [r for r in recs if r["signal"] == "metric" and r["name"] == name]


def check_metrics(rep: Report, runs: dict, run: str, label: str) -> None:
    recs = runs.get(run, [])
    name = f"4 {label}: mcp.client.operation.duration histogram (s, the conventions' buckets, a tools/call point) and mcp.client.session.duration"
    p: list[str] = []
    line = None
    ops = metric_points(recs, "mcp.client.operation.duration")
    if not ops:
        names = sorted({r["name"] for r in recs if r["signal"] == "metric"})
        p.append(f"no mcp.client.operation.duration point; metrics received: {names or 'none'}")
    else:
        calls = [r for r in ops if r["attributes"].get("mcp.method.name") == "tools/call"]
        line = calls[0] if calls else ops[0]
        if not calls:
            p.append("no point with mcp.method.name=tools/call; points: " + ", ".join(json.dumps(r["attributes"], sort_keys=True) for r in ops))
        if line["type"] != "histogram":
            p.append(f"type {line['type']} (wanted histogram)")
        if line["unit"] != "s":
            p.append(f"unit {line['unit']!r} (wanted 's')")
        if line.get("explicit_bounds") != BOUNDS:
            p.append(f"explicit bounds {line.get('explicit_bounds')} (wanted {BOUNDS})")
        if line["type"] == "histogram" and not line.get("count"):
            p.append("count 0")
        if service(line) != SERVICE:
            p.append(f"resource service.name={service(line)!r} (wanted {SERVICE!r})")
    sess = metric_points(recs, "mcp.client.session.duration")
    if not sess:
        p.append("no mcp.client.session.duration point")
    else:
        s = sess[0]
        if s["type"] != "histogram" or s["unit"] != "s":
            p.append(f"mcp.client.session.duration: type {s['type']}, unit {s['unit']!r} (wanted histogram, 's')")
            line = line or s
        elif s.get("explicit_bounds") != BOUNDS:
            p.append(f"mcp.client.session.duration explicit bounds {s.get('explicit_bounds')} (wanted {BOUNDS})")
            line = line or s
    rep.check(name, p, line if p else None)


def check_metric_attributes(rep: Report, runs: dict) -> None:
    """The conventions' attributes on the operation points: the tool's name, error.type on a
    failed call, and nothing per request (cardinality)."""
    name = "4 metric attributes: gen_ai.tool.name on tools/call points, error.type=tool_error on the failed call's, no jsonrpc.request.id or mcp.session.id"
    p: list[str] = []
    line = None
    add = [r for r in metric_points(runs.get("stdio-add", []), "mcp.client.operation.duration") if r["attributes"].get("mcp.method.name") == "tools/call"]
    fail = [r for r in metric_points(runs.get("stdio-fail", []), "mcp.client.operation.duration") if r["attributes"].get("mcp.method.name") == "tools/call"]
    if not add or not fail:
        rep.check(name, ["no tools/call point of mcp.client.operation.duration to look at (see the checks 4 above)"])
        return
    for r in add:
        if r["attributes"].get("gen_ai.tool.name") != "add":
            p.append(f"the add call's point has gen_ai.tool.name={r['attributes'].get('gen_ai.tool.name')!r}")
            line = line or r
        if "error.type" in r["attributes"]:
            p.append(f"the add call's point has error.type={r['attributes']['error.type']!r}")
            line = line or r
    if not any(r["attributes"].get("error.type") == "tool_error" for r in fail):
        p.append("no point of the failed call with error.type=tool_error: " + ", ".join(json.dumps(r["attributes"], sort_keys=True) for r in fail))
        line = line or fail[0]
    for r in add + fail:
        for k in ("jsonrpc.request.id", "mcp.session.id"):
            if k in r["attributes"]:
                p.append(f"{k} on a metric point (one series per request or session)")
                line = line or r
    rep.check(name, p, line)


def check_silence(rep: Report, runs: dict, sentinel: str | None, no_sentinel: str | None, connects: str | None, no_connects: str) -> None:
    name = "5 without OTEL_EXPORTER_OTLP_ENDPOINT mcpc sends nothing"
    p = []
    got = [r for r in runs.get("no-endpoint", []) if r["signal"] == "request"]
    if got:
        p.append(f"{len(got)} requests reached the receiver: " + ", ".join(f"{r.get('path')} ({r.get('user_agent')})" for r in got))
    if sentinel is not None:
        at_default = [r for r in load(sentinel).get("", []) if r["signal"] == "request"]
        if at_default:
            p.append(f"{len(at_default)} requests reached 127.0.0.1:4318 (the OTLP default): " + ", ".join(f"{r.get('path')} ({r.get('user_agent')})" for r in at_default))
        name += " (to the receiver, nor to 127.0.0.1:4318)"
    else:
        name += f" (to the receiver; the default port not watched: {no_sentinel})"
    if connects is not None:
        # stdio only in that run, and the server has no endpoint: any TCP connect is an export.
        with open(connects, encoding="utf-8", errors="replace") as f:
            inet = [l.strip() for l in f if "connect(" in l and ("AF_INET" in l)]
        if inet:
            p.append(f"{len(inet)} TCP connects under strace: " + " | ".join(inet[:3]))
        name += ", no TCP connect under strace"
    else:
        name += f" (no strace: {no_connects})"
    rep.check(name, p, got[0] if got else None)


def mcpc_exports(recs: list[dict]) -> list[dict]:
    """The export requests mcpc made (not the Python SDK's exporter's)."""
    return [r for r in recs if r["signal"] == "request" and not r.get("user_agent", "").startswith("OTel-OTLP-Exporter-Python")]


def mcpc_spans(recs: list[dict]) -> dict:
    """mcpc's spans, by (trace id, span id)."""
    return {(s["trace_id"], s["span_id"]): s for s in recs if service(s) not in (PY_SERVER, PY_CLIENT)}


def check_every_request(rep: Report, runs: dict) -> None:
    name = "6 every request mcpc sends has a client span and carries its traceparent (each server span of a request is a child of one)"
    p: list[str] = []
    line = None
    for run in ("stdio-add", "stdio-fail", "stdio-reject", "http-add", "http-add-legacy"):
        recs = spans(runs.get(run, []))
        mine = mcpc_spans(recs)
        orphans = [
            s
            for s in recs
            if service(s) == PY_SERVER and s["kind"] == "SERVER" and "jsonrpc.request.id" in s["attributes"]
            and (s["trace_id"], s["parent_span_id"]) not in mine
        ]
        if orphans:
            p.append(f"{run}: " + ", ".join(f"{s['attributes'].get('mcp.method.name', s['name'])} (id {s['attributes']['jsonrpc.request.id']})" for s in orphans))
            line = line or orphans[0]
    if p:
        p = ["server spans of requests with no mcpc client span as parent: " + "; ".join(p)]
    rep.check(name, p, line)


def check_every_notification(rep: Report, runs: dict) -> None:
    name = "6b every notification mcpc sends is a client span whose context it carries (the Python server's span of each is a child of mcpc's span of it)"
    p: list[str] = []
    line = None
    seen = 0
    for run in ("stdio-add", "stdio-fail", "stdio-reject", "http-add", "http-add-legacy"):
        recs = spans(runs.get(run, []))
        mine = mcpc_spans(recs)
        theirs = [
            s
            for s in recs
            if service(s) == PY_SERVER and s["kind"] == "SERVER"
            and str(s["attributes"].get("mcp.method.name", s["name"])).startswith("notifications/")
        ]
        seen += len(theirs)
        for s in theirs:
            parent = mine.get((s["trace_id"], s["parent_span_id"]))
            method = s["attributes"].get("mcp.method.name", s["name"])
            if parent is None:
                p.append(f"{run}: {method} has no mcpc span as parent")
                line = line or s
            elif parent["kind"] != "CLIENT" or parent["attributes"].get("mcp.method.name") != method:
                p.append(f"{run}: {method}'s parent is mcpc's {parent['name']} ({parent['kind']}), not its span of that notification")
                line = line or s
    if seen == 0:
        p.append("no SERVER span of a notification from py-server in these runs")
    rep.check(name, p, line)


def check_gzip(rep: Report, runs: dict) -> None:
    name = "7 OTEL_EXPORTER_OTLP_COMPRESSION=gzip: mcpc's exports arrive with Content-Encoding gzip and decode"
    recs = runs.get("stdio-add-gzip", [])
    mcpc = mcpc_exports(recs)
    p = []
    if not mcpc:
        p.append("no export from mcpc in that run")
    plain = [r for r in mcpc if r.get("content_encoding") != "gzip"]
    if plain:
        p.append(f"{len(plain)} of {len(mcpc)} exports not compressed: " + ", ".join(f"{r['path']} Content-Encoding {r.get('content_encoding') or 'none'}" for r in plain))
    if mcpc and not plain and client_span(recs, "add")[0] is None:
        p.append(client_span(recs, "add")[1])
    rep.check(name, p, plain[0] if plain else None)


def check_json(rep: Report, runs: dict) -> None:
    name = "8 OTEL_EXPORTER_OTLP_PROTOCOL=http/json: mcpc's exports arrive as OTLP/JSON and decode to the same span"
    recs = runs.get("stdio-add-json", [])
    mcpc = mcpc_exports(recs)
    p = []
    if not mcpc:
        p.append("no export from mcpc in that run")
    other = [r for r in mcpc if r.get("content_type") != "application/json" or r.get("status") != 200]
    if other:
        p.append(f"{len(other)} of {len(mcpc)} exports not OTLP/JSON taken: " + ", ".join(f"{r['path']} {r.get('content_type')} {r.get('status')} {r.get('error', '')}" for r in other))
    if mcpc and not other and client_span(recs, "add")[0] is None:
        p.append(client_span(recs, "add")[1])
    rep.check(name, p, other[0] if other else None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--http-port", type=int, required=True)
    ap.add_argument("--sentinel")
    ap.add_argument("--no-sentinel", default="")
    ap.add_argument("--connects", help="strace's connect() calls of the no-endpoint run")
    ap.add_argument("--no-connects", default="", help="why there is no strace of it")
    args = ap.parse_args()
    runs = load(args.file)
    rep = Report()

    # The harness on its own: the Python SDK's client and server.
    for run, label in (("harness-stdio", "stdio"), ("harness-http", "Streamable HTTP")):
        recs = runs.get(run, [])
        client = next((s for s in spans(recs) if service(s) == PY_CLIENT and s["kind"] == "CLIENT" and is_tool_call(s, "add")), None)
        name = f"harness {label}: the Python SDK client's span reaches the receiver, the server's span is its child"
        if client is None:
            rep.check(name, [f"no CLIENT span of tools/call add from py-client; spans: {sorted({s['name'] + ' (' + str(service(s)) + ')' for s in spans(recs)})}"])
            continue
        server = server_span(recs, "add", client["trace_id"])
        p = []
        if server is None:
            p.append("no SERVER span of tools/call add from py-server")
        elif server["trace_id"] != client["trace_id"] or server["parent_span_id"] != client["span_id"]:
            p.append(f"server span {server['trace_id']}/{server['parent_span_id']} is not a child of {client['trace_id']}/{client['span_id']}")
        rep.check(name, p, server if p else None)

    stdio_add = check_client_add(rep, runs, "stdio-add", "pipe", None, "stdio")
    http_add = check_client_add(rep, runs, "http-add", "tcp", args.http_port, "Streamable HTTP")
    http_legacy = check_client_add(rep, runs, "http-add-legacy", "tcp", args.http_port, "Streamable HTTP, --era legacy (a session)")
    check_failure(rep, runs, "stdio-fail", "fail", "tool_error", None, None)
    check_failure(rep, runs, "stdio-reject", "reject", "-32602", "-32602", "rejected on purpose")
    check_parent(rep, runs, "stdio-add", "stdio", stdio_add)
    check_parent(rep, runs, "http-add", "Streamable HTTP", http_add)
    check_parent(rep, runs, "http-add-legacy", "Streamable HTTP, --era legacy", http_legacy)
    check_metrics(rep, runs, "stdio-add", "stdio")
    check_metrics(rep, runs, "http-add", "Streamable HTTP")
    check_metric_attributes(rep, runs)
    check_silence(rep, runs, args.sentinel, args.no_sentinel, args.connects, args.no_connects)
    check_every_request(rep, runs)
    check_every_notification(rep, runs)
    check_gzip(rep, runs)
    check_json(rep, runs)
    bad = [r for recs in runs.values() for r in recs if r["signal"] == "request" and r.get("status") != 200]
    rep.check(
        "every export the receiver got decoded (OTLP protobuf or JSON, a known path)",
        [f"{len(bad)} refused: " + "; ".join(f"{r.get('path')} {r.get('status')} {r.get('error')} ({r.get('user_agent')})" for r in bad[:5])] if bad else [],
        bad[0] if bad else None,
    )
    sys.exit(1 if rep.failed else 0)


if __name__ == "__main__":
    main()
