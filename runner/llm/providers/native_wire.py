"""Native tool calls on the wire: the tools, the messages and the streamed calls of OpenAI's Chat
Completions and Anthropic's Messages API (DESIGN section 16). Plain dicts: no SDK.

Tool names go out mapped (`ToolNames`) and come back mapped to the runner's names.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.llm.base import Message
from runner.llm.native import NativeCall, NativeTools, ToolNames
from runner.toolcall import lean_schema

__all__ = [
    "AnthropicCalls",
    "OpenAICalls",
    "anthropic_messages",
    "anthropic_tools",
    "openai_messages",
    "openai_tools",
]


def _schema(spec_schema: dict[str, Any]) -> dict[str, Any]:
    """An object schema, as both APIs require for a tool's parameters."""
    schema = dict(lean_schema(spec_schema or {}))
    schema.setdefault("type", "object")
    if schema.get("type") == "object":
        schema.setdefault("properties", {})
    return schema


def openai_tools(tools: NativeTools, names: ToolNames) -> dict[str, Any]:
    """The `tools` and `tool_choice` fields of a Chat Completions body."""
    return {
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": names.wire(spec.name),
                    "description": spec.description,
                    "parameters": _schema(spec.input_schema),
                },
            }
            for spec in tools.specs
        ],
        "tool_choice": tools.choice,
    }


def anthropic_tools(tools: NativeTools, names: ToolNames) -> dict[str, Any]:
    """The `tools` and `tool_choice` fields of a Messages body."""
    return {
        "tools": [
            {
                "name": names.wire(spec.name),
                "description": spec.description,
                "input_schema": _schema(spec.input_schema),
            }
            for spec in tools.specs
        ],
        "tool_choice": {"type": tools.choice},
    }


def openai_messages(
    system: str, messages: Sequence[Message], names: ToolNames
) -> list[dict[str, Any]]:
    """System, then each message; results become `tool` messages before the user's text."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for message in messages:
        if message.calls:
            wire.append(
                {
                    "role": "assistant",
                    "content": message.content or None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": names.wire(call.name),
                                "arguments": call.arguments,
                            },
                        }
                        for call in message.calls
                    ],
                }
            )
            continue
        for result in message.results:
            wire.append({"role": "tool", "tool_call_id": result.id, "content": _text(result)})
        if message.content or not message.results:
            wire.append(message.wire)
    return wire


def anthropic_messages(messages: Sequence[Message], names: ToolNames) -> list[dict[str, Any]]:
    """Each message; calls become `tool_use` blocks, results `tool_result` blocks. Consecutive
    messages of one role (a notice after tool results) become one, as the API expects."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        blocks = _anthropic_blocks(message, names)
        if wire and wire[-1]["role"] == message.role:
            wire[-1]["content"] = [*wire[-1]["content"], *blocks]
        else:
            wire.append({"role": message.role, "content": blocks})
    return wire


def _anthropic_blocks(message: Message, names: ToolNames) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [
        {
            "type": "tool_result",
            "tool_use_id": result.id,
            "content": _text(result),
            **({"is_error": True} if result.is_error else {}),
        }
        for result in message.results
    ]
    # The API refuses empty text blocks, and messages with no content at all.
    if message.content or not (message.calls or message.results):
        blocks.append({"type": "text", "text": message.content or "(no text)"})
    blocks += [
        {
            "type": "tool_use",
            "id": call.id,
            "name": names.wire(call.name),
            "input": _input(call.arguments),
        }
        for call in message.calls
    ]
    return blocks


def _text(result: Any) -> str:
    return str(result.content) or "(no output)"


def _input(arguments: str) -> dict[str, Any]:
    """A call's arguments as the object Anthropic requires; malformed ones (already answered
    with an error) go back as an empty object."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _new_id() -> str:
    return "call_" + secrets.token_hex(12)


def _assembled(partials: dict[int, _Partial], names: ToolNames) -> tuple[NativeCall, ...]:
    """The calls in index order, each with an id of its own: a missing or repeated id (some
    local servers send none, or the same for every call) gets a new one, since results are
    matched to calls by id."""
    seen: set[str] = set()
    calls = []
    for _, partial in sorted(partials.items()):
        call_id = partial.id if partial.id and partial.id not in seen else _new_id()
        seen.add(call_id)
        arguments = "".join(partial.arguments) or "{}"
        calls.append(NativeCall(call_id, names.runner(partial.name), arguments))
    return tuple(calls)


@dataclass
class _Partial:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class OpenAICalls:
    """Assembles the streamed `tool_calls` deltas of one Chat Completions reply: keyed by their
    `index`, the id and name taken when they come, the arguments concatenated."""

    def __init__(self, tools: NativeTools) -> None:
        self.tools = tools
        self.names = tools.names()
        self._calls: dict[int, _Partial] = {}

    def feed(self, deltas: Any) -> None:
        for delta in deltas or ():
            index = getattr(delta, "index", None)
            partial = self._calls.setdefault(
                index if isinstance(index, int) else len(self._calls), _Partial()
            )
            partial.id = partial.id or (getattr(delta, "id", None) or "")
            function = getattr(delta, "function", None)
            name = getattr(function, "name", None) or ""
            # Most servers send the name once; some repeat it in every delta, few split it.
            if name and name != partial.name:
                partial.name += name
            piece = getattr(function, "arguments", None)
            if piece and not isinstance(piece, str):
                piece = json.dumps(piece)  # some compatible servers send an object, not its JSON
            if piece:
                partial.arguments.append(piece)

    def calls(self) -> tuple[NativeCall, ...]:
        return _assembled(self._calls, self.names)


class AnthropicCalls:
    """Assembles the `tool_use` blocks of one streamed Messages reply (`input_json_delta`)."""

    def __init__(self, tools: NativeTools) -> None:
        self.tools = tools
        self.names = tools.names()
        self._calls: dict[int, _Partial] = {}

    def feed(self, event: Any) -> None:
        """A `content_block_start` or `content_block_delta` event."""
        block: Any = getattr(event, "content_block", None)
        if event.type == "content_block_start" and getattr(block, "type", None) == "tool_use":
            self._calls[event.index] = _Partial(str(block.id or ""), str(block.name or ""))
        delta: Any = getattr(event, "delta", None)
        partial = self._calls.get(event.index)
        if partial is not None and getattr(delta, "type", None) == "input_json_delta":
            partial.arguments.append(delta.partial_json or "")

    def calls(self) -> tuple[NativeCall, ...]:
        return _assembled(self._calls, self.names)
