"""`agent-runner prompt TASK --stats` (DESIGN section 28): a task's first request by section and
by tool, each with its estimated tokens and its share of the whole."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from runner.llm import Message
from runner.prompt.accounting import RequestMeter, section_text, tokens_of, tool_json
from runner.prompt.catalogue import tool_entry
from runner.prompt.sections import Section
from runner.toolcall import ToolSpec

__all__ = ["prompt_stats", "stats_text"]


def prompt_stats(
    sections: Sequence[Section],
    tools: Sequence[ToolSpec],
    task_prompt: str,
    native_tools: Sequence[ToolSpec] | None = None,
    hidden: Iterable[str] = (),
    provider: str = "anthropic",
) -> dict[str, Any]:
    """The first request of a task, by section and by tool: each with its tokens and its share
    of the whole (`agent-runner prompt TASK --stats`). `tools` are the xml catalogue's entries
    (name and rendered text, see `runner.prompt.catalogue.tool_entry`) or, with `native_tools`,
    the request's tool list (measured in `provider`'s wire shape); `hidden`: deferred tools,
    listed by name only."""
    system = "".join(section_text(s) for s in sections)
    meter = RequestMeter(system.rstrip("\n") + "\n", sections, provider)
    request = meter.measure([Message("user", task_prompt)], native_tools)
    total = max(request.total, 1)

    def share(tokens: int) -> float:
        return round(tokens / total, 4)

    rows = [(s.title, tokens_of(len(section_text(s)))) for s in sections]
    offered = {spec.name for spec in tools}
    hidden = set(hidden)
    if native_tools is not None:
        per_tool = [(spec.name, tokens_of(len(tool_json(spec, provider)))) for spec in native_tools]
    else:
        per_tool = [
            (spec.name, tokens_of(len(tool_entry(spec, offered)) + 2))
            for spec in tools
            if spec.name not in hidden
        ]
    return {
        "mode": "native" if native_tools is not None else "xml",
        "total_tokens": request.total,
        "parts": request.as_json(),
        "sections": [{"title": t, "tokens": n, "share": share(n)} for t, n in rows],
        "messages": [
            {"role": "user", "tokens": request.messages, "share": share(request.messages)}
        ],
        "tools": [{"name": name, "tokens": n, "share": share(n)} for name, n in per_tool],
        "deferred_tools": sorted(hidden),
    }


def stats_text(stats: Mapping[str, Any]) -> str:
    """`prompt_stats` as a table for people."""
    lines = [
        f"First request ({stats['mode']} mode): about {stats['total_tokens']:,} tokens "
        "(estimated, about 4 characters a token)",
        "",
    ]
    parts = stats["parts"]
    for name, key in (("system", "system_tokens"), ("tools", "tools_tokens")):
        lines.append(f"  {name:<28} {parts[key]:>7,}")
    lines.append(f"  {'messages':<28} {parts['messages_tokens']:>7,}")
    lines += ["", "By section:"]
    for row in stats["sections"]:
        lines.append(f"  {row['title']:<28} {row['tokens']:>7,}  {row['share']:>6.1%}")
    for row in stats["messages"]:
        lines.append(f"  {'(task message)':<28} {row['tokens']:>7,}  {row['share']:>6.1%}")
    lines += ["", "By tool:"]
    for row in stats["tools"]:
        lines.append(f"  {row['name']:<28} {row['tokens']:>7,}  {row['share']:>6.1%}")
    if stats["deferred_tools"]:
        lines += ["", f"Deferred behind find_tools: {len(stats['deferred_tools'])} tools"]
    return "\n".join(lines) + "\n"
