"""MCP SERVERS, TOOL USE and TOOLS: the catalogue rendered from tool specs (DESIGN section 4)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from runner.prompt.deferred import FIND_TOOLS, ToolShelf
from runner.prompt.escape import inline_name, quoted_block
from runner.prompt.sections import Section
from runner.toolcall import ATTEMPT_COMPLETION, ToolSpec
from runner.workspace import DESCRIPTIONS

__all__ = [
    "catalogue_sections",
    "describe_type",
    "example_value",
    "found_text",
    "loaded_announcement",
    "tool_entry",
]

# A sentence ends at `.`, `!` or `?` and a space; the SEARCH/REPLACE layout keeps its own lines.
_SENTENCE_END = re.compile(r"(?<=[.!?])[ \n]+(?=[A-Z`])")

TOOL_USE = """\
Call a tool with XML in your reply, the tool as the outer tag and each parameter inside:

<read_file>
<path>src/main.py</path>
</read_file>

- Values are plain text, unescaped and unquoted; numbers, booleans, arrays and objects are JSON
  (`3`, `true`, `["a"]`).
- You may put several tool calls in one message; they run in order, and their results come in
  the next message.
- Every reply must call a tool (a few replies without one fail the task). Finish with
  attempt_completion; calls after it do not run."""


NATIVE_TOOL_USE = """\
Call tools through the tool-calling interface. You may call several in one message; they run in
order. Every reply must call a tool (a few replies without one fail the task). Finish with
attempt_completion; calls after it do not run."""


def catalogue_sections(
    servers: Mapping[str, Sequence[ToolSpec]],
    tools: Sequence[ToolSpec],
    native: bool = False,
    shelf: ToolShelf | None = None,
) -> list[Section]:
    """MCP SERVERS, TOOL USE and TOOLS; `tools` are exposed tools, attempt_completion is added.
    `native` (tool_mode: native): the tools go through the provider's API, so TOOL USE is short
    and the TOOLS section is left out. `shelf`: the deferred tools (DESIGN 28), listed by name
    and one line under DEFERRED TOOLS instead of in full; `find_tools` must be among `tools`."""
    shelf = shelf or ToolShelf()
    head = Section("MCP SERVERS", _servers_text(servers, shelf, native), "generated")
    deferred = [Section("DEFERRED TOOLS", shelf.listing(), "generated")] if shelf else []
    if native:
        return [head, Section("TOOL USE", NATIVE_TOOL_USE, "generated"), *deferred]
    every_tool = [*tools, ATTEMPT_COMPLETION]
    offered = {t.name for t in every_tool}
    entries = [tool_entry(t, offered) for t in every_tool if not shelf.hidden(t.name)]
    return [
        head,
        Section("TOOL USE", TOOL_USE, "generated"),
        Section("TOOLS", "\n\n".join(entries), "generated"),
        *deferred,
    ]


def found_text(found: Sequence[ToolSpec], query: str, native: bool, offered: set[str]) -> str:
    """What `find_tools` answers: the definitions it loaded (xml), or their names (native: the
    definitions come with the next request), or that nothing matched."""
    if not found:
        return (
            f"No deferred tool matches {query!r}. Try an exact name from DEFERRED TOOLS, or other "
            "words of what the tool does."
        )
    names = ", ".join(spec.name for spec in found)
    if native:
        return f"Loaded: {names}. Their definitions are in your tool list from now on."
    entries = "\n\n".join(tool_entry(spec, offered) for spec in found)
    return f"Loaded: {names}. Call them as shown:\n\n{entries}"


def loaded_announcement(
    shelf: ToolShelf, native: bool, offered: set[str], why: str = "The context was compacted"
) -> str:
    """After a compaction (or on resume), the tools loaded earlier: their definitions may have
    been cleared from the context."""
    text = found_text(shelf.loaded_specs(), "", native, offered)
    return f"[{why}; the tools you loaded with {FIND_TOOLS} stay loaded.] {text}"


def _servers_text(
    servers: Mapping[str, Sequence[ToolSpec]], shelf: ToolShelf, native: bool = False
) -> str:
    if not servers:
        return (
            "No MCP servers are connected, so the only tool is attempt_completion. "
            "(The tool catalogue is rendered without servers.)"
        )
    lines = ["These MCP servers provide your tools:", ""]
    for name, specs in servers.items():
        shown = [spec for spec in specs if spec.name not in shelf.deferred]
        names = ", ".join(inline_name(spec.name) for spec in shown)
        if native and shown:  # the request's tool list names them
            names = f"{len(shown)} tools"
        waiting = len(specs) - len(shown)
        if waiting:
            names = f"{names}; " if names else ""
            names += f"{waiting} more under DEFERRED TOOLS"
        lines.append(f"- {inline_name(name)}: {names or '(no tools)'}")
    return "\n".join(lines)


def tool_entry(spec: ToolSpec, offered: set[str]) -> str:
    """One tool in full: description, parameters and an example call (DESIGN 4, 28)."""
    schema = spec.input_schema or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    # Names, descriptions and schemas come from servers: none of it may open a section.
    about = _without_absent_tools(spec.description.strip(), offered)
    description = quoted_block(about) or "(none given)"
    lines = [f"## {inline_name(spec.name)}", description, "Parameters:"]
    if not properties:
        lines.append("- (none)")
    for name, prop in properties.items():
        need = "required" if name in required else "optional"
        about = " ".join(quoted_block(str(prop.get("description", ""))).split())
        kind = " ".join(describe_type(prop, schema).split())
        lines.append(f"- {inline_name(name)} ({need}, {kind})" + (f": {about}" if about else ""))
    # Optional parameters that carry `examples` are the ones a call usually needs (replace_in_file's
    # `diff`): an Example without them would teach a call that does nothing.
    example = {
        name: _as_text(example_value(prop, schema))
        for name, prop in properties.items()
        if name in required or prop.get("examples")
    }
    lines += ["Example:", _xml(spec.name, example)]
    return "\n".join(lines)


def _without_absent_tools(description: str, offered: set[str]) -> str:
    """`description` without the sentences that point at a built-in tool the task does not offer
    (write_to_file's "use replace_in_file" when that one is denied)."""
    absent = [name for name in DESCRIPTIONS if name not in offered]
    if not absent:
        return description
    mention = re.compile(r"\b(?:" + "|".join(absent) + r")\b")
    sentences = _SENTENCE_END.split(description)
    return " ".join(s for s in sentences if not mention.search(s)).strip()


def _xml(tool: str, values: Mapping[str, str]) -> str:
    inner = [f"<{name}>{value}</{name}>" for name, value in values.items()]
    return "\n".join([f"<{tool}>", *inner, f"</{tool}>"])


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _resolve(prop: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return target if isinstance(target, Mapping) else {}
    return prop


def describe_type(prop: Mapping[str, Any], root: Mapping[str, Any]) -> str:
    """A short human form of a property's schema: `string`, `integer or null`, `one of: a, b`."""
    prop = _resolve(prop, root)
    if "enum" in prop:
        return "one of: " + ", ".join(
            json.dumps(v) if not isinstance(v, str) else v for v in prop["enum"]
        )
    for key in ("anyOf", "oneOf"):
        if key in prop:
            return " or ".join(describe_type(option, root) for option in prop[key])
    kind = prop.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array" and isinstance(prop.get("items"), Mapping):
        return f"array of {describe_type(prop['items'], root)}"
    return str(kind) if kind else "any JSON value"


def example_value(prop: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    """A plausible value for a property, built from its schema."""
    prop = _resolve(prop, root)
    if "default" in prop and prop["default"] is not None:
        return prop["default"]
    if prop.get("enum"):
        return prop["enum"][0]
    if prop.get("examples"):
        return prop["examples"][0]
    for key in ("anyOf", "oneOf"):
        options = [o for o in prop.get(key, []) if _resolve(o, root).get("type") != "null"]
        if options:
            return example_value(options[0], root)
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "integer":
        return max(1, int(prop.get("minimum", 1)))
    if kind == "number":
        return float(prop.get("minimum", 1.5))
    if kind == "boolean":
        return True
    if kind == "array":
        item = prop.get("items")
        return [example_value(item, root)] if isinstance(item, Mapping) else []
    if kind == "object":
        props = prop.get("properties") or {}
        return {name: example_value(p, root) for name, p in props.items()}
    return _example_string(prop)


def _example_string(prop: Mapping[str, Any]) -> str:
    words = str(prop.get("description", "")).lower()
    # "The complete new content of the file." is what goes in a file, not a file's name.
    if "content" in words:
        return 'print("hello")'
    if "path" in words or "file" in words:
        return "src/main.py"
    if "command" in words:
        return "ls -la"
    if "regex" in words or "pattern" in words:
        return "TODO"
    return "text"
