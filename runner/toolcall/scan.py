"""Finding XML tool calls in a reply: where each call is and its raw parameter values.

The rules are documented in runner.toolcall; this module finds offsets and raw text only, and
knows nothing of schemas beyond each tool's parameter names. Every search is `str.find` or an
anchored regex match, and value-end searches are remembered (see `_ValueEnds`), so a reply is
scanned in time linear in its length, however many calls it holds.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field

__all__ = ["RawCall", "find_calls", "strip_one_newline"]

_ANY_OPEN_TAG = re.compile(r"<([^\s<>/]+)>")
_TAG_AHEAD = re.compile(r"\s*<(/?)([^\s<>/]+)>")
_CUT_AHEAD = re.compile(r"\s*(?:<[^\s<>]*)?\Z")
_CALL_LAYOUT_AHEAD = re.compile(r"[ \t]*\r?\n[ \t]*<[^\s<>/]+>")
_SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:__?[a-z0-9]+)+")
_SNIPPET = 60


@dataclass(frozen=True)
class RawCall:
    """A call found in the reply, before its values are coerced."""

    tool: str
    """The tag name the model used."""
    start: int
    """Offset of `<tool>`."""
    end: int
    """Offset just after `</tool>` (the end of the reply when cut off)."""
    known: bool = True
    """False for an attempted call of a tool that does not exist."""
    cut_off: bool = False
    """The reply ended inside the call."""
    arguments: dict[str, str] = field(default_factory=dict)
    """Parameter name to raw value, one leading and one trailing newline dropped."""
    problems: list[str] = field(default_factory=list)
    """Shape problems (stray text, an unclosed or repeated parameter), for the model."""


def find_calls(text: str, params_of: Mapping[str, Collection[str]]) -> Iterator[RawCall]:
    """The calls in `text`, in order; `params_of` maps each known tool to its parameter names."""
    scan = 0
    ends = _ValueEnds(text)
    looks_like_tool: dict[str, bool] = {}
    while (tag := _ANY_OPEN_TAG.search(text, scan)) is not None:
        name = tag.group(1)
        if name in params_of:
            found = _known_call(text, tag, params_of, ends)
        else:
            found = _unknown_call(text, tag, params_of, looks_like_tool)
        if found is None:
            scan = tag.end()
            continue
        yield found
        scan = found.end


def strip_one_newline(value: str) -> str:
    """Drop one leading and one trailing newline (`\\n` or `\\r\\n`), keeping all else."""
    if value.startswith("\r\n"):
        value = value[2:]
    elif value.startswith("\n"):
        value = value[1:]
    if value.endswith("\r\n"):
        return value[:-2]
    return value[:-1] if value.endswith("\n") else value


def _known_call(
    text: str, tag: re.Match[str], params_of: Mapping[str, Collection[str]], ends: _ValueEnds
) -> RawCall | None:
    name, start = tag.group(1), tag.start()
    close, params = f"</{name}>", params_of[name]
    ahead = _TAG_AHEAD.match(text, tag.end())
    if ahead is None:
        return _cut_off(text, name, start) if _CUT_AHEAD.match(text, tag.end()) else None
    if not _opens_call(text, tag, ahead, params, params_of):
        return None
    arguments: dict[str, str] = {}
    problems: list[str] = []
    pos = tag.end()
    while True:
        ahead = _TAG_AHEAD.match(text, pos)
        if ahead is not None and ahead.group(1) and ahead.group(2) == name:
            return RawCall(name, start, ahead.end(), arguments=arguments, problems=problems)
        if ahead is None and _CUT_AHEAD.match(text, pos):
            return _cut_off(text, name, start)
        if ahead is None or ahead.group(1):
            close_at = text.find(close, pos)
            if close_at < 0:
                return _cut_off(text, name, start)
            problems.append(f"Text outside any parameter tag: {_snip(text[pos:close_at])}.")
            pos = close_at
            continue
        param = ahead.group(2)
        value_end = ends.find(ahead.end(), param, params, close)
        if value_end < 0:
            close_at = text.find(close, pos)
            if close_at < 0:
                return _cut_off(text, name, start)
            problems.append(f"Parameter <{param}> is not closed: write </{param}> after its value.")
            pos = close_at
            continue
        if param in arguments:
            problems.append(f"Parameter <{param}> is given twice; give it once.")
        arguments[param] = strip_one_newline(text[ahead.end() : value_end])
        pos = value_end + len(param) + 3


def _opens_call(
    text: str,
    tag: re.Match[str],
    ahead: re.Match[str],
    params: Collection[str],
    params_of: Mapping[str, Collection[str]],
) -> bool:
    """Whether `<tool>` starts a call, judged by the tag that follows it."""
    closing, next_name = ahead.groups()
    if closing:
        return next_name == tag.group(1)
    if next_name in params:
        return True
    # An unknown first parameter counts only in the call layout (tags on lines of their own),
    # so that a tool named like an HTML element (`time`) does not turn markup into a call.
    return next_name not in params_of and _in_call_layout(text, tag)


class _ValueEnds:
    """Finds where values end, remembering each search.

    Positions only move forward through a reply, so the first `</param>` that qualifies at or
    after one start is also the first at or after any later start up to it; without this, a
    reply of many calls with an unknown parameter would rescan the rest of the reply per call.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._searches: dict[tuple[str, str, bool], tuple[int, int]] = {}

    def find(self, start: int, param: str, params: Collection[str], tool_close: str) -> int:
        """Offset of the `</param>` that ends the value opened at `start`, or -1.

        Best is a `</param>` followed by a known parameter or the tool's closing tag; failing
        that, one followed by any opening tag (an unknown parameter); failing that, the first
        before the tool's closing tag (stray text follows, to be reported).
        """
        at = self._first(start, param, params, tool_close, strict=True)
        if at < 0:
            at = self._first(start, param, params, tool_close, strict=False)
        if at < 0:
            tool_end = self._text.find(tool_close, start)
            at = self._text.find(f"</{param}>", start, tool_end) if tool_end >= 0 else -1
        return at

    def _first(
        self, start: int, param: str, params: Collection[str], tool_close: str, strict: bool
    ) -> int:
        key = (param, tool_close, strict)
        if (seen := self._searches.get(key)) is not None:
            searched_from, found = seen
            if searched_from <= start and (found < 0 or start <= found):
                return found
        found = self._scan(start, param, params, tool_close, strict)
        self._searches[key] = (start, found)
        return found

    def _scan(
        self, start: int, param: str, params: Collection[str], tool_close: str, strict: bool
    ) -> int:
        close = f"</{param}>"
        at = self._text.find(close, start)
        while at >= 0:
            ahead = _TAG_AHEAD.match(self._text, at + len(close))
            if ahead is not None:
                closing, next_name = ahead.groups()
                if not strict and not closing:
                    return at
                if strict and (
                    (closing and f"</{next_name}>" == tool_close)
                    or (not closing and next_name in params)
                ):
                    return at
            at = self._text.find(close, at + len(close))
        return -1


def _unknown_call(
    text: str,
    tag: re.Match[str],
    params_of: Mapping[str, Collection[str]],
    looks_like_tool: dict[str, bool],
) -> RawCall | None:
    """An attempted call of a tool that does not exist, or None when the tag is prose."""
    name = tag.group(1)
    if not _in_call_layout(text, tag):
        return None
    if name not in looks_like_tool:
        looks_like_tool[name] = bool(_SNAKE_CASE.fullmatch(name)) or bool(
            difflib.get_close_matches(name, list(params_of), n=1, cutoff=0.8)
        )
    if not looks_like_tool[name]:
        return None
    close = f"</{name}>"
    end = text.find(close, tag.end())
    end = len(text) if end < 0 else end + len(close)
    return RawCall(name, tag.start(), end, known=False)


def _in_call_layout(text: str, tag: re.Match[str]) -> bool:
    """`<tag>` alone at the start of its line, with another tag starting the next line."""
    at = tag.start()
    while at > 0 and text[at - 1] in " \t":
        at -= 1
    at_line_start = at == 0 or text[at - 1] == "\n"
    return at_line_start and _CALL_LAYOUT_AHEAD.match(text, tag.end()) is not None


def _cut_off(text: str, name: str, start: int) -> RawCall:
    return RawCall(name, start, len(text), cut_off=True)


def _snip(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= _SNIPPET else text[:_SNIPPET] + "...")
