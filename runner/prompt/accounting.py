"""What one request carries, in tokens (DESIGN section 28): the system prompt, the tool
definitions and the messages.

Providers count a request's input as one number, never by part, so the parts are estimated with
the runner's one estimator (about four characters a token, `runner.llm.CHARS_PER_TOKEN`). In xml
mode the tool definitions are the catalogue's sections of the system prompt (MCP SERVERS, TOOL
USE, TOOLS, DEFERRED TOOLS); in native mode they are the tools the request lists, as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from runner.llm import CHARS_PER_TOKEN, Message
from runner.prompt.sections import Section
from runner.toolcall import ToolSpec, lean_schema

__all__ = [
    "CATALOGUE_TITLES",
    "RequestMeter",
    "RequestTokens",
    "section_text",
    "tokens_of",
    "tool_json",
]

CATALOGUE_TITLES = frozenset({"MCP SERVERS", "TOOL USE", "TOOLS", "DEFERRED TOOLS"})
"""The sections that describe the tools: the tool definitions' part of an xml request."""


def tokens_of(chars: int) -> int:
    """The estimated tokens of `chars` characters (rounded up)."""
    return -(-chars // CHARS_PER_TOKEN)


def section_text(section: Section) -> str:
    """A section as `render_sections` writes it, with the blank line that follows it."""
    return f"# {section.title}\n\n{section.text}".rstrip() + "\n\n"


def tool_json(spec: ToolSpec, provider: str = "anthropic") -> str:
    """A tool's definition as a native request carries it: name, description and schema, in
    an OpenAI function wrapper for `provider` openai."""
    schema = lean_schema(spec.input_schema or {"type": "object"})
    if provider == "openai":
        function = {"name": spec.name, "description": spec.description, "parameters": schema}
        return json.dumps({"type": "function", "function": function}, ensure_ascii=False)
    body = {"name": spec.name, "description": spec.description, "input_schema": schema}
    return json.dumps(body, ensure_ascii=False)


@dataclass(frozen=True)
class RequestTokens:
    """The estimated tokens of one request, by part."""

    system: int = 0
    """The system prompt without its tool catalogue."""
    tools: int = 0
    """The tool definitions: the catalogue sections (xml) or the request's tool list (native)."""
    messages: int = 0
    """The conversation: the task, the replies, the tool results."""

    @property
    def total(self) -> int:
        return self.system + self.tools + self.messages

    def __add__(self, other: RequestTokens) -> RequestTokens:
        return RequestTokens(
            self.system + other.system, self.tools + other.tools, self.messages + other.messages
        )

    def as_json(self) -> dict[str, int]:
        """The `request` field of a `model_call` record and of summary.json."""
        return {
            "system_tokens": self.system,
            "tools_tokens": self.tools,
            "messages_tokens": self.messages,
        }


class RequestMeter:
    """Measures the requests of one session: its system prompt is fixed, its messages and (in
    native mode) its tool list change from turn to turn."""

    def __init__(
        self, system: str, sections: Iterable[Section] = (), provider: str = "anthropic"
    ) -> None:
        self.provider = provider
        """Whose wire shape native tool definitions are measured in (`tool_json`)."""
        catalogue = sum(len(section_text(s)) for s in sections if s.title in CATALOGUE_TITLES)
        self.catalogue_chars = min(catalogue, len(system))
        self.system_chars = len(system) - self.catalogue_chars

    def measure(
        self, messages: Sequence[Message], native_tools: Sequence[ToolSpec] | None = None
    ) -> RequestTokens:
        """The tokens of a request of `messages` (offering `native_tools` in native mode)."""
        tools_chars = self.catalogue_chars
        if native_tools is not None:
            tools_chars += sum(len(tool_json(spec, self.provider)) for spec in native_tools)
        return RequestTokens(
            system=tokens_of(self.system_chars),
            tools=tokens_of(tools_chars),
            messages=sum(tokens_of(m.chars) for m in messages),
        )
