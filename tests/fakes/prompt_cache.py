"""The fake model server's model of Anthropic's prompt cache (DESIGN section 16).

A request's prompt is a sequence of blocks in the API's cache order: each tool, each system
block, then each content block of each message (a string content is one block). Each block
counts about a token per four characters of its JSON, `cache_control` left out. The blocks
marked `cache_control` are breakpoints: the prefix up to each is written to the cache. A later
request reads from the cache the longest prefix already written that ends at one of its blocks
within 20 blocks before one of its own breakpoints (the API's lookback); what lies between that
and its last breakpoint is a cache write; the rest is uncached input.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CacheUsage", "PromptCache", "prompt_blocks"]

LOOKBACK_BLOCKS = 20


@dataclass(frozen=True)
class CacheUsage:
    """What one request is billed for, as Anthropic reports it."""

    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int


def prompt_blocks(body: dict[str, Any]) -> list[tuple[Any, bool]]:
    """(block without its mark, marked?) for every block of the request, in cache order."""
    blocks: list[tuple[Any, bool]] = []

    def add(where: str, block: Any) -> None:
        marked = isinstance(block, dict) and "cache_control" in block
        plain = {k: v for k, v in block.items() if k != "cache_control"} if marked else block
        blocks.append(((where, plain), marked))

    for tool in body.get("tools") or []:
        add("tool", tool)
    system = body.get("system")
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system or []:
        add("system", block)
    for message in body.get("messages") or []:
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in parts:
            add(str(message.get("role")), block)
    return blocks


@dataclass
class PromptCache:
    """The prefixes written so far (shared by every request the server gets)."""

    written: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def usage(self, body: dict[str, Any]) -> CacheUsage:
        """Bill `body` against the cache, and write its marked prefixes."""
        blocks = prompt_blocks(body)
        digest = hashlib.sha256()
        ends: list[int] = []
        keys: list[str] = []
        total = 0
        for block, _ in blocks:
            text = json.dumps(block, sort_keys=True)
            total += max(1, len(text) // 4)
            digest.update(text.encode())
            ends.append(total)
            keys.append(digest.copy().hexdigest())
        marks = [index for index, (_, marked) in enumerate(blocks) if marked]
        if not marks:
            return CacheUsage(total, 0, 0)
        looked = {i for m in marks for i in range(max(0, m - LOOKBACK_BLOCKS + 1), m + 1)}
        with self.lock:
            hits = [ends[i] for i in looked if keys[i] in self.written]
            self.written.update(keys[m] for m in marks)
        read = max(hits, default=0)
        through = ends[marks[-1]]
        return CacheUsage(total - through, read, max(0, through - read))
