"""GitHub Actions expressions (`${{ }}`) for the test runner of tests/e2e/actions.py: literals,
context paths, `!`, `==`/`!=` with GitHub's loose equality, `&&`/`||` yielding an operand, and
the functions workflows here use (status checks, toJSON, fromJSON, contains, startsWith, format).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Scope", "equal", "truthy"]

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|(?P<op>==|!=|<=|>=|&&|\|\||[!<>().,\[\]])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*|\*))"
)


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    while pos < len(text.rstrip()):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ValueError(f"cannot read expression at {text[pos:]!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match[kind]))
        pos = match.end()
    return tokens


def truthy(value: Any) -> bool:
    return value not in (None, False, "", 0)


def _loose(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _number(value: Any) -> float:
    if value is None or value is False:
        return 0.0
    if value is True:
        return 1.0
    try:
        return float(value) if str(value).strip() else 0.0
    except ValueError:
        return float("nan")


def equal(left: Any, right: Any) -> bool:
    """GitHub's `==`: strings without regard to case; values of different types as numbers."""
    if type(left) is type(right) or (isinstance(left, str) and isinstance(right, str)):
        return bool(_loose(left) == _loose(right))
    return _number(left) == _number(right)


class _Parser:
    def __init__(self, text: str, scope: Scope) -> None:
        self.tokens = _tokens(text)
        self.pos = 0
        self.scope = scope

    def peek(self) -> str:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> tuple[str, str]:
        token = self.tokens[self.pos]
        if expected is not None and token[1] != expected:
            raise ValueError(f"expected {expected!r}, got {token[1]!r}")
        self.pos += 1
        return token

    def parse(self) -> Any:
        value = self.or_()
        if self.pos != len(self.tokens):
            raise ValueError(f"trailing tokens: {self.tokens[self.pos :]}")
        return value

    def or_(self) -> Any:
        value = self.and_()
        while self.peek() == "||":
            self.take()
            right = self.and_()
            value = value if truthy(value) else right
        return value

    def and_(self) -> Any:
        value = self.unary()
        while self.peek() == "&&":
            self.take()
            right = self.unary()
            value = right if truthy(value) else value
        return value

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not truthy(self.unary())
        left = self.primary()
        if self.peek() in ("==", "!="):
            op = self.take()[1]
            right = self.primary()
            same = equal(left, right)
            return same if op == "==" else not same
        return left

    def primary(self) -> Any:
        kind, text = self.take()
        if text == "(":
            value = self.or_()
            self.take(")")
            return value
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text) if "." in text else int(text)
        if text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[text]
        if self.peek() == "(":
            self.take()
            args = []
            while self.peek() != ")":
                args.append(self.or_())
                if self.peek() == ",":
                    self.take()
            self.take(")")
            return self.scope.call(text, args)
        value = self.scope.contexts.get(text)
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                key = self.take()[1]
            else:
                key = self.or_()
                self.take("]")
            value = value.get(str(key)) if isinstance(value, dict) else None
        return value


@dataclass
class Scope:
    """What expressions see: the contexts, and whether the job (or action) has failed so far."""

    contexts: dict[str, Any]
    failed: bool = False

    def call(self, name: str, args: list[Any]) -> Any:
        functions = {
            "always": lambda: True,
            "success": lambda: not self.failed,
            "failure": lambda: self.failed,
            "cancelled": lambda: False,
            "toJSON": lambda v: json.dumps(v, indent=2),
            "fromJSON": json.loads,
            "contains": lambda a, b: _loose(b) in _loose(a),
            "startsWith": lambda a, b: str(a).lower().startswith(str(b).lower()),
            "format": lambda f, *a: re.sub(r"\{(\d+)\}", lambda m: str(a[int(m[1])]), f),
        }
        return functions[name](*args)

    def evaluate(self, text: str) -> Any:
        return _Parser(text, self).parse()

    def interpolate(self, text: Any) -> str:
        """A value with `${{ }}` parts replaced by their values, as GitHub writes them."""

        def value(match: re.Match[str]) -> str:
            result = self.evaluate(match[1])
            if result is None:
                return ""
            if isinstance(result, bool):
                return "true" if result else "false"
            return str(result)

        return re.sub(r"\$\{\{(.*?)\}\}", value, str(text), flags=re.S)

    def condition(self, text: Any) -> bool:
        if text is None:
            return not self.failed
        expr = str(text).strip()
        if expr.startswith("${{") and expr.endswith("}}"):
            expr = expr[3:-2]
        if not re.search(r"\b(success|failure|always|cancelled)\(", expr):
            expr = f"success() && ({expr})"
        return truthy(self.evaluate(expr))
