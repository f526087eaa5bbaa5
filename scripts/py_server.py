#!/usr/bin/env python3
"""A small MCP server on the official Python SDK (mcp 2.x), for interop tests over stdio, or
over Streamable HTTP at http://127.0.0.1:PORT/mcp with `py_server.py http PORT`.

Tools: echo(message) returns the message; slow(ms) sleeps ms milliseconds, then answers;
change_tools() and touch(uri) publish a tools list change and a resource update to the
`subscriptions/listen` streams (2026-07-28). Resource: py://note.

With mcp >= 2, four tools named as server-everything's (so that one client script checks both)
that need the client the 2026-07-28 way: `trigger-long-running-operation(duration, steps)`
reports progress; `trigger-sampling-request(prompt)`, `trigger-elicitation-request()` and
`get-roots-list()` ask the client through resolvers (`Sample`, `Elicit`, `ListRoots`), which the
SDK sends as an `input_required` result in 2026-07-28 and as a server request before.
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


try:  # mcp >= 2: resolvers asking the client for input
    from typing import Annotated

    from mcp.server.mcpserver import AcceptedElicitation, Elicit, ElicitationResult, ListRoots, Resolve, Sample
    from mcp_types import CreateMessageResult, ListRootsResult, SamplingMessage, TextContent
    from pydantic import BaseModel
except ImportError:  # mcp 1.x: not offered
    Resolve = None

if Resolve is not None:

    class Person(BaseModel):
        """What the elicitation asks for."""

        name: str

    def ask_name() -> Elicit[Person]:
        return Elicit("Who are you?", Person)

    def sample_prompt(prompt: str) -> Sample:
        return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=prompt))], max_tokens=100)

    def ask_roots() -> ListRoots:
        return ListRoots()

    @server.tool(name="trigger-long-running-operation")
    async def long_running(ctx: Context, duration: float = 10, steps: int = 5) -> str:
        """Sleep duration seconds in steps, reporting progress after each."""
        for i in range(1, steps + 1):
            await anyio.sleep(duration / steps)
            await ctx.report_progress(i, steps)
        return f"Long running operation completed. Duration: {duration} seconds, Steps: {steps}."

    @server.tool(name="trigger-sampling-request")
    async def trigger_sampling(prompt: str, sampled: Annotated[CreateMessageResult, Resolve(sample_prompt)]) -> str:
        """Ask the client's LLM (sampling) and answer with what it said."""
        text = getattr(sampled.content, "text", None)
        return f"LLM sampling result: {text}"

    @server.tool(name="trigger-elicitation-request")
    async def trigger_elicitation(person: Annotated[ElicitationResult[Person], Resolve(ask_name)]) -> str:
        """Ask the user for a name (elicitation) and answer with the outcome."""
        if isinstance(person, AcceptedElicitation):
            return f"accept: Name: {person.data.name}"
        return person.action

    @server.tool(name="get-roots-list")
    async def get_roots(roots: Annotated[ListRootsResult, Resolve(ask_roots)]) -> str:
        """Ask the client for its roots and list them."""
        return f"Current MCP Roots ({len(roots.roots)} total): " + ", ".join(str(r.uri) for r in roots.roots)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "http":
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
