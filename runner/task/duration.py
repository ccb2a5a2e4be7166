"""Durations in task files: `90`, `90s`, `20m`, `1h`, `1h30m` or `500ms`, as seconds.

Below the task models and the agent and hook models that all take durations, so that none of
them imports another for it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator

__all__ = ["Duration", "parse_duration"]

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_PLAIN_SECONDS = re.compile(r"\d+(?:\.\d+)?")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: Any) -> float:
    """Seconds from `90` (also as text), `90s`, `20m`, `1h`, `1h30m` or `500ms`."""
    if isinstance(value, bool):
        raise ValueError("expected a duration like 90s, 20m or 1h")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().replace(" ", "")
        if _PLAIN_SECONDS.fullmatch(text):
            text += "s"  # `--timeout 5` is seconds, as `timeout: 5` in a task file is
        parts = _DURATION_PART.findall(text)
        if not text or "".join(n + u for n, u in parts) != text:
            raise ValueError(f"{value!r} is not a duration; write it like 90s, 20m, 1h or 1h30m")
        seconds = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)
    else:
        raise ValueError("expected a duration like 90s, 20m or 1h")
    if seconds <= 0:
        raise ValueError("a duration must be more than zero")
    return seconds


Duration = Annotated[float, BeforeValidator(parse_duration)]
"""Seconds, written in a task file as `90s`, `20m`, `1h` or a plain number of seconds."""
