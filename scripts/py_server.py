#!/usr/bin/env python3
"""A small MCP server on the official Python SDK (mcp 2.x), for interop tests over stdio.

Tools: echo(message) returns the message; slow(ms) sleeps ms milliseconds, then answers.
"""
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
    server.run()
