"""Rolling prompt-cache breakpoints for the Anthropic Messages API (DESIGN section 16).

Anthropic caches a request's prefix (tools, then system, then messages) up to each block marked
`cache_control`, at most four marks per request. A session resends its whole history every turn,
so the runner marks: the last tool (when tools are sent), the system prompt, and the latest user
messages with the marks left. Each turn the message marks move forward: the newest user message
gets one, and the one before keeps its mark, so this request reads from the cache exactly the
prefix the previous request wrote, and writes only what the last turn added. From the third turn
on most input tokens of a long session are cache reads (billed at a tenth of the input price; a
write costs 1.25 times it).

The messages are copied where marked: `Message.wire` is built once and shared across requests.

OpenAI caches prefixes on its own; a `prompt_cache_key` routes the requests of one prompt to the
same cache. The key is a digest of the system prompt and the first user message, which stay the
same for a whole session (compaction keeps the first message; `resume` continues the session),
so it is stable without the provider knowing the session, and holds no prompt text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

__all__ = [
    "EPHEMERAL",
    "MAX_BREAKPOINTS",
    "CacheMode",
    "prompt_cache_key",
    "sends_prompt_cache_key",
    "with_breakpoints",
]

CacheMode = Literal["rolling", "system", "off"]
"""`rolling`: tools, system and the latest user messages; `system`: tools and system only (every
turn pays the full input price for its history); `off`: no marks."""

MAX_BREAKPOINTS = 4
"""The most `cache_control` marks one request may carry (the API refuses more)."""
EPHEMERAL: Mapping[str, str] = {"type": "ephemeral"}
"""The mark: the default five-minute cache."""
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})
"""Block types that take no `cache_control`."""


def with_breakpoints(
    system: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] = (),
    mode: CacheMode = "rolling",
) -> tuple[list[dict[str, Any]], list[Mapping[str, Any]], list[dict[str, Any]]]:
    """(system blocks, messages, tools) for one request, with rolling `cache_control` marks:
    the last tool, the system prompt, then the latest user messages (newest first) until
    `MAX_BREAKPOINTS` marks are used (`mode` may leave the messages or everything unmarked).
    The inputs are not changed."""
    marking = mode != "off"
    marked_tools = [dict(tool) for tool in tools]
    if marked_tools and marking:
        marked_tools[-1]["cache_control"] = dict(EPHEMERAL)
    system_blocks: list[dict[str, Any]] = []
    if system:
        system_blocks.append({"type": "text", "text": system})
        if marking:
            system_blocks[0]["cache_control"] = dict(EPHEMERAL)
    used = int(bool(marked_tools)) + len(system_blocks)
    left = MAX_BREAKPOINTS - used if mode == "rolling" else 0
    out = list(messages)  # only the marked ones are copied: a turn resends every message
    for index in range(len(out) - 1, -1, -1):
        if left <= 0:
            break
        if out[index].get("role") != "user":
            continue
        content = _marked(out[index].get("content"))
        if content is not None:
            out[index] = {**out[index], "content": content}
            left -= 1
    return system_blocks, out, marked_tools


def _marked(content: Any) -> list[dict[str, Any]] | None:
    """`content` as blocks whose last one carries the mark; None when it cannot take one."""
    if isinstance(content, str):
        return (
            [{"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}]
            if content
            else None
        )
    if not isinstance(content, list) or not content:
        return None
    last = content[-1]
    if not isinstance(last, Mapping) or last.get("type") in _UNMARKABLE:
        return None
    if last.get("type") == "text" and not last.get("text"):
        return None
    return [*content[:-1], {**last, "cache_control": dict(EPHEMERAL)}]


def prompt_cache_key(system: str, first_message: str) -> str:
    """OpenAI's `prompt_cache_key` for a session: `agent-runner-` and 32 hex digits of a digest
    of its system prompt and first user message."""
    digest = hashlib.sha256(f"{system}\0{first_message}".encode()).hexdigest()
    return f"agent-runner-{digest[:32]}"


def sends_prompt_cache_key(setting: bool | None, base_url: str | None) -> bool:
    """Whether requests carry a `prompt_cache_key`: as `setting` says, or (None) only to OpenAI's
    own API, since some compatible servers refuse fields they do not know."""
    if setting is not None:
        return setting
    return base_url is None or urlsplit(base_url).hostname == "api.openai.com"
