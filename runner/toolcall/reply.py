"""XML tool calls in a model's reply: parsing, argument coercion, rendering (DESIGN section 4).

Pure text: no SDK, no I/O. A call looks like this, anywhere in a reply (in prose, in a code fence):

    <read_file>
    <path>src/main.js</path>
    </read_file>

The reply is parsed by the known tools' names and their parameter names, not as generic XML:

- A call opens with `<tool>` for a known tool name, followed (after whitespace) by one of the
  tool's parameter tags or by `</tool>`; or by any other tag when `<tool>` stands alone on its
  line and the tag starts the next (so an unknown parameter is reported). Else it is prose.
- Inside a call, `<param>` opens a value. The value ends at the first `</param>` that is
  followed, after whitespace, by the opening tag of one of the tool's parameters or by `</tool>`.
  So values may hold HTML, XML and code, even `</param>` or `<other_param>` on their own; only
  `</param>` + whitespace + (`<known_param>` or `</tool>`) ends a value. Failing that, the first
  `</param>` followed by any opening tag ends it (an unknown parameter follows); failing that,
  the first `</param>` before `</tool>` (stray text follows). Each of these is reported.
- Exactly one leading and one trailing newline (`\\n` or `\\r\\n`) of a value are dropped; the
  rest of its whitespace is kept.
- A call whose `</tool>` never comes is cut off: it is not run, the reply is marked truncated,
  and a CallError asks for the call again, complete.
- A tag at line start that is not a known tool but looks like one (snake_case, or close to a
  known name), followed by a newline and another tag, is an attempted call of an unknown tool.
  Other unknown tags (`<div>`) are prose.
- Text outside calls is the reasoning; code fences left empty by removing calls are dropped.

Scanning (runner.toolcall.scan) uses `str.find` and anchored regex matches and remembers its
searches, so the work is linear in the reply's length.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.toolcall.coerce import CoercionError, coerce_arguments, coerce_value, describe_schema
from runner.toolcall.scan import RawCall, find_calls
from runner.toolcall.spec import ToolResult, ToolSpec

__all__ = [
    "REMINDER",
    "CallError",
    "CoercionError",
    "ParsedReply",
    "ToolCall",
    "coerce_arguments",
    "parse_reply",
    "render_call",
    "render_call_error",
    "render_call_errors",
    "render_result",
    "render_usage",
]


@dataclass(frozen=True)
class ToolCall:
    """A well-formed call of a known tool, with arguments coerced by its schema."""

    name: str
    """The tool name as the model wrote it (a key of the tools mapping)."""
    arguments: dict[str, Any]
    """Parameter name to coerced value."""
    raw: str = field(default="", compare=False)
    """The call's text in the reply, from `<tool>` to `</tool>`."""
    call_id: str = field(default="", compare=False)
    """Native mode: the provider's id of the call; empty in xml mode."""


@dataclass(frozen=True)
class CallError:
    """A call that cannot run; `message` tells the model what to fix."""

    tool: str
    """The tool name the model used (possibly unknown)."""
    message: str
    """Names the parameter and the expected form; sent back to the model."""
    raw: str = field(default="", compare=False)
    """The call's text in the reply."""
    call_id: str = field(default="", compare=False)
    """Native mode: the provider's id of the call; empty in xml mode."""


@dataclass(frozen=True)
class ParsedReply:
    """A model reply split into tool calls (and bad calls) and the reasoning around them."""

    items: list[ToolCall | CallError]
    """Calls and call errors, in order of appearance."""
    reasoning: str
    """The text outside calls."""
    truncated: bool = False
    """The reply was cut off inside a call."""

    @property
    def calls(self) -> list[ToolCall]:
        """The well-formed calls, in order."""
        return [item for item in self.items if isinstance(item, ToolCall)]

    @property
    def errors(self) -> list[CallError]:
        """The call errors, in order."""
        return [item for item in self.items if isinstance(item, CallError)]


REMINDER = (
    "Your reply contained no tool call. Every reply must call a tool, in the XML format shown "
    "under TOOL USE. If the task is done, or cannot be done, finish with attempt_completion:\n"
    "\n"
    "<attempt_completion>\n"
    "<result>\n"
    "What you did and what you found.\n"
    "</result>\n"
    "<status>success</status>\n"
    "</attempt_completion>"
)
"""Sent back when a reply has neither a tool call nor a completion."""

_EMPTY_FENCE = re.compile(r"^[ \t]*```[^\n`]*\n(?:[ \t]*\n)*[ \t]*```[ \t]*(?:\n|\Z)", re.M)
_MANY_BLANK_LINES = re.compile(r"\n{3,}")
_MAX_TOOLS_LISTED = 12


def parse_reply(
    text: str, tools: Mapping[str, ToolSpec], *, unlisted: Collection[str] = ()
) -> ParsedReply:
    """Split a reply into calls of `tools` (include ATTEMPT_COMPLETION there) and reasoning.

    Names in `unlisted` are parsed as calls but not named to the model as available tools (the
    policy denies them; the executor's error result says so).
    """
    listed = {name: spec for name, spec in tools.items() if name not in unlisted}
    items: list[ToolCall | CallError] = []
    prose: list[str] = []
    truncated = False
    prose_start = 0
    for found in find_calls(text, {name: _properties(spec) for name, spec in tools.items()}):
        prose.append(text[prose_start : found.start])
        prose_start = found.end
        raw = text[found.start : found.end]
        if found.cut_off:
            truncated = True
            items.append(CallError(found.tool, _cut_off_message(found.tool), raw))
        elif not found.known:
            items.append(CallError(found.tool, _unknown_tool_message(found.tool, listed), raw))
        else:
            items.append(_build(found.tool, tools[found.tool], found, raw))
    prose.append(text[prose_start:])
    return ParsedReply(items=items, reasoning=_reasoning("".join(prose)), truncated=truncated)


def _build(name: str, spec: ToolSpec, found: RawCall, raw: str) -> ToolCall | CallError:
    schema = spec.input_schema
    params = _properties(spec)
    extra = _allows_extra(schema)
    known = {k: v for k, v in found.arguments.items() if k in params or extra}
    allowed = ", ".join(f"<{p}>" for p in params) or "none"
    problems = list(found.problems)
    for param in [p for p in found.arguments if p not in known]:
        problems.append(f"Unknown parameter <{param}>. Allowed parameters: {allowed}.")
    for param in schema.get("required") or []:
        if param not in found.arguments:
            form = describe_schema(params.get(param, {}), schema)
            problems.append(f"Missing required parameter <{param}> ({form}).")
    if problems:
        # Report bad values too, so that one retry can fix everything.
        for param, text in known.items():
            try:
                coerce_value(text, params.get(param, {}), schema)
            except CoercionError as exc:
                problems.append(f"<{param}>: {exc}")
        return CallError(name, _call_problem(name, problems, render_usage(spec, name)), raw)
    try:
        arguments = coerce_arguments(known, schema)
    except CoercionError as exc:
        return CallError(name, _call_problem(name, exc.problems, render_usage(spec, name)), raw)
    return ToolCall(name, arguments, raw)


def _call_problem(name: str, problems: list[str], usage: str) -> str:
    lines = "\n".join(f"- {problem}" for problem in problems)
    return f"The {name} call was not run:\n{lines}\nUsage:\n{usage}"


def _cut_off_message(name: str) -> str:
    return (
        f"Your reply was cut off inside this {name} call, so it was not run. Send the call "
        "again, complete: make it shorter, or split the work into several smaller calls."
    )


def _unknown_tool_message(name: str, tools: Mapping[str, ToolSpec]) -> str:
    names = sorted(tools)
    message = f"There is no tool named {name}, so the call was not run."
    if len(names) <= _MAX_TOOLS_LISTED:
        return f"{message} Available tools: {', '.join(names)}."
    nearest = difflib.get_close_matches(name, names, n=5, cutoff=0.4)
    hint = f" Nearest: {', '.join(nearest)}." if nearest else ""
    return f"{message}{hint} All {len(names)} tools are listed under TOOLS."


def _properties(spec: ToolSpec) -> dict[str, Any]:
    properties = spec.input_schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def _allows_extra(schema: Mapping[str, Any]) -> bool:
    extra = schema.get("additionalProperties", False)
    return extra is True or isinstance(extra, dict)


def _reasoning(prose: str) -> str:
    prose = _EMPTY_FENCE.sub("", prose)
    return _MANY_BLANK_LINES.sub("\n\n", prose).strip()


def render_call(call: ToolCall, spec: ToolSpec | None = None) -> str:
    """The XML form of `call`, which parses back to an equal call.

    Strings are written as-is, other values as compact JSON; a string that its slot would not
    keep as that string (an untyped slot reads `123` as a number) is written as a JSON string.
    A value holding a newline gets one newline after its opening and before its closing tag,
    which the parser drops again. The one value that cannot round-trip is a string holding
    `</param>`, whitespace, then `<known_param>` or `</tool>`: that sequence ends a value.
    """
    schema = spec.input_schema if spec is not None else {}
    properties = schema.get("properties") or {}
    order = [p for p in properties if p in call.arguments]
    order += [p for p in call.arguments if p not in properties]
    lines = [f"<{call.name}>"]
    for param in order:
        slot = properties.get(param) if spec is not None else None
        value = _render_value(call.arguments[param], slot, schema)
        lines.append(f"<{param}>{value}</{param}>")
    lines.append(f"</{call.name}>")
    return "\n".join(lines)


def _render_value(value: Any, slot: Mapping[str, Any] | None, root: Mapping[str, Any]) -> str:
    if isinstance(value, str):
        text = value
        if slot is not None and not _kept_as_is(value, slot, root):
            text = json.dumps(value, ensure_ascii=False)
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if "\n" not in text:
        return text
    # A trailing "\r" plus the added "\n" would read as one "\r\n" newline; keep the "\r".
    return "\n" + text + ("\r\n" if text.endswith("\r") else "\n")


def _kept_as_is(value: str, slot: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    try:
        coerced = coerce_value(value, slot, root)
    except CoercionError:
        return True
    return isinstance(coerced, str) and coerced == value


def render_usage(spec: ToolSpec, name: str | None = None) -> str:
    """The call's shape with each parameter's form, e.g. `<path>string, required</path>`."""
    tool = name or spec.name
    schema = spec.input_schema
    required = set(schema.get("required") or [])
    lines = [f"<{tool}>"]
    for param, slot in _properties(spec).items():
        need = "required" if param in required else "optional"
        lines.append(f"<{param}>{describe_schema(slot, schema)}, {need}</{param}>")
    lines.append(f"</{tool}>")
    return "\n".join(lines)


def render_result(call_name: str, result: ToolResult) -> str:
    """The text fed back to the model for one call's result."""
    kind = "Error" if result.is_error else "Result"
    return f"[{call_name}] {kind}:\n{result.text if result.text else '(no output)'}"


def render_call_error(error: CallError) -> str:
    """The text fed back to the model for one call that could not run."""
    return render_result(error.tool, ToolResult(error.message, is_error=True))


def render_call_errors(errors: Sequence[CallError]) -> str:
    """Several call errors, one block each, in order."""
    return "\n\n".join(render_call_error(error) for error in errors)
