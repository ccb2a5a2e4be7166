"""Pydantic validation errors as task-file problems: plain words, one problem per value.

pydantic's own wording names internal classes ("a valid dictionary or instance of Limits") and
reports a value that fits no member of a union once per member (`params.a.str`, `.int`, ...).
"""

from __future__ import annotations

import difflib
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from runner.task.yamlsource import Path_

__all__ = ["REFERENCE_HINT", "explain_errors", "without_bad_keys"]

REFERENCE_HINT = "see docs/task-files.md"
_UNION_MEMBERS = {"str": "text", "int": "an integer", "float": "a number", "bool": "true/false"}
_NEEDED_KEYS = frozenset({"name", "prompt", "workdir", "params"})
"""Keys a task cannot be checked further without: the rest can be left out once reported."""

Model = TypeVar("Model", bound=BaseModel)

_PLAIN = {
    "model_type": "expected a mapping (key: value)",
    "model_attributes_type": "expected a mapping (key: value)",
    "dict_type": "expected a mapping (key: value)",
    "list_type": "expected a list",
}


def explain_errors(exc: ValidationError, model: type[BaseModel]) -> list[tuple[Path_, str, str]]:
    """(where, message, hint) per bad value, in pydantic's order."""
    grouped: dict[Path_, list[tuple[dict[str, Any], str | None]]] = {}
    for error in exc.errors(include_input=False):
        parts = tuple(error["loc"])
        member = parts[-1] if parts and parts[-1] in _UNION_MEMBERS else None
        loc = parts[:-1] if member else parts
        grouped.setdefault(loc, []).append((dict(error), str(member) if member else None))
    found = []
    for loc, errors in grouped.items():
        members = [m for _, m in errors if m]
        if len(errors) > 1 and len(members) == len(errors):
            words = [_UNION_MEMBERS[m] for m in members]
            choices = ", ".join(words[:-1]) + f" or {words[-1]}"
            found.append((loc, f"expected {choices}", REFERENCE_HINT))
            continue
        for detail, _ in errors:
            found.append((loc, *_explain(detail["type"], detail["msg"], loc, model)))
    return found


def without_bad_keys(
    data: dict[str, Any], exc: ValidationError, model: type[Model]
) -> Model | None:
    """`data` without the keys whose values were reported bad, so that the later checks
    (workdir, tools, skills, permission rules) still report their problems in the same run;
    None when too much is missing for that."""
    bad = {str(error["loc"][0]) for error in exc.errors() if error["loc"]}
    if not bad or bad & _NEEDED_KEYS:
        return None
    try:
        return model.model_validate({k: v for k, v in data.items() if k not in bad})
    except ValidationError:
        return None


def _explain(kind: str, msg: str, loc: Path_, model: type[BaseModel]) -> tuple[str, str]:
    field_name = str(loc[-1]) if loc else ""
    if kind == "extra_forbidden":
        known = _known_fields(model, loc[:-1])
        close = difflib.get_close_matches(field_name, known, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
        return "unknown key", hint
    if kind == "missing":
        if field_name == "prompt":
            return "required field is missing", "add `prompt:` with the task's first user message"
        return "required field is missing", f"add `{field_name}:`"
    if kind in _PLAIN:
        return _PLAIN[kind], REFERENCE_HINT
    if msg.startswith("Value error, "):
        msg = msg.removeprefix("Value error, ")
    return msg, REFERENCE_HINT


def _known_fields(model: type[BaseModel], loc: Path_) -> list[str]:
    current: Any = model
    for part in loc:
        if typing.get_origin(current) is dict:  # e.g. `agents.<name>`: the value's model
            current = typing.get_args(current)[1]
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return []
        current = fields[part].annotation
    fields = getattr(current, "model_fields", None)
    return sorted(fields) if fields else []
