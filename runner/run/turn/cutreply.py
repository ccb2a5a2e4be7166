"""Replies cut at the output limit (issue 18): the cut call is not run, and the model is told why.

A reply that stops at `max_tokens` (OpenAI's finish_reason `length`, Anthropic's stop_reason
`max_tokens`) inside a tool call carries half a call: the end of a file's content, or JSON that
never closes. That call is not run (the XML scanner already refuses an unclosed call; a native
call's cut JSON fails to parse); its error tells the model that its reply hit the output limit
and to go on in smaller steps. Calls complete before the cut run as usual.

A cut reply with no complete tool call at all (a local model that rambled until its window was
full: 5,000 tokens of nothing it can use) stays whole in the session log, but only its head and
tail stay in the context (`context_text`, DESIGN section 23): the next request would otherwise
carry all of it, and overflow a small window.

Limits: a reply whose only call was cut ran nothing, so it counts as a reply without a tool call
(three in a row end the task as failed, `runner.run.turn.loop.MAX_REPLIES_WITHOUT_TOOL`); every cut
reply is a turn like any other. Each cut is a `warning` event in the session log.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from runner.llm import Reply
from runner.toolcall import CallError, ToolCall

__all__ = ["CUT_KEEP_CHARS", "CUT_REASONS", "context_text", "cut_items", "cut_notice", "was_cut"]

CUT_REASONS = frozenset({"length", "max_tokens"})
"""Stop reasons that mean the reply hit its output limit (OpenAI, Anthropic)."""


CUT_KEEP_CHARS = 2000
"""Characters of a useless cut reply's head, and of its tail, that stay in the context."""


def context_text(reply: Reply, items: Sequence[ToolCall | CallError]) -> str | None:
    """What stays in the context of a reply cut at the output limit with no complete tool call:
    its head and tail with a note between. None when the reply is kept whole (not cut, a call
    to run, or short enough)."""
    text = reply.text
    if not was_cut(reply) or any(isinstance(item, ToolCall) for item in items):
        return None
    if len(text) <= 3 * CUT_KEEP_CHARS:
        return None
    left_out = len(text) - 2 * CUT_KEEP_CHARS
    return (
        f"{text[:CUT_KEEP_CHARS]}\n[... {left_out} characters of this reply, which was cut at the"
        f" output limit, are left out of the context ...]\n{text[-CUT_KEEP_CHARS:]}"
    )


def was_cut(reply: Reply) -> bool:
    """Whether the reply stopped at its output limit."""
    return reply.stop_reason in CUT_REASONS


def _cut_message(tool: str) -> str:
    return (
        f"Your reply reached the output token limit and was cut off inside this {tool} call, "
        "so the call was not run. Continue with smaller steps: send this call again "
        "with less in it (for a large file, write a first part, then add the rest in further "
        "calls), and keep each reply short."
    )


def cut_notice() -> str:
    """What a cut reply without any call is told instead of the usual reminder."""
    return (
        "Your reply reached the output token limit and was cut off before it called a tool. "
        "Continue with smaller steps: keep each reply short and call one tool at a time."
    )


def cut_items(
    reply: Reply,
    items: Sequence[ToolCall | CallError],
    *,
    last_cut: bool,
    events: object,
    turn: int,
) -> tuple[list[ToolCall | CallError], bool]:
    """`items` with the call cut by the output limit told so, and whether nothing else in the
    reply can run. `last_cut`: the last item is a call that never ended (the XML scanner's
    `truncated`; a native call whose JSON does not parse). `events` gets a `warning` if it has
    one (the session log writer does)."""
    found = list(items)
    if not was_cut(reply):
        return found, False
    warn = getattr(events, "warning", None)
    if not (last_cut and found and isinstance(found[-1], CallError)):
        if callable(warn):
            warn(f"turn {turn}: the reply was cut at the output limit ({reply.stop_reason})")
        return found, False
    cut = found[-1]
    assert isinstance(cut, CallError)
    found[-1] = dataclasses.replace(cut, message=_cut_message(cut.tool))  # keeps a native id
    if callable(warn):
        warn(
            f"turn {turn}: the reply was cut at the output limit ({reply.stop_reason}) inside its"
            f" {cut.tool} call; the call was not run and the model was asked for smaller steps"
        )
    return found, len(found) == 1
