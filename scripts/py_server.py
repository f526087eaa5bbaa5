#!/usr/bin/env python3
"""A small MCP server on the official Python SDK (mcp 2.x), for interop tests over stdio, or
over Streamable HTTP at http://127.0.0.1:PORT/mcp with `py_server.py http PORT`.

Tools: echo(message) returns the message; slow(ms) sleeps ms milliseconds, then answers.
"""
import sys

import anyio

try:
    from mcp.server.mcpserver import MCPServer as Server  # mcp >= 2
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server

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


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "http":
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
