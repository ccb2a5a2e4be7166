"""`{{param}}` placeholders in task text and `${VAR}` references in extensions."""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["ENV_REF", "PLACEHOLDER", "fill_params", "interpolate_env", "placeholders"]

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")
ENV_REF = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def placeholders(text: str) -> list[str]:
    """Names of the `{{name}}` placeholders in `text`, in order."""
    return [match.group(1) for match in PLACEHOLDER.finditer(text)]


def fill_params(text: str, params: Mapping[str, str]) -> str:
    """`text` with every `{{name}}` replaced; every name must be in `params`."""
    return PLACEHOLDER.sub(lambda m: params[m.group(1)], text)


class MissingVariable(KeyError):
    """A `${VAR}` whose variable is unset and has no default."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def interpolate_env(text: str, env: Mapping[str, str]) -> tuple[str, list[tuple[str, str]]]:
    """Expand `${VAR}` and `${VAR:-default}` (and `$$` to `$`).

    Returns the text and the (name, value) of each variable used, so that the caller can tell
    which values are secrets. Raises MissingVariable for an unset variable without a default.
    """
    pulled: list[tuple[str, str]] = []

    def expand(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, default = match.group(1), match.group(2)
        value = env.get(name)
        if value is None or (value == "" and default is not None):
            if default is None:
                raise MissingVariable(name)
            return default
        pulled.append((name, value))
        return value

    return ENV_REF.sub(expand, text), pulled
