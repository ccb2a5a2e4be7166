"""Replace secret values with `***` wherever text is written (DESIGN section 7b)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["MASK", "Redactor"]

MASK = "***"
# Shorter values would mask ordinary words and digits everywhere ("1", "true"); a secret that
# short offers no protection worth that cost.
_MIN_SECRET_LENGTH = 4


class Redactor:
    """Masks a fixed set of secret values in strings and in JSON-like structures."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {s for s in secrets if s and len(s) >= _MIN_SECRET_LENGTH}
        self.secrets: tuple[str, ...] = tuple(sorted(values, key=len, reverse=True))
        # Longest first, so a secret that contains another is masked whole.
        self._pattern = (
            re.compile("|".join(re.escape(s) for s in self.secrets)) if self.secrets else None
        )
        # JSON writes such a secret as itself, so a search of the JSON text finds every copy.
        self._json_plain = all(
            char.isprintable() and char not in '"\\' for secret in self.secrets for char in secret
        )

    def with_secrets(self, more: Iterable[str]) -> Redactor:
        """A redactor that also masks `more`."""
        return Redactor([*self.secrets, *more])

    def text(self, value: str) -> str:
        """`value` with every secret replaced by `***`."""
        if self._pattern is None:
            return value
        return self._pattern.sub(MASK, value)

    def may_be_in_json(self, text: str) -> bool:
        """Whether `text`, a JSON document, may hold a secret: False only when certainly not.

        One search of the finished text is cheaper than redacting each of its strings, and for
        most lines finds nothing; a line where it finds something is redacted with `data`.
        """
        if self._pattern is None:
            return False
        return not self._json_plain or self._pattern.search(text) is not None

    def data(self, value: Any) -> Any:
        """A copy of a JSON-like structure with every string (keys too) redacted."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value
