"""A "did you mean" for a mistyped flag or command (DESIGN 20), from argparse's own names.

`SuggestingParser` is an `ArgumentParser` whose usage errors end with the closest known name:
`agent-runner rn` -> `did you mean 'run'?`; `run --max-turn 5` -> `did you mean
'--max-turns'?`. The names come from the parser (its commands' choices and option strings,
those of the command the line chose), compared with difflib; nothing is guessed beyond them.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

__all__ = ["SuggestingParser", "closest"]

_CHOICE = re.compile(r"invalid choice: '([^']{1,200})' \(choose from (.{1,2000})\)")
_QUOTED = re.compile(r"'([^']{1,200})'")
_UNRECOGNIZED = "unrecognized arguments: "


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known name nearest to `word`, or None when none is close."""
    found = difflib.get_close_matches(word, sorted(set(known)), n=1, cutoff=0.6)
    return found[0] if found else None


class SuggestingParser(argparse.ArgumentParser):
    """An ArgumentParser that adds "did you mean" to its errors (subparsers are made of it too)."""

    _argv: list[str] | None = None

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._argv is None:
            self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        hint = self._hint(message)
        super().error(f"{message} (did you mean {hint!r}?)" if hint else message)

    def _hint(self, message: str) -> str | None:
        match = _CHOICE.search(message)
        if match:
            return closest(match.group(1), _QUOTED.findall(match.group(2)))
        if message.startswith(_UNRECOGNIZED):
            options = _option_strings(self._chosen())
            for token in message[len(_UNRECOGNIZED) :].split():
                if token.startswith("-") and (near := closest(token.split("=")[0], options)):
                    return near
        return None

    def _chosen(self) -> argparse.ArgumentParser:
        """The deepest command the line named (`log export`), or this parser."""
        parser: argparse.ArgumentParser = self
        for token in self._argv or ():
            commands = _commands_of(parser)
            if token in commands:
                parser = commands[token]
        return parser


def _commands_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    return [name for action in parser._actions for name in action.option_strings]
