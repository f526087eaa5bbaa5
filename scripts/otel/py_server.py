#!/usr/bin/env python3
"""An MCP server on the official Python SDK (PyPI `mcp` 2.x) that exports its spans over OTLP,
for the OpenTelemetry interop check (scripts/interop-otel).

    py_server.py [--otlp-endpoint URL]              serve stdio
    py_server.py [--otlp-endpoint URL] --http PORT  serve Streamable HTTP at http://127.0.0.1:PORT/mcp

The SDK opens a SERVER span per request (its OpenTelemetryMiddleware, on by default) and
continues the trace given in `params._meta.traceparent` (SEP-414). Here the OpenTelemetry SDK
is configured so that those spans reach a collector: a TracerProvider with the resource
`service.name=py-server` and a SimpleSpanProcessor with the OTLP/HTTP (protobuf) span exporter
to `--otlp-endpoint`, else `$OTEL_EXPORTER_OTLP_ENDPOINT` (its `/v1/traces`; the flag does not
depend on the client that starts the server passing its environment on). The simple processor exports a span when
it ends, before the SDK writes the answer, so a client that has its answer finds the server's
span at the collector already. Without either nothing is exported
(the SDK's spans are then no-ops). The provider is shut down (flushed) when the server stops:
stdin closed, SIGTERM or SIGINT.

Tools: `add(a, b)` returns a + b; `fail()` returns a result with `isError: true` (a
`ToolError`); `reject()` answers a JSON-RPC error (an `MCPError`, code -32602).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

REJECT_CODE = -32602


def setup_tracing(endpoint: str | None) -> TracerProvider | None:
    """The global tracer provider exporting to the OTLP endpoint (a base URL), or None when none is set."""
    endpoint = endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not endpoint:
        return None
    provider = TracerProvider(resource=Resource.create({"service.name": "py-server"}))
    exporter = OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider


server = MCPServer("py-otel")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail() -> str:
    """Fail as a tool: the result has isError true."""
    raise ToolError("this tool always fails")


@server.tool()
def reject() -> str:
    """Fail as a protocol error: a JSON-RPC error answer."""
    raise MCPError(code=REJECT_CODE, message="rejected on purpose")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT")
    ap.add_argument("--otlp-endpoint", metavar="URL", help="the OTLP/HTTP base URL (default: $OTEL_EXPORTER_OTLP_ENDPOINT)")
    args = ap.parse_args()
    provider = setup_tracing(args.otlp_endpoint)

    def on_term(signum: int, _frame: object) -> None:
        # Unwinds the server's loop; the provider is flushed in the finally below.
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        if args.http is not None:
            server.run(transport="streamable-http", host="127.0.0.1", port=args.http)
        else:
            server.run()
    except KeyboardInterrupt:
        pass
    finally:
        if provider is not None:
            provider.shutdown()
        sys.stderr.flush()


if __name__ == "__main__":
    main()
