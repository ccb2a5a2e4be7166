"""Config files of the runner: reading one YAML file as a settings source, finding where a key is
set (`file:line:column`), and explaining a validation error in the user's words.

Kept apart from `runner.settings`, which builds the settings and alone reads `os.environ`.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from runner.errors import ConfigError

__all__ = ["YamlFileSource", "explain_settings", "locate_key"]


class YamlFileSource(PydanticBaseSettingsSource):
    """Settings from one YAML file; a missing optional file gives nothing."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path, required: bool) -> None:
        super().__init__(settings_cls)
        self._data = _read_config_file(path, required)

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._data)


def _read_config_file(path: Path, required: bool) -> dict[str, Any]:
    if not path.is_file():
        if required:
            raise ConfigError(f"{path}: config file not found (check the --config path)")
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: config is not valid YAML (fix the syntax)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1:1: config must be a mapping of settings (key: value)")
    return data


def locate_key(files: tuple[Path, ...], keys: tuple[str | int, ...]) -> str:
    """`file:line:column` of the first file (of `files`) whose YAML holds the key path `keys`."""
    for path in files:
        try:
            node = yaml.compose(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue
        found = None
        for key in keys:
            found = None
            if isinstance(node, yaml.MappingNode):
                found = next((k for k, _ in node.value if k.value == str(key)), None)
                node = next((v for k, v in node.value if k is found), None)
            if found is None:
                break
        if found is not None:
            return f"{path}:{found.start_mark.line + 1}:{found.start_mark.column + 1}"
    return str(files[0]) if files else "config"


# pydantic's wording names internal classes ("a valid dictionary or instance of RetrySettings").
_PLAIN_MESSAGES = {
    "model_type": "expected a mapping of settings (key: value)",
    "dict_type": "expected a mapping (key: value)",
    "list_type": "expected a list",
}


def explain_settings(exc: ValidationError, files: tuple[Path, ...], root: type[BaseModel]) -> str:
    """One line per problem of `exc`, each at the file and line that set it; never the input."""
    lines = []
    for error in exc.errors(include_input=False):
        loc = tuple(error["loc"])
        where = ".".join(str(part) for part in loc)
        place = locate_key(files, loc)
        # Never echo the rejected input: it may be a secret.
        message = _PLAIN_MESSAGES.get(error["type"], error["msg"])
        if error["type"] == "extra_forbidden":
            known = _known_settings(root, loc[:-1])
            close = difflib.get_close_matches(str(loc[-1]), known, n=1)
            message = "unknown setting" + (f" (did you mean {close[0]!r}?)" if close else "")
        if ":" in place:
            lines.append(f"{place}: setting {where}: {message}")
        else:
            lines.append(f"setting {where}: {message}")
    return "invalid settings (from flags, AGENT_RUNNER_* variables or config files):\n  " + (
        "\n  ".join(lines)
    )


def _known_settings(root: type[BaseModel], loc: tuple[str | int, ...]) -> list[str]:
    current: Any = root
    for part in loc:
        if get_origin(current) is dict:  # a key of a mapping (`governor.limits.openai:*`)
            current = get_args(current)[1]
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return []
        current = fields[part].annotation
    fields = getattr(current, "model_fields", None)
    return sorted(fields) if fields else []
