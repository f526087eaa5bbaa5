#!/usr/bin/env python3
"""A small MCP server on the official Python SDK (mcp 2.x), for interop tests over stdio, or
over Streamable HTTP at http://127.0.0.1:PORT/mcp with `py_server.py http PORT`.

Tools: echo(message) returns the message; slow(ms) sleeps ms milliseconds, then answers;
change_tools() and touch(uri) publish a tools list change and a resource update to the
`subscriptions/listen` streams (2026-07-28). Resource: py://note.
"""
import sys

import anyio

try:
    from mcp.server.mcpserver import Context, MCPServer as Server  # mcp >= 2
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP as Server

server = Server("py-interop")


@server.tool()
def echo(message: str) -> str:
    """Return the message."""
    return message


@server.tool()
async def slow(ms: int) -> str:
    """Sleep, then answer."""
    await anyio.sleep(ms / 1000)
    return f"slept {ms}"


@server.tool()
async def change_tools(ctx: Context) -> str:
    """Tell the listens that the tool list changed."""
    await ctx.notify_tools_changed()
    return "changed"


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Tell the listens that a resource was updated."""
    await ctx.notify_resource_updated(uri)
    return f"touched {uri}"


@server.resource("py://note")
def note() -> str:
    """A note."""
    return "a note"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "http":
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
