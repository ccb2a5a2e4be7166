"""Native tool calls checked like XML ones (DESIGN section 16): the JSON arguments a model sent
through the provider's tool API become a `ToolCall` (values coerced and validated by the tool's
schema, as in xml mode) or a `CallError` that names the tool and says what to fix.

Pure text: no SDK, no I/O.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection, Mapping
from typing import Any

from runner.toolcall.coerce import CoercionError, coerce_arguments, describe_schema
from runner.toolcall.reply import CallError, ToolCall
from runner.toolcall.spec import ToolSpec

__all__ = ["NATIVE_REMINDER", "native_call", "native_usage"]

NATIVE_REMINDER = (
    "Your reply contained no tool call. Every reply must call one of the tools you were given. "
    "If the task is done, or cannot be done, call attempt_completion with the final result and "
    "its status."
)
"""Sent back in native mode when a reply has neither a tool call nor a completion."""

_MAX_TOOLS_LISTED = 12


def native_call(
    call_id: str,
    name: str,
    arguments: str,
    tools: Mapping[str, ToolSpec],
    *,
    unlisted: Collection[str] = (),
) -> ToolCall | CallError:
    """Check one native call of `name` with JSON `arguments` against `tools` (attempt_completion
    included). Names in `unlisted` are calls too (the executor refuses them) but not offered."""
    spec = tools.get(name)
    if spec is None:
        return CallError(
            name, _unknown(name, [n for n in tools if n not in unlisted]), arguments, call_id
        )
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError as exc:
        problem = f"The arguments are not valid JSON ({exc.msg} at character {exc.pos})."
        return _error(spec, name, [problem], arguments, call_id)
    if not isinstance(value, dict):
        problem = f"The arguments must be a JSON object, not {type(value).__name__}."
        return _error(spec, name, [problem], arguments, call_id)
    schema = spec.input_schema
    properties = _properties(spec)
    extra = schema.get("additionalProperties", False)
    allows_extra = extra is True or isinstance(extra, dict)
    problems = [
        f"Unknown parameter {param!r}. Allowed parameters: {', '.join(properties) or 'none'}."
        for param in value
        if param not in properties and not allows_extra
    ]
    problems += [
        f"Missing required parameter {param!r} ({describe_schema(properties.get(p, {}), schema)})."
        for param in schema.get("required") or []
        if (p := param) not in value
    ]
    if problems:
        return _error(spec, name, problems, arguments, call_id)
    # Typed JSON values go through the same coercion as XML text: a string stays a string, any
    # other value is read back from its JSON (so "3" for an integer slot works too).
    raw = {k: v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}
    try:
        coerced = coerce_arguments(raw, schema)
    except CoercionError as exc:
        return _error(spec, name, exc.problems, arguments, call_id)
    return ToolCall(name, coerced, arguments, call_id)


def native_usage(spec: ToolSpec) -> str:
    """The parameters of `spec`, one per line: `- path (string, required)`."""
    schema = spec.input_schema
    required = set(schema.get("required") or [])
    lines = [
        f"- {param} ({describe_schema(slot, schema)}, "
        f"{'required' if param in required else 'optional'})"
        for param, slot in _properties(spec).items()
    ]
    return "\n".join(lines) or "- (no parameters)"


def _error(
    spec: ToolSpec, name: str, problems: list[str], arguments: str, call_id: str
) -> CallError:
    lines = "\n".join(f"- {problem}" for problem in problems)
    message = f"The {name} call was not run:\n{lines}\nParameters:\n{native_usage(spec)}"
    return CallError(name, message, arguments, call_id)


def _unknown(name: str, names: list[str]) -> str:
    message = f"There is no tool named {name}, so the call was not run."
    names = sorted(names)
    if len(names) <= _MAX_TOOLS_LISTED:
        return f"{message} Available tools: {', '.join(names)}."
    nearest = difflib.get_close_matches(name, names, n=5, cutoff=0.4)
    return message + (f" Nearest: {', '.join(nearest)}." if nearest else "")


def _properties(spec: ToolSpec) -> dict[str, Any]:
    properties = spec.input_schema.get("properties")
    return properties if isinstance(properties, dict) else {}
