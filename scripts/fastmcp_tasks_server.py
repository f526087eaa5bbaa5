"""A FastMCP server with the 2026-07-28 tasks extension (PyPI `fastmcp-tasks`), for interop:
`python scripts/fastmcp_tasks_server.py [stdio | http PORT]`.

Tools: `slow(ms)` runs only as a task; `ask(question)` is a task that asks the client for input
(an elicitation, which the extension turns into `inputRequests`); `forever()` never ends (to be
cancelled); `quick(x)` may run as a task."""

import asyncio
import sys

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

mcp = FastMCP("fastmcp-tasks-interop")
mcp.add_extension(TasksExtension())


@mcp.tool(task=TaskConfig(mode="required"))
async def slow(ms: int = 500) -> str:
    """Sleep ms milliseconds, then answer."""
    await asyncio.sleep(ms / 1000)
    return f"slept {ms} ms"


@mcp.tool(task=TaskConfig(mode="required"))
async def ask(question: str, ctx: Context):
    """Ask the client a question (an elicitation, as the task's inputRequests) and answer with
    what it said."""
    answers = ctx.input_responses
    if not answers or "answer" not in answers:
        schema = {"type": "object", "properties": {"value": {"type": "string"}}}
        elicit = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(message=question, requested_schema=schema)
        )
        return mcp_types.InputRequiredResult(input_requests={"answer": elicit})
    answer = answers["answer"]
    action = getattr(answer, "action", None) or answer.get("action")
    content = getattr(answer, "content", None) if not isinstance(answer, dict) else answer.get("content")
    return f"{action}: {content}"


@mcp.tool(task=TaskConfig(mode="required"))
async def forever() -> str:
    """Never ends (cancel it)."""
    while True:
        await asyncio.sleep(1)


@mcp.tool(task=True)
async def quick(x: int = 1) -> int:
    """Double x."""
    return 2 * x


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        mcp.run(transport="stdio", show_banner=False)
