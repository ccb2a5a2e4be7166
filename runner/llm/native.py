"""Native tool calls (DESIGN section 16): the calls and results a message carries, the tools a
request offers, and the reversible mapping of tool names the providers refuse.

The rest of the runner sees the runner's own tool names; only the wire
(`runner.llm.providers.native_wire`) sees the names a provider accepts.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from runner.toolcall import ToolSpec

__all__ = ["NativeCall", "NativeResult", "NativeTools", "ToolNames", "wire_name"]

_ALLOWED = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""What both providers accept: OpenAI's `^[a-zA-Z0-9_-]{1,64}$`; Anthropic's is the same set
(it allows up to 128 characters, but the shorter bound fits both)."""
_REFUSED = re.compile(r"[^a-zA-Z0-9_-]+")
_HASH_CHARS = 8


@dataclass(frozen=True)
class NativeCall:
    """One tool call of an assistant message, as the model made it through the tool API."""

    id: str
    """The provider's id of the call; its result goes back under this id."""
    name: str
    """The runner's name of the tool (mapped back from the wire name)."""
    arguments: str
    """The arguments as the model sent them: JSON text, possibly malformed."""

    def record(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class NativeResult:
    """The result of one native call, sent back in the next user message."""

    id: str
    """The id of the call it answers."""
    name: str
    """The runner's name of the tool that was called."""
    content: str
    """The text the model gets."""
    is_error: bool = False
    """The call failed or was not run."""

    def record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "content": self.content,
            "is_error": self.is_error,
        }


@dataclass(frozen=True)
class NativeTools:
    """The tools one native request offers; `choice="none"` forbids calls (the wind-down's
    final report) while still describing the tools that earlier messages called."""

    specs: tuple[ToolSpec, ...]
    """Tool specs by the runner's names, attempt_completion included."""
    choice: Literal["auto", "none"] = "auto"
    """Whether the model may call tools in this reply."""

    def names(self) -> ToolNames:
        return ToolNames.of(spec.name for spec in self.specs)


def wire_name(name: str) -> str:
    """`name` as a provider takes it: itself when allowed, else with refused characters made `_`,
    cut to fit, and a short hash of the original appended so that two names never meet."""
    if _ALLOWED.fullmatch(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:_HASH_CHARS]
    plain = _REFUSED.sub("_", name).strip("_")[: 64 - _HASH_CHARS - 1] or "tool"
    return f"{plain}_{digest}"


@dataclass(frozen=True)
class ToolNames:
    """Runner names to wire names and back, for one request's tools."""

    to_wire: Mapping[str, str]
    to_runner: Mapping[str, str]

    @classmethod
    def of(cls, names: Iterable[str]) -> ToolNames:
        forward = {name: wire_name(name) for name in names}
        return cls(forward, {wire: name for name, wire in forward.items()})

    def wire(self, name: str) -> str:
        """The wire name of a runner name (also one the request does not offer)."""
        return self.to_wire.get(name) or wire_name(name)

    def runner(self, wire: str) -> str:
        """The runner name a model's call names; an unknown name stays as it came."""
        return self.to_runner.get(wire, wire)


def calls_of(records: Sequence[Mapping[str, Any]] | None) -> tuple[NativeCall, ...]:
    """Calls from their log records (`{id, name, arguments}`)."""
    return tuple(
        NativeCall(str(r.get("id", "")), str(r.get("name", "")), str(r.get("arguments", "")))
        for r in records or ()
        if isinstance(r, Mapping)
    )


def results_of(records: Sequence[Mapping[str, Any]] | None) -> tuple[NativeResult, ...]:
    """Results from their log records (`{id, name, content, is_error}`)."""
    return tuple(
        NativeResult(
            str(r.get("id", "")),
            str(r.get("name", "")),
            str(r.get("content", "")),
            bool(r.get("is_error", False)),
        )
        for r in records or ()
        if isinstance(r, Mapping)
    )
