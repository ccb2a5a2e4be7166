"""Replace secret values with `***` wherever text is written (DESIGN section 7b).

What counts as a secret is decided where values are collected (settings, task loader); this
module only masks. Two lengths matter:

- a secret of `SUBSTRING_LENGTH` (8) characters or more is masked wherever it occurs, also
  inside longer words, and also in its JSON-escaped spelling (`a\\"b`, `\\u00e9`), so a tool
  result that quotes it as JSON text is masked too;
- a shorter one is masked only where it *stands alone*: not touching a letter, digit or `_` on
  either side (a regex word boundary, Unicode aware). So a 6-character PIN `123456` is masked in
  `pin=123456` and `"123456"`, never inside `91234567`. `short_secrets` lists them so the
  caller can warn once;
- a value under `MIN_LENGTH` (4) characters is never masked: `1` or `yes` would star out every
  count and word of every artifact, and offers no protection worth that.

Secrets are tried longest first, so a secret that contains another is masked whole.

Some secrets are only known while the run goes on (an OAuth access token an MCP server's
authorization server issued, DESIGN 26). `register_secrets` adds them to every redactor of the
process, those built before included: each checks a version counter before it masks.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = [
    "MASK",
    "MIN_LENGTH",
    "SUBSTRING_LENGTH",
    "Redactor",
    "looks_secret",
    "on_registered",
    "register_secrets",
    "short_secret_warnings",
]

MASK = "***"
MIN_LENGTH = 4
"""Shorter values are never masked."""
SUBSTRING_LENGTH = 8
"""Values at least this long are masked anywhere; shorter ones only where they stand alone."""

# DESIGN 7b. AUTHOR is left out (AUTHORIZATION is not): GIT_AUTHOR_NAME is a public identity,
# set on many CI machines.
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|AUTH(?!OR(?!I[SZ]))|CREDENTIAL|COOKIE", re.IGNORECASE
)


_RUNTIME: set[str] = set()
"""Secrets learnt while the run goes on; every Redactor masks them too."""
_RUNTIME_LOCK = threading.Lock()
_RUNTIME_VERSION = [0]
"""Bumped whenever `_RUNTIME` grows; each Redactor rebuilds its pattern when it changed."""
_LISTENERS: list[Callable[[list[str]], None]] = []


def on_registered(listener: Callable[[list[str]], None]) -> Callable[[], None]:
    """Call `listener` with each batch of secrets registered from now on (on GitHub Actions the
    run prints an `::add-mask::` line for each), until the function returned is called (a run
    in-process, as the tests make, must not leave its console listening)."""
    _LISTENERS.append(listener)

    def forget() -> None:
        with contextlib.suppress(ValueError):
            _LISTENERS.remove(listener)

    return forget


def register_secrets(values: Iterable[str]) -> None:
    """Mask `values` from now on in every redactor of this process (tokens obtained at run time,
    DESIGN 26); values under MIN_LENGTH characters are ignored, as everywhere."""
    fresh = {v for v in values if len(v) >= MIN_LENGTH} - _RUNTIME
    if not fresh:
        return
    with _RUNTIME_LOCK:
        _RUNTIME.update(fresh)
        _RUNTIME_VERSION[0] += 1
    for listener in list(_LISTENERS):
        listener(sorted(fresh))


def looks_secret(name: str) -> bool:
    """Whether a variable or header name says its value is a secret (`GITHUB_TOKEN`,
    `Authorization`, `X-Api-Key`); `MODE` or `PATH` do not."""
    return _SECRET_NAME.search(name) is not None


def _spellings(secret: str) -> list[str]:
    """The secret as written, and as JSON writes it inside a string (both ASCII modes)."""
    forms = [secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]]
    return list(dict.fromkeys(forms))


class Redactor:
    """Masks a fixed set of secret values in strings and in JSON-like structures."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._base = frozenset(s for s in secrets if len(s) >= MIN_LENGTH)
        self._version = -1
        self._build()

    def _build(self) -> None:
        """(Re)compile the patterns from the given secrets and the run-time ones."""
        with _RUNTIME_LOCK:
            version, values = _RUNTIME_VERSION[0], self._base | _RUNTIME
        self._version = version
        self._secrets: tuple[str, ...] = tuple(sorted(values, key=lambda s: (-len(s), s)))
        alternatives: list[tuple[int, str]] = []
        probes: set[str] = set()
        for secret in self._secrets:
            for form in _spellings(secret):
                probes.add(form)
                escaped = re.escape(form)
                if len(secret) < SUBSTRING_LENGTH:
                    escaped = rf"(?<!\w){escaped}(?!\w)"
                alternatives.append((len(form), escaped))
        # Longest first: the regex takes the first alternative that matches at a position.
        alternatives.sort(key=lambda item: -item[0])
        self._pattern = re.compile("|".join(a for _, a in alternatives)) if alternatives else None
        # Every spelling without the word boundaries: a JSON line's escapes may hide a boundary
        # (`\n1234` reads `n1234`), so the quick test of a line must not rely on them.
        self._probe = (
            re.compile("|".join(re.escape(p) for p in sorted(probes, key=len, reverse=True)))
            if probes
            else None
        )

    def _current(self) -> None:
        if self._version != _RUNTIME_VERSION[0]:
            self._build()

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every value masked, longest first (the run-time ones included)."""
        self._current()
        return self._secrets

    @property
    def short_secrets(self) -> tuple[str, ...]:
        """Values masked only where they stand alone (see the module docstring)."""
        return tuple(s for s in self.secrets if len(s) < SUBSTRING_LENGTH)

    def with_secrets(self, more: Iterable[str]) -> Redactor:
        """A redactor that also masks `more`."""
        return Redactor([*self._base, *more])

    def text(self, value: str) -> str:
        """`value` with every secret replaced by `***`."""
        self._current()
        if self._pattern is None:
            return value
        return self._pattern.sub(MASK, value)

    def may_be_in_json(self, text: str) -> bool:
        """Whether `text`, a JSON document, may hold a secret: False only when certainly not.

        One search of the finished text is cheaper than redacting each of its strings, and for
        most lines finds nothing; a line where it finds something is redacted with `data`.
        """
        self._current()
        return self._probe is not None and self._probe.search(text) is not None

    def data(self, value: Any, *, keys: bool = False) -> Any:
        """A copy of a JSON-like structure with every string value redacted.

        Keys are field names and stay as they are (masking one would lose the field), unless
        `keys` says the structure's keys were made by someone else (a model's tool arguments).
        Tuples come back as lists, as JSON would write them.
        """
        self._current()
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {
                (self.text(str(k)) if keys else k): self.data(v, keys=keys)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.data(v, keys=keys) for v in value]
        return value


def short_secret_warnings(named: Mapping[str, str]) -> list[str]:
    """One warning per secret shorter than SUBSTRING_LENGTH, naming where it came from (never
    the value): such a value is masked only where it stands alone, or not at all."""
    lines: dict[str, None] = {}
    for label, value in named.items():
        if len(value) < MIN_LENGTH:
            lines[
                f"warning: secret {label} is shorter than {MIN_LENGTH} characters and is not "
                "masked (too short to mask without garbling every artifact)"
            ] = None
        elif len(value) < SUBSTRING_LENGTH:
            lines[
                f"warning: secret {label} is shorter than {SUBSTRING_LENGTH} characters: it is "
                "masked only where it stands alone, not inside longer words"
            ] = None
    return list(lines)
