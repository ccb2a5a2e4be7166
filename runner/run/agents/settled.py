"""Resuming a session that was cut off while its sub-agents ran (DESIGN section 13).

The parent's last reply called `sub_agent`, and the process ended before the results came back
(a SIGKILL, a lost runner). Its children's logs lie beside it: a child that finished gives its
result as it was, never run again; one that was cut off, or never started, gives an error result
saying so. The results go first in the resumed session's user message, in call order.
"""

from __future__ import annotations

from typing import Any

from runner.run.agents.tool import SUB_AGENT
from runner.sessionlog import SessionRecord, children_of
from runner.toolcall import ToolCall, ToolResult, ToolSpec, parse_reply, render_result

__all__ = ["settled_agent_calls"]


def settled_agent_calls(record: SessionRecord) -> str:
    """The results of the last reply's sub_agent calls when the log ends on that reply, else ''."""
    spec = _sub_agent_spec(record.header)
    last = _last_message(record)
    if spec is None or last is None or last.get("role") != "assistant":
        return ""
    calls = [
        item
        for item in parse_reply(str(last.get("content", "")), {SUB_AGENT: spec}).items
        if isinstance(item, ToolCall)
    ]
    if not calls:
        return ""
    turn = last.get("turn")
    started = {
        int(child.header["parent_call"]["index"]): child
        for child in children_of(record)
        if (child.header.get("parent_call") or {}).get("turn") == turn
    }
    blocks = []
    for index, call in enumerate(calls):
        name = str(call.arguments.get("agent", ""))
        blocks.append(render_result(SUB_AGENT, _result(name, started.get(index))))
    return "\n\n".join(blocks)


def _result(name: str, child: SessionRecord | None) -> ToolResult:
    if child is None:
        return ToolResult(
            f"Sub-agent {name!r} did not run: the previous run was cut off before it started.",
            is_error=True,
        )
    end = child.end
    if end is None:
        return ToolResult(
            f"Sub-agent {name!r} was interrupted (session {child.session_id}): the previous run "
            "was cut off while it worked, so it has no result. Files it was changing may be "
            "partly written; check them before you rely on them.",
            is_error=True,
        )
    if end.get("status") == "passed":
        return ToolResult(str(end.get("result") or ""))
    return ToolResult(
        f"Sub-agent {name!r} ended as {end.get('status')} (session {child.session_id}): "
        f"{end.get('reason') or 'no reason recorded'}",
        is_error=True,
    )


def _last_message(record: SessionRecord) -> dict[str, Any] | None:
    messages = [e for e in record.events if e.get("type") == "message"]
    return messages[-1] if messages else None


def _sub_agent_spec(header: dict[str, Any]) -> ToolSpec | None:
    for tool in header.get("tools") or []:
        if isinstance(tool, dict) and tool.get("name") == SUB_AGENT:
            return ToolSpec(
                name=SUB_AGENT,
                description=str(tool.get("description", "")),
                input_schema=dict(tool.get("input_schema") or {}),
            )
    return None
