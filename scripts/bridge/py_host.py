#!/usr/bin/env python3
"""A host on the official Python SDK client (PyPI `mcp` 2.x) that starts an MCP server over stdio
(meant for `mcpc bridge ...`) and checks what a host needs of it, one line per check:
`ok NAME`, `FAIL NAME: why`, `XFAIL NAME: why` (a known failure, given with --xfail),
`skip NAME: why` (the server offers no tool for it). Exits 1 on any FAIL, 2 on the overall timeout.
HOST_TRACE=1 prints every message on stderr.

    py_host.py [--timeout SECONDS] [--xfail NAME=REASON]...
               [--call '{"check": NAME, "tool": T, "arguments": {...}, "expect": [TEXT...]}']...
               -- COMMAND [ARGS...]

Checks: connect; the client's default `auto` mode asks `server/discover` first, which the
bridge answers as a 2026-07-28 server (no `initialize` then); tools/list; a call
with progress (`trigger-long-running-operation`: all progress on the wire, in order, before the
result); sampling (`trigger-sampling-request`), elicitation (`trigger-elicitation-request`), roots
(`get-roots-list`); and a call cancelled by anyio cancellation: the SDK sends
`notifications/cancelled`, no answer to that id ever arrives (seen on the wire, under the SDK),
and a following call still works. Each --call adds a check: the tool's result (not an error)
contains every expected text.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage

SAMPLED = "bridge-sampled-7f3a"
NAME = "Ada Lovelace"
ROOT = "file:///tmp/bridge-interop-root"
STEP = 20  # seconds: the bound of one check's wait


class Report:
    """The checks' lines and outcome."""

    def __init__(self, xfail: dict[str, str]) -> None:
        self.xfail = xfail
        self.failed = 0

    def ok(self, name: str) -> None:
        if name in self.xfail:
            print(f"ok {name} (XPASS: marked as a known failure: {self.xfail[name]})", flush=True)
        else:
            print(f"ok {name}", flush=True)

    def fail(self, name: str, why: str) -> None:
        why = " ".join(str(why).split())[:500]
        if name in self.xfail:
            print(f"XFAIL {name}: {self.xfail[name]} (now: {why})", flush=True)
        else:
            print(f"FAIL {name}: {why}", flush=True)
            self.failed += 1

    def check(self, name: str, cond: bool, why: str) -> None:
        if cond:
            self.ok(name)
        else:
            self.fail(name, why)

    def skip(self, name: str, why: str) -> None:
        print(f"skip {name}: {why}", flush=True)


class Tap:
    """Every JSON-RPC message between the SDK and the server, as dicts."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []

    @staticmethod
    def wire(message: Any) -> dict[str, Any]:
        return message.model_dump(mode="json", by_alias=True, exclude_none=True)


@asynccontextmanager
async def tapped_stdio(params: StdioServerParameters, tap: Tap):
    """The SDK's stdio transport, with every message copied into `tap` on its way."""
    async with stdio_client(params) as (read, write):
        up_send, up_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        down_send, down_recv = anyio.create_memory_object_stream[SessionMessage](0)

        async def inbound() -> None:
            async with up_send:
                async for item in read:
                    if isinstance(item, SessionMessage):
                        tap.received.append(Tap.wire(item.message))
                        trace("host<", tap.received[-1])
                    await up_send.send(item)

        async def outbound() -> None:
            async with down_recv, write:
                async for item in down_recv:
                    tap.sent.append(Tap.wire(item.message))
                    trace("host>", tap.sent[-1])
                    await write.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(inbound)
            tg.start_soon(outbound)
            try:
                yield up_recv, down_send
            finally:
                tg.cancel_scope.cancel()


def trace(direction: str, message: dict[str, Any]) -> None:
    if os.environ.get("HOST_TRACE"):
        print(f"{direction} {json.dumps(message)}", file=sys.stderr, flush=True)


def fill(schema: dict[str, Any]) -> dict[str, Any]:
    """Content valid for a form elicitation's requested schema: defaults, else a value of the type."""
    out: dict[str, Any] = {}
    for key, prop in (schema.get("properties") or {}).items():
        if "default" in prop:
            out[key] = prop["default"]
            continue
        kind = prop.get("type")
        if kind == "string":
            if prop.get("enum"):
                out[key] = prop["enum"][0]
            elif prop.get("oneOf"):
                out[key] = prop["oneOf"][0]["const"]
            else:
                formats = {
                    "email": "ada@example.com",
                    "uri": "https://example.com/ada",
                    "date": "1815-12-10",
                    "date-time": "1815-12-10T00:00:00Z",
                }
                out[key] = formats.get(prop.get("format"), NAME)
        elif kind == "boolean":
            out[key] = True
        elif kind in ("integer", "number"):
            out[key] = prop.get("minimum", 1)
        elif kind == "array":
            items = prop.get("items") or {}
            choices = items.get("enum") or [c.get("const") for c in items.get("anyOf", [])]
            out[key] = choices[:1]
    return out


def progress_on_wire(tap: Tap, sent_before: int) -> list[float]:
    """The progress values received for the first tools/call sent after `sent_before`, before its
    final answer. A 2026-07-28 session may answer it `input_required` and the SDK sends it again
    (a new id, maybe a new token): every send of the same tool counts as that call."""
    calls = [m for m in tap.sent[sent_before:] if m.get("method") == "tools/call"]
    if not calls:
        return []
    name = (calls[0].get("params") or {}).get("name")
    calls = [c for c in calls if (c.get("params") or {}).get("name") == name]
    tokens = {
        json.dumps(tok)
        for c in calls
        if (tok := ((c.get("params") or {}).get("_meta") or {}).get("progressToken")) is not None
    }
    ids = {json.dumps(c["id"]) for c in calls}
    values: list[float] = []
    for m in tap.received:
        final = (m.get("result") or {}).get("resultType") != "input_required"
        if "method" not in m and json.dumps(m.get("id")) in ids and final:
            return values
        if m.get("method") == "notifications/progress":
            if json.dumps((m.get("params") or {}).get("progressToken")) in tokens:
                values.append(m["params"]["progress"])
    return []


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def main(args: argparse.Namespace) -> int:
    report = Report(dict(x.split("=", 1) if "=" in x else (x, "known failure") for x in args.xfail))
    tap = Tap()
    asked: dict[str, list[Any]] = {"sampling": [], "elicitation": [], "roots": []}

    async def sampling(_ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked["sampling"].append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SAMPLED),
            model="bridge-interop-model",
            stop_reason="endTurn",
        )

    async def elicitation(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked["elicitation"].append(params)
        schema = getattr(params, "requested_schema", None) or {}
        if not isinstance(schema, dict):
            schema = schema.model_dump(by_alias=True, exclude_none=True)
        return types.ElicitResult(action="accept", content=fill(schema))

    async def roots(_ctx: Any) -> types.ListRootsResult:
        asked["roots"].append(True)
        return types.ListRootsResult(roots=[types.Root(uri=ROOT, name="bridge-root")])

    params = StdioServerParameters(command=args.command[0], args=args.command[1:])
    client = Client(
        tapped_stdio(params, tap),
        sampling_callback=sampling,
        elicitation_callback=elicitation,
        list_roots_callback=roots,
        client_info=types.Implementation(name="py-host", version="1"),
        read_timeout_seconds=STEP,
    )
    # The connect is bounded by the overall timeout (a cancel scope may not span the client's entry).
    with anyio.fail_after(args.timeout):
        async with client:
            methods = [m.get("method") for m in tap.sent]
            report.check(
                "connect",
                client.protocol_version is not None,
                f"sent {methods}, protocol {client.protocol_version}",
            )
            print(f"# protocol {client.protocol_version}, server {client.server_info}, sent {methods[:3]}", flush=True)
            # The SDK's `auto` mode asks server/discover first: the bridge's front speaks the
            # 2026-07-28 era too, so the session is a modern one (no initialize at all).
            discover = next((m for m in tap.sent if m.get("method") == "server/discover"), None)
            answers = [
                m for m in tap.received if discover and "method" not in m and m.get("id") == discover["id"]
            ]
            report.check(
                "server/discover answered: a 2026-07-28 session",
                discover is not None
                and len(answers) == 1
                and "2026-07-28" in ((answers[0].get("result") or {}).get("supportedVersions") or [])
                and client.protocol_version == "2026-07-28"
                and "initialize" not in methods,
                f"sent {methods}, answers to server/discover {answers}, protocol {client.protocol_version}",
            )
            with anyio.fail_after(STEP):
                tools = {t.name for t in (await client.list_tools()).tools}
            report.check("tools/list", bool(tools), "no tools")

            # A call with progress.
            if "trigger-long-running-operation" in tools:
                seen: list[tuple[float, float | None]] = []

                async def on_progress(progress: float, total: float | None, _message: str | None) -> None:
                    seen.append((progress, total))

                sent_before = len(tap.sent)
                try:
                    with anyio.fail_after(STEP):
                        r = await client.call_tool(
                            "trigger-long-running-operation", {"duration": 1, "steps": 3}, progress_callback=on_progress
                        )
                    values = [p for p, _ in seen]
                    on_wire = progress_on_wire(tap, sent_before)
                    # On the wire: all three, in order, before the result; the callback: at least one.
                    report.check(
                        "call with progress",
                        len(on_wire) == 3
                        and on_wire == sorted(set(on_wire))
                        and values
                        and values == sorted(set(values))
                        and "completed" in text_of(r),
                        f"progress on the wire before the result {on_wire}, to the callback {values}, "
                        f"result {text_of(r)!r}",
                    )
                    if len(values) != len(on_wire):
                        print(f"# the SDK's callback saw {len(values)} of the {len(on_wire)} progress notifications")
                except Exception as e:  # noqa: BLE001
                    report.fail("call with progress", repr(e))
            else:
                report.skip("call with progress", "no trigger-long-running-operation tool")

            # Sampling, elicitation and roots: each a tool that asks the client.
            asks = [
                ("sampling", "trigger-sampling-request", {"prompt": "say something"}, [SAMPLED]),
                ("elicitation", "trigger-elicitation-request", {}, [NAME, "accept"]),
                ("roots", "get-roots-list", {}, [ROOT]),
            ]
            for check, tool, arguments, wanted in asks:
                if tool not in tools:
                    report.skip(check, f"no {tool} tool")
                    continue
                # server-everything asks for the roots once per session (at its start), and keeps them.
                before = 0 if check == "roots" else len(asked[check])
                try:
                    with anyio.fail_after(STEP):
                        r = await client.call_tool(tool, arguments)
                    text = text_of(r)
                    report.check(
                        check,
                        not r.is_error and len(asked[check]) > before and all(w in text for w in wanted),
                        f"handler asked {len(asked[check]) - before} times, result {text!r}",
                    )
                except Exception as e:  # noqa: BLE001
                    report.fail(check, repr(e))

            # The extra calls of --call.
            for spec in args.call:
                check, tool = spec["check"], spec["tool"]
                if tool not in tools:
                    report.skip(check, f"no {tool} tool")
                    continue
                try:
                    with anyio.fail_after(STEP):
                        r = await client.call_tool(tool, spec.get("arguments", {}))
                    text = text_of(r)
                    wanted = spec.get("expect", [])
                    report.check(check, not r.is_error and all(w in text for w in wanted), f"result {text!r}")
                except Exception as e:  # noqa: BLE001
                    report.fail(check, repr(e))

            # Cancel a call: after its first progress (so it reached the server), by anyio cancellation.
            if "trigger-long-running-operation" in tools:
                await cancel(client, tap, report)
            else:
                report.skip("cancel", "no trigger-long-running-operation tool")
    return 1 if report.failed else 0


async def cancel(client: Client, tap: Tap, report: Report) -> None:
    duration = 3.0
    progressed = anyio.Event()
    results: list[Any] = []

    async def on_progress(_p: float, _t: float | None, _m: str | None) -> None:
        progressed.set()

    async def run(*, task_status: anyio.abc.TaskStatus[anyio.CancelScope]) -> None:
        with anyio.CancelScope() as scope:
            task_status.started(scope)
            results.append(
                await client.call_tool(
                    "trigger-long-running-operation",
                    {"duration": duration, "steps": 6},
                    progress_callback=on_progress,
                )
            )

    started = time.monotonic()
    sent_before = len(tap.sent)
    try:
        async with anyio.create_task_group() as tg:
            scope = await tg.start(run)
            with anyio.fail_after(STEP):
                await progressed.wait()
            scope.cancel()
    except Exception as e:  # noqa: BLE001
        report.fail("cancel", f"the call failed before it was cancelled: {e!r}")
        return
    calls = [
        m
        for m in tap.sent[sent_before:]
        if m.get("method") == "tools/call" and (m.get("params") or {}).get("arguments", {}).get("steps") == 6
    ]
    call_id = calls[0]["id"] if calls else None
    cancels = [
        m
        for m in tap.sent[sent_before:]
        if m.get("method") == "notifications/cancelled" and (m.get("params") or {}).get("requestId") == call_id
    ]
    # A following call still works.
    try:
        with anyio.fail_after(STEP):
            r = await client.call_tool("trigger-long-running-operation", {"duration": 0.2, "steps": 1})
        report.check("call after cancel", "completed" in text_of(r), f"result {text_of(r)!r}")
    except Exception as e:  # noqa: BLE001
        report.fail("call after cancel", repr(e))
    # No answer to the cancelled call, even once the server would have finished it.
    await anyio.sleep(max(0.0, started + duration + 1.0 - time.monotonic()))
    answers = [m for m in tap.received if "method" not in m and m.get("id") == call_id]
    report.check(
        "cancel",
        call_id is not None and cancels and not results and not answers,
        f"call id {call_id}, cancels sent {cancels}, results {results}, answers on the wire {answers}",
    )


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--timeout", type=float, default=120, help="overall bound, seconds")
    p.add_argument("--xfail", action="append", default=[], metavar="NAME=REASON", help="a known failure")
    p.add_argument("--call", action="append", default=[], type=json.loads, metavar="JSON", help="an extra call")
    p.add_argument("command", nargs="+", help="the server's command and arguments (after --)")
    return p.parse_args()


if __name__ == "__main__":
    args = parse()

    def overall(_sig: int, _frame: Any) -> None:
        print(f"FAIL overall: no end within {args.timeout:g} s", flush=True)
        os._exit(2)

    signal.signal(signal.SIGALRM, overall)
    signal.alarm(int(args.timeout) + 1)
    try:
        code = anyio.run(main, args)
    except Exception as e:  # noqa: BLE001
        print(f"FAIL host: {' '.join(repr(e).split())[:500]}", flush=True)
        code = 1
    sys.stdout.flush()
    sys.exit(code)
