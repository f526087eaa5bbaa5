#!/usr/bin/env python3
"""The harness's own check of scripts/interop-otel, without mcpc: the official Python SDK's
client (PyPI `mcp` 2.x) with the OpenTelemetry SDK configured (`service.name=py-client`, OTLP/HTTP
to `$OTEL_EXPORTER_OTLP_ENDPOINT`) calls `add(a=2, b=3)` on scripts/otel/py_server.py.

    py_client.py --http URL
    py_client.py -- COMMAND [ARGS...]     (the server over stdio)

The SDK opens a CLIENT span per request and injects its `traceparent` into `params._meta`, so
the collector should see the client's span and the server's SERVER span as its child: that
shows the receiver decodes what a real OTLP exporter sends and the server continues a trace
from `_meta`, before mcpc is looked at. Prints the call's result; exits 1 if it is not 5.
"""

from __future__ import annotations

import argparse
import os
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


async def call(server: str | StdioServerParameters) -> str:
    async with Client(server, read_timeout_seconds=30) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
        return " ".join(getattr(c, "text", "") for c in result.content)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--http", metavar="URL")
    ap.add_argument("command", nargs="*")
    args = ap.parse_args()
    if bool(args.http) == bool(args.command):
        ap.error("give either --http URL or -- COMMAND")
    provider = TracerProvider(resource=Resource.create({"service.name": "py-client"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    server = args.http or StdioServerParameters(command=args.command[0], args=args.command[1:], env=dict(os.environ))
    try:
        text = anyio.run(call, server)
    finally:
        provider.shutdown()
    print(text)
    sys.exit(0 if text.strip() == "5" else 1)


if __name__ == "__main__":
    main()
