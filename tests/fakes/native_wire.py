"""Native tool calls in the fake model server's replies, in both wire formats.

A `Step` with `tool_calls` streams them after its text: OpenAI as `tool_calls` deltas (the id and
name in the first delta of each call, the arguments in pieces, keyed by `index`), Anthropic as
`tool_use` content blocks with `input_json_delta` pieces. The arguments are sent as given, so a
test can script malformed JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["FakeCall", "anthropic_blocks", "anthropic_events", "openai_chunks", "openai_message"]


@dataclass(frozen=True)
class FakeCall:
    """One native tool call the fake model makes."""

    name: str
    """The tool name on the wire (as the runner sent it in `tools`)."""
    arguments: str = "{}"
    """The arguments as JSON text, sent as is (malformed on purpose, if the test wants)."""
    id: str = ""
    """The call's id; empty = `call_<n>` (OpenAI) or `toolu_<n>` (Anthropic)."""
    pieces: int = 3
    """Pieces the arguments are streamed in."""


def call(name: str, arguments: dict[str, Any] | str | None = None, **fields: Any) -> FakeCall:
    """A call; a dict of arguments is sent as its JSON."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return FakeCall(name, text, **fields)


def _pieces(text: str, count: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, count)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _id(call: FakeCall, index: int, prefix: str) -> str:
    return call.id or f"{prefix}_{index}"


def openai_chunks(
    calls: tuple[FakeCall, ...], chunk: Callable[[list[dict[str, Any]]], bytes]
) -> Iterator[bytes]:
    """The `tool_calls` delta chunks of `calls`."""
    for index, fake in enumerate(calls):
        for number, piece in enumerate(_pieces(fake.arguments, fake.pieces)):
            function: dict[str, Any] = {"arguments": piece}
            delta: dict[str, Any] = {"index": index, "function": function}
            if number == 0:
                function["name"] = fake.name
                delta.update(id=_id(fake, index, "call"), type="function")
            yield chunk([{"index": 0, "delta": {"tool_calls": [delta]}, "finish_reason": None}])


def openai_message(calls: tuple[FakeCall, ...]) -> list[dict[str, Any]]:
    """The `tool_calls` of a whole (non-streamed) assistant message."""
    return [
        {
            "id": _id(fake, index, "call"),
            "type": "function",
            "function": {"name": fake.name, "arguments": fake.arguments},
        }
        for index, fake in enumerate(calls)
    ]


def anthropic_events(
    calls: tuple[FakeCall, ...], first_index: int, event: Callable[[str, dict[str, Any]], bytes]
) -> Iterator[bytes]:
    """The `tool_use` content blocks of `calls`, numbered from `first_index`."""
    for offset, fake in enumerate(calls):
        index = first_index + offset
        block = {"type": "tool_use", "id": _id(fake, offset, "toolu"), "name": fake.name}
        start = {
            "type": "content_block_start",
            "index": index,
            "content_block": {**block, "input": {}},
        }
        yield event("content_block_start", start)
        for piece in _pieces(fake.arguments, fake.pieces):
            delta = {"type": "input_json_delta", "partial_json": piece}
            yield event(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        yield event("content_block_stop", {"type": "content_block_stop", "index": index})


def anthropic_blocks(calls: tuple[FakeCall, ...]) -> list[dict[str, Any]]:
    """The `tool_use` blocks of a whole (non-streamed) message."""
    blocks = []
    for offset, fake in enumerate(calls):
        try:
            value = json.loads(fake.arguments)
        except ValueError:
            value = {}
        blocks.append(
            {
                "type": "tool_use",
                "id": _id(fake, offset, "toolu"),
                "name": fake.name,
                "input": value,
            }
        )
    return blocks
