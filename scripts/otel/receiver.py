#!/usr/bin/env python3
"""A small OTLP/HTTP receiver for the OpenTelemetry interop check (scripts/interop-otel).

    receiver.py --out FILE [--host 127.0.0.1] [--port PORT]

Listens on HOST:PORT (PORT 0: a free one) and prints `listening HOST:PORT` on stdout once it
accepts connections. Accepts POST /v1/traces, /v1/metrics and /v1/logs with
`Content-Type: application/x-protobuf` or OTLP/JSON `application/json` (a body in gzip or
deflate `Content-Encoding`, or
chunked, is decoded), decodes it with the official protobuf definitions (PyPI
`opentelemetry-proto`) and answers 200 with an empty Export*ServiceResponse. Anything else
(another path, another content type, a body that does not decode) is answered 4xx and recorded.

Appends to FILE one JSON line per request, span, metric data point and log record, each with
`signal` ("request", "span", "metric", "log") and `run` (the label last set by
`POST /mark?run=LABEL`, "" before any), so a driver can tell which of its runs sent what:
- request: path, content_type, content_encoding, user_agent, bytes, status, error (if any);
- span: trace_id, span_id, parent_span_id (hex, "" when none), name, kind ("CLIENT", ...),
  status_code ("UNSET", "OK", "ERROR"), status_message, attributes (flattened to JSON values),
  events (names), event_attributes, links (trace_id, span_id), resource (attributes, incl.
  service.name), scope (name);
- metric: name, unit, type ("histogram", "sum", "gauge", "exponential_histogram", "summary"),
  attributes, resource, scope, and for a histogram explicit_bounds, count, sum, bucket_counts;
  for a sum or gauge value; temporality where the type has one.
Lines are written before the answer is sent: once an exporter has its 200, its lines are in FILE.

This is a test harness, not a collector: it keeps nothing in memory past one request.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

MAX_BODY = 64 * 1024 * 1024  # a bound on one request's body, decoded or not


def any_value(v: AnyValue) -> Any:
    """One OTLP AnyValue as a JSON value (bytes as hex)."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def attributes(kvs: Any) -> dict[str, Any]:
    """A repeated KeyValue as a flat dict."""
    return {kv.key: any_value(kv.value) for kv in kvs}


def span_kind(k: int) -> str:
    name = trace_pb2.Span.SpanKind.Name(k)
    return name.removeprefix("SPAN_KIND_")


def status_code(c: int) -> str:
    return trace_pb2.Status.StatusCode.Name(c).removeprefix("STATUS_CODE_")


def temporality(t: int) -> str:
    return metrics_pb2.AggregationTemporality.Name(t).removeprefix("AGGREGATION_TEMPORALITY_")


def trace_records(body: bytes) -> list[dict[str, Any]]:
    req = trace_service_pb2.ExportTraceServiceRequest()
    req.ParseFromString(body)
    out = []
    for rs in req.resource_spans:
        resource = attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(
                    {
                        "signal": "span",
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent_span_id": s.parent_span_id.hex(),
                        "name": s.name,
                        "kind": span_kind(s.kind),
                        "status_code": status_code(s.status.code),
                        "status_message": s.status.message,
                        "attributes": attributes(s.attributes),
                        "events": [e.name for e in s.events],
                        "event_attributes": [attributes(e.attributes) for e in s.events],
                        "links": [{"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex()} for l in s.links],
                        "start_unix_nano": s.start_time_unix_nano,
                        "end_unix_nano": s.end_time_unix_nano,
                        "resource": resource,
                        "scope": ss.scope.name,
                    }
                )
    return out


def metric_records(body: bytes) -> list[dict[str, Any]]:
    req = metrics_service_pb2.ExportMetricsServiceRequest()
    req.ParseFromString(body)
    out = []
    for rm in req.resource_metrics:
        resource = attributes(rm.resource.attributes)
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                base = {
                    "signal": "metric",
                    "name": m.name,
                    "unit": m.unit,
                    "type": kind,
                    "resource": resource,
                    "scope": sm.scope.name,
                }
                data = getattr(m, kind) if kind else None
                if kind == "histogram":
                    for p in data.data_points:
                        out.append(
                            base
                            | {
                                "attributes": attributes(p.attributes),
                                "explicit_bounds": list(p.explicit_bounds),
                                "bucket_counts": list(p.bucket_counts),
                                "count": p.count,
                                "sum": p.sum if p.HasField("sum") else None,
                                "temporality": temporality(data.aggregation_temporality),
                            }
                        )
                elif kind in ("sum", "gauge"):
                    for p in data.data_points:
                        out.append(
                            base
                            | {
                                "attributes": attributes(p.attributes),
                                "value": getattr(p, p.WhichOneof("value")) if p.WhichOneof("value") else None,
                            }
                            | ({"temporality": temporality(data.aggregation_temporality)} if kind == "sum" else {})
                        )
                elif kind == "exponential_histogram":
                    for p in data.data_points:
                        out.append(
                            base
                            | {
                                "attributes": attributes(p.attributes),
                                "count": p.count,
                                "scale": p.scale,
                                "temporality": temporality(data.aggregation_temporality),
                            }
                        )
                elif kind == "summary":
                    for p in data.data_points:
                        out.append(base | {"attributes": attributes(p.attributes), "count": p.count})
                else:
                    out.append(base | {"attributes": {}})
    return out


def log_records(body: bytes) -> list[dict[str, Any]]:
    req = logs_service_pb2.ExportLogsServiceRequest()
    req.ParseFromString(body)
    out = []
    for rl in req.resource_logs:
        resource = attributes(rl.resource.attributes)
        for sl in rl.scope_logs:
            for r in sl.log_records:
                out.append(
                    {
                        "signal": "log",
                        "severity": r.severity_text,
                        "body": any_value(r.body),
                        "attributes": attributes(r.attributes),
                        "trace_id": r.trace_id.hex(),
                        "span_id": r.span_id.hex(),
                        "resource": resource,
                        "scope": sl.scope.name,
                    }
                )
    return out


ROUTES = {
    "/v1/traces": (trace_records, trace_service_pb2.ExportTraceServiceResponse),
    "/v1/metrics": (metric_records, metrics_service_pb2.ExportMetricsServiceResponse),
    "/v1/logs": (log_records, logs_service_pb2.ExportLogsServiceResponse),
}

REQUESTS = {
    "/v1/traces": trace_service_pb2.ExportTraceServiceRequest,
    "/v1/metrics": metrics_service_pb2.ExportMetricsServiceRequest,
    "/v1/logs": logs_service_pb2.ExportLogsServiceRequest,
}

# OTLP/JSON writes these bytes fields as hex, where protobuf's JSON mapping wants base64.
HEX_IDS = {"traceId", "spanId", "parentSpanId"}


def json_to_protobuf(path: str, body: bytes) -> bytes:
    """An OTLP/JSON body as the protobuf bytes of the same request (ids from hex)."""

    def fix(v: Any) -> Any:
        if isinstance(v, dict):
            return {
                k: (base64.b64encode(bytes.fromhex(x)).decode() if k in HEX_IDS and isinstance(x, str) else fix(x))
                for k, x in v.items()
            }
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v

    message = REQUESTS[path]()
    json_format.ParseDict(fix(json.loads(body)), message)
    return message.SerializeToString()


class Sink:
    """The JSON lines file and the current run label, shared by the handler threads."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.run = ""
        self.lock = threading.Lock()

    def write(self, records: list[dict[str, Any]]) -> None:
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps({"run": self.run} | r, sort_keys=True) + "\n")


class BadRequest(Exception):
    """A request this receiver refuses: the status and why."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as exporters' clients expect
    server_version = "otlp-interop-receiver"
    sink: Sink  # set on the class by main()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        sys.stderr.write("receiver: " + (format % args) + "\n")

    def read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts, total = [], 0
            while True:
                line = self.rfile.readline(1024).strip()
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline(1024).strip():  # trailers
                        pass
                    break
                total += size
                if total > MAX_BODY:
                    raise BadRequest(413, "body too large")
                parts.append(self.rfile.read(size))
                self.rfile.readline(8)
            return b"".join(parts)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise BadRequest(413, "body too large")
        return self.rfile.read(length)

    def answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 - the base's name
        url = urlsplit(self.path)
        if url.path == "/mark":
            self.read_body()
            self.sink.run = (parse_qs(url.query).get("run") or [""])[0]
            self.answer(200, b"", "text/plain")
            return
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        encoding = (self.headers.get("Content-Encoding") or "").strip().lower()
        request: dict[str, Any] = {
            "signal": "request",
            "path": url.path,
            "content_type": ctype,
            "content_encoding": encoding,
            "user_agent": self.headers.get("User-Agent") or "",
        }
        records: list[dict[str, Any]] = []
        status, reply = 200, b""
        try:
            body = self.read_body()
            request["bytes"] = len(body)
            if url.path not in ROUTES:
                raise BadRequest(404, f"no such path {url.path}")
            if ctype not in ("application/x-protobuf", "application/json"):
                raise BadRequest(
                    415, f"content type {ctype!r}: application/x-protobuf or application/json"
                )
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            elif encoding not in ("", "identity"):
                raise BadRequest(415, f"content encoding {encoding!r}")
            if len(body) > MAX_BODY:
                raise BadRequest(413, "body too large")
            decode, response = ROUTES[url.path]
            if ctype == "application/json":
                body = json_to_protobuf(url.path, body)
            records = decode(body)
            reply = response().SerializeToString()
        except BadRequest as e:
            status, request["error"] = e.status, str(e)
        except (DecodeError, json_format.ParseError, OSError, EOFError, ValueError, zlib.error) as e:
            status, request["error"] = 400, f"{type(e).__name__}: {e}"
        request["status"] = status
        request["records"] = len(records)
        self.sink.write([request] + records)
        if status == 200:
            self.answer(200, reply, "application/x-protobuf")
        else:
            self.answer(status, request["error"].encode(), "text/plain")

    def do_GET(self) -> None:  # noqa: N802 - the base's name
        self.sink.write([{"signal": "request", "path": self.path, "method": "GET", "status": 405}])
        self.answer(405, b"POST only\n", "text/plain")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the JSON lines file to append to")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    Handler.sink = Sink(args.out)
    httpd = ThreadingHTTPServer((args.host, args.port), Handler)
    httpd.daemon_threads = True
    host, port = httpd.server_address[:2]
    print(f"listening {host}:{port}", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()


if __name__ == "__main__":
    main()
