"""The floor: a bare agent loop with the same SDK and the same requests, and a no-op tool.

    python -m benchmarks.bare_loop --wire openai --system PROMPT.md --max-turns N [--sync]

It streams each request exactly as the runner's provider does (same SDK, same system prompt, same
history growth), runs an in-process no-op tool for any reply that is not attempt_completion, and
prints one JSON line: turns done and the process's peak RSS. The fake server times the requests.
Base URLs and keys come from OPENAI_BASE_URL / ANTHROPIC_BASE_URL and the *_API_KEY variables.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
from pathlib import Path
from typing import Any

PROMPT = "Read notes.txt and report."
TOOL_RESULT = "[read_file for 'notes.txt'] Result:\nbenchmark notes\n"


async def _openai_loop(client: Any, system: str, max_turns: int) -> int:
    messages: list[Any] = [
        {"role": "system", "content": system},
        {"role": "user", "content": PROMPT},
    ]
    turns = 0
    while turns < max_turns:
        stream = await client.chat.completions.create(
            model="gpt-4.1",
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
            max_tokens=8192,
        )
        parts = []
        async for chunk in stream:
            for choice in chunk.choices:
                if choice.delta.content:
                    parts.append(choice.delta.content)
        turns += 1
        text = "".join(parts)
        if "<attempt_completion>" in text:
            break
        messages.append({"role": "assistant", "content": text})
        messages.append({"role": "user", "content": TOOL_RESULT})
    return turns


async def _anthropic_loop(client: Any, system: str, max_turns: int) -> int:
    cached: Any = {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    turns = 0
    while turns < max_turns:
        stream = await client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=8192,
            system=[cached],
            messages=messages,
            stream=True,
        )
        parts = []
        async for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                parts.append(event.delta.text)
        turns += 1
        text = "".join(parts)
        if "<attempt_completion>" in text:
            break
        messages.append({"role": "assistant", "content": text})
        messages.append({"role": "user", "content": TOOL_RESULT})
    return turns


def _sync_loop(wire: str, system: str, max_turns: int) -> int:
    """The synchronous SDK client doing the same requests (the second per-turn floor)."""
    if wire == "openai":
        import openai

        client: Any = openai.OpenAI(max_retries=0)
    else:
        import anthropic

        client = anthropic.Anthropic(max_retries=0)
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    turns = 0
    try:
        while turns < max_turns:
            parts = []
            if wire == "openai":
                stream = client.chat.completions.create(
                    model="gpt-4.1",
                    messages=[{"role": "system", "content": system}, *messages],
                    stream=True,
                    stream_options={"include_usage": True},
                    max_tokens=8192,
                )
                for chunk in stream:
                    parts += [c.delta.content for c in chunk.choices if c.delta.content]
            else:
                cached: Any = {
                    "type": "text",
                    "text": system,
                    "cache_control": {"type": "ephemeral"},
                }
                stream = client.messages.create(
                    model="claude-sonnet-4-5",
                    max_tokens=8192,
                    system=[cached],
                    messages=messages,
                    stream=True,
                )
                for event in stream:
                    if event.type == "content_block_delta" and event.delta.type == "text_delta":
                        parts.append(event.delta.text)
            turns += 1
            text = "".join(parts)
            if "<attempt_completion>" in text:
                break
            messages.append({"role": "assistant", "content": text})
            messages.append({"role": "user", "content": TOOL_RESULT})
    finally:
        client.close()
    return turns


async def _with_servers(count: int, then: Any) -> int:
    """Start `count` stdio workspace servers with the bare MCP client (initialize, list tools),
    all at once, then run `then()`: the floor of the first request with stdio servers."""
    import sys

    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "runner.workspace", "--root", "."]
    )
    done = anyio.Event()

    async def serve(*, task_status: Any) -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            task_status.started()
            await done.wait()

    async with anyio.create_task_group() as group:
        async with anyio.create_task_group() as starting:
            for _ in range(count):
                starting.start_soon(group.start, serve)
        try:
            return int(await then())
        finally:
            done.set()


async def _run(wire: str, system: str, max_turns: int, concurrent: int) -> int:
    """`concurrent` loops on one client (the --jobs floor); the number of turns they made."""
    if wire == "openai":
        import openai

        client: Any = openai.AsyncOpenAI(max_retries=0)
        loop = _openai_loop
    else:
        import anthropic

        client = anthropic.AsyncAnthropic(max_retries=0)
        loop = _anthropic_loop
    try:
        turns = await asyncio.gather(*(loop(client, system, max_turns) for _ in range(concurrent)))
    finally:
        await client.close()
    return sum(turns)


def main() -> int:
    parser = argparse.ArgumentParser(description="bare SDK loop (benchmark floor)")
    parser.add_argument("--wire", choices=["openai", "anthropic"], default="openai")
    parser.add_argument("--system", type=Path, help="system prompt file (default: a short one)")
    parser.add_argument("--max-turns", type=int, default=10_000)
    parser.add_argument("--concurrent", type=int, default=1, help="loops at once, one client")
    parser.add_argument("--sync", action="store_true", help="the synchronous SDK client")
    parser.add_argument(
        "--mcp-servers", type=int, default=0, help="stdio servers to start first (bare MCP client)"
    )
    args = parser.parse_args()
    system = args.system.read_text(encoding="utf-8") if args.system else "You are an agent."
    if args.sync:
        turns = _sync_loop(args.wire, system, args.max_turns)
    elif args.mcp_servers:
        run = lambda: _run(args.wire, system, args.max_turns, args.concurrent)  # noqa: E731
        turns = asyncio.run(_with_servers(args.mcp_servers, run))
    else:
        turns = asyncio.run(_run(args.wire, system, args.max_turns, args.concurrent))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"turns": turns, "peak_rss_kib": peak, "pid": os.getpid()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
