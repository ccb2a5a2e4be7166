"""Coerce the text values of an XML tool call to what the tool's JSON Schema asks for.

Every parameter arrives as text. Real MCP servers reject `"2"` for a number and `"false"` for a
boolean, so each value is converted by its schema: strings stay strings (never JSON-parsed);
integers, numbers and booleans are parsed from their usual spelling; arrays and objects are
parsed as JSON; `enum` values must be one of the listed ones; `null` (or an empty value) fits a
nullable slot; `anyOf`/`oneOf` branches are tried in order and the first that fits wins; local
`$ref`s are resolved; a slot with no type is parsed as JSON when it is JSON, else kept as text.
The coerced arguments are then validated with jsonschema so that an error says what does not fit,
unless the schema is plain enough for `_plainly_valid` to vouch for them: most tool schemas are
(scalars, enums, nullable `anyOf`s), and jsonschema then is not even imported (about 60 ms).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

__all__ = ["CoercionError", "coerce_arguments", "coerce_value", "describe_schema"]

_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_MAX_REF_HOPS = 32
_MAX_DEPTH = 32
_SNIPPET = 80


class CoercionError(ValueError):
    """Arguments that do not fit the schema; `problems` holds one sentence per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class _Mismatch(Exception):
    """One value does not fit one schema; the message says what was expected."""


def coerce_arguments(raw: Mapping[str, str], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Convert each raw text value by its property schema, then validate the whole object.

    Raises CoercionError with every problem found, each naming its parameter as `<name>`.
    """
    root = schema  # not copied: its identity keys the validator cache
    properties = root.get("properties") or {}
    extra = root.get("additionalProperties")
    arguments: dict[str, Any] = {}
    problems: list[str] = []
    for name, text in raw.items():
        sub = properties.get(name, extra if isinstance(extra, dict) else {})
        try:
            arguments[name] = _coerce(text, sub, root, 0)
        except _Mismatch as exc:
            problems.append(f"<{name}>: {exc}")
    if not problems:
        problems = _validate(arguments, root)
    if problems:
        raise CoercionError(problems)
    return arguments


def coerce_value(
    text: str, schema: Mapping[str, Any], root: Mapping[str, Any] | None = None
) -> Any:
    """Convert one text value by its schema; `root` holds the `$defs` that `$ref`s point into.

    Raises CoercionError with one problem when the text does not fit.
    """
    try:
        return _coerce(text, schema, root if root is not None else schema, 0)
    except _Mismatch as exc:
        raise CoercionError([str(exc)]) from None


def describe_schema(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> str:
    """A short human form of what a slot takes: `string`, `integer`, `success|failure`, ..."""
    node = _resolve(schema, root if root is not None else schema)
    if "enum" in node:
        return "|".join(_show(option) for option in node["enum"])
    branches = node.get("anyOf") or node.get("oneOf")
    if isinstance(branches, list):
        return " or ".join(describe_schema(branch, root or schema) for branch in branches)
    types = _types(node)
    if not types:
        return "any JSON value or text"
    return " or ".join("JSON " + t if t in ("array", "object") else t for t in types)


def _coerce(text: str, schema: Any, root: Mapping[str, Any], depth: int) -> Any:
    node = _resolve(schema, root)
    if depth > _MAX_DEPTH or not node:
        return _untyped(text)
    if "const" in node:
        return _one_of(text, [node["const"]])
    if "enum" in node:
        return _one_of(text, list(node["enum"]))
    branches = node.get("anyOf") or node.get("oneOf")
    if isinstance(branches, list):
        return _first_branch(text, branches, root, depth)
    if isinstance(node.get("allOf"), list) and not _types(node):
        # Every part must hold, so the parts' types (merged) decide the conversion.
        # A part's own `allOf` is kept for the next round (the node's is used up); the depth
        # bound ends a part that refers back to the node.
        merged = {k: v for part in node["allOf"] for k, v in _resolve(part, root).items()}
        rest = {k: v for k, v in node.items() if k != "allOf"}
        return _coerce(text, {**merged, **rest}, root, depth + 1)
    types = _types(node)
    if not types:
        return _untyped(text)
    if "null" in types and _is_null(text):
        return None
    failures: list[str] = []
    for kind in types:
        if kind == "null":
            continue
        convert = _BY_TYPE.get(kind)
        if convert is None:
            failures.append(f"unsupported type {kind!r}")
            continue
        try:
            return convert(text)
        except _Mismatch as exc:
            failures.append(str(exc))
    if not failures:
        raise _Mismatch(f"expected null (write null or leave it empty), got {_snip(text)}")
    raise _Mismatch("; or ".join(failures))


def _first_branch(text: str, branches: list[Any], root: Mapping[str, Any], depth: int) -> Any:
    # A nullable anyOf takes "null"/empty as None before a string branch could claim it.
    if any("null" in _types(_resolve(b, root)) for b in branches) and _is_null(text):
        return None
    failures: list[str] = []
    for branch in branches:
        try:
            value = _coerce(text, branch, root, depth + 1)
        except _Mismatch as exc:
            failures.append(str(exc))
            continue
        problem = _first_problem(value, branch, root)
        if problem is None:
            return value
        failures.append(problem)
    raise _Mismatch("fits none of the allowed forms: " + "; or ".join(failures))


def _resolve(schema: Any, root: Mapping[str, Any]) -> dict[str, Any]:
    """Follow local `$ref`s (`#/$defs/X`, `#/definitions/X`); siblings of `$ref` win."""
    node: Any = schema
    for _ in range(_MAX_REF_HOPS):
        if not isinstance(node, Mapping):
            return {}
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return dict(node)
        target: Any = root
        if not ref.startswith("#"):
            return {k: v for k, v in node.items() if k != "$ref"}
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            key = part.replace("~1", "/").replace("~0", "~")
            target = target.get(key) if isinstance(target, Mapping) else None
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **siblings} if isinstance(target, Mapping) else siblings
    return {}


def _types(node: Mapping[str, Any]) -> list[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    if "properties" in node:
        return ["object"]
    if "items" in node:
        return ["array"]
    return []


def _is_null(text: str) -> bool:
    # Only an empty value, not a blank one: a nullable string may well be " ".
    return text == "" or text.strip() == "null"


def _untyped(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _string(text: str) -> str:
    return text


def _integer(text: str) -> int:
    stripped = text.strip()
    try:
        if _INTEGER.fullmatch(stripped):
            return int(stripped)
        if _NUMBER.fullmatch(stripped) and float(stripped).is_integer():
            return int(float(stripped))
    except (ValueError, OverflowError):
        pass
    raise _Mismatch(f"expected an integer (like 42), got {_snip(text)}")


def _number(text: str) -> int | float:
    stripped = text.strip()
    if _INTEGER.fullmatch(stripped):
        try:
            return int(stripped)
        except ValueError:
            pass
    if _NUMBER.fullmatch(stripped) and math.isfinite(number := float(stripped)):
        return number
    raise _Mismatch(f"expected a number (like 2.5), got {_snip(text)}")


def _boolean(text: str) -> bool:
    word = text.strip().lower()
    if word in ("true", "false"):
        return word == "true"
    raise _Mismatch(f"expected a boolean (true or false), got {_snip(text)}")


def _json_of(kind: type, label: str, example: str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = json.loads(text)
        except ValueError as exc:
            detail = getattr(exc, "msg", str(exc))
            raise _Mismatch(f"expected a JSON {label} (like {example}); {detail}") from None
        if not isinstance(value, kind):
            raise _Mismatch(f"expected a JSON {label} (like {example}), got {_snip(text)}")
        return value

    return parse


# No "null": `_coerce` takes a null text before its loop over the types and skips `null` in it.
_BY_TYPE: dict[str, Callable[[str], Any]] = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
    "array": _json_of(list, "array", '["a", "b"]'),
    "object": _json_of(dict, "object", '{"key": "value"}'),
}


def _one_of(text: str, options: list[Any]) -> Any:
    for candidate in (text, text.strip()):
        if candidate in [o for o in options if isinstance(o, str)]:
            return candidate
    try:
        parsed = json.loads(text)
    except ValueError:
        pass
    else:
        for option in options:
            if _same(parsed, option):
                return parsed
    shown = ", ".join(_show(option) for option in options)
    raise _Mismatch(f"expected one of: {shown}; got {_snip(text)}")


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _snip(text: str) -> str:
    return repr(text if len(text) <= _SNIPPET else text[:_SNIPPET] + "...")


_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly"}
    | {"writeOnly", "format"}  # format only annotates: the validators get no format checker
)
_PLAIN_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


_ROOT_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}


def _plainly_valid(arguments: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    """True only when `arguments` certainly fit `root`: an object of named properties, each of
    them a plain node (see `_plainly_fits`). False means "ask jsonschema", not "invalid"."""
    if any(key not in _ROOT_KEYWORDS for key in root):
        return False
    properties, required = root.get("properties", {}), root.get("required", [])
    extra = root.get("additionalProperties", True)
    if root.get("type", "object") != "object" or not isinstance(properties, Mapping):
        return False
    if not isinstance(required, list) or any(name not in arguments for name in required):
        return False
    for name, value in arguments.items():
        if name in properties:
            fits = _plainly_fits(value, properties[name])
        else:
            fits = extra is True or (isinstance(extra, Mapping) and _plainly_fits(value, extra))
        if not fits:
            return False
    return True


def _plainly_fits(value: Any, node: Any) -> bool:
    """True only when `value` certainly fits `node`, a schema of nothing but scalar `type`s,
    `enum`, `const`, `anyOf` of such nodes, and annotations."""
    if not isinstance(node, Mapping):
        return False
    for key, expected in node.items():
        if key in _ANNOTATIONS:
            continue
        if key == "type":
            kinds = [expected] if isinstance(expected, str) else expected
            if not isinstance(kinds, list) or not any(
                _PLAIN_TYPES.get(kind, _never)(value) for kind in kinds
            ):
                return False
        elif key in ("enum", "const"):
            options = expected if key == "enum" else [expected]
            if not isinstance(options, list) or not any(_same(value, o) for o in options):
                return False
        elif key == "anyOf":
            if not isinstance(expected, list) or not any(_plainly_fits(value, b) for b in expected):
                return False
        else:
            return False
    return True


def _never(value: Any) -> bool:
    return False


def _same(value: Any, option: Any) -> bool:
    """Equal as JSON values: bool is an int in Python, but JSON keeps true and 1 apart."""
    return type(value) is type(option) and value == option


def _jsonschema() -> ModuleType:
    import jsonschema

    return jsonschema


@dataclass
class _Checked:
    """A schema's validator, and whether the schema itself is valid (None: not checked yet)."""

    schema: Mapping[str, Any]
    validator: Any
    valid: bool | None = None


_VALIDATORS: dict[int, _Checked] = {}
"""By the id of their schema, kept alive here so that the id stays its own."""


def _checked(root: Mapping[str, Any]) -> _Checked:
    entry = _VALIDATORS.get(id(root))
    if entry is not None and entry.schema is root:
        return entry
    jsonschema = _jsonschema()
    schema = dict(root)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    if len(_VALIDATORS) >= 1024:  # tools come and go only with servers; this is a backstop
        _VALIDATORS.clear()
    entry = _VALIDATORS[id(root)] = _Checked(root, cls(schema))
    return entry


def _schema_is_valid(entry: _Checked) -> bool:
    """Whether the schema passes its metaschema, checked once and only when a validation found a
    problem: the check costs about 2 ms, and only a broken schema makes up problems that are not
    there (a server's broken schema is its problem; the server still validates what it gets)."""
    if entry.valid is None:
        try:
            type(entry.validator).check_schema(entry.validator.schema)
            entry.valid = True
        except _jsonschema().exceptions.SchemaError:
            entry.valid = False
    return entry.valid


def _schema_failures() -> tuple[type[Exception], ...]:
    """What validating against a broken schema may raise."""
    from referencing.exceptions import Unresolvable

    exceptions = _jsonschema().exceptions
    # RecursionError: a schema whose `$ref` leads back into itself with nothing in between.
    # AttributeError: `referencing` asks a list for its `$id` when a `$ref` points into one.
    failures = (exceptions.SchemaError, exceptions.UnknownType, Unresolvable, LookupError)
    return (*failures, TypeError, RecursionError, AttributeError)


def _first_problem(value: Any, branch: Any, root: Mapping[str, Any]) -> str | None:
    """Why `value` does not fit `branch` (with `$ref`s into `root`), or None when it fits."""
    if _plainly_fits(value, branch):
        return None
    entry = _checked(root)
    try:
        validator = entry.validator.evolve(schema=branch)
        error = _jsonschema().exceptions.best_match(validator.iter_errors(value))
    except _schema_failures():
        return None
    if error is None or not _schema_is_valid(entry):
        return None
    return _short(error.message)


def _validate(arguments: dict[str, Any], root: Mapping[str, Any]) -> list[str]:
    return [] if _plainly_valid(arguments, root) else _schema_problems(arguments, root)


def _schema_problems(arguments: dict[str, Any], root: Mapping[str, Any]) -> list[str]:
    """What jsonschema finds wrong; nothing when the schema itself is broken."""
    entry = _checked(root)
    try:
        errors = list(entry.validator.iter_errors(arguments))
    except _schema_failures():
        return []
    if not errors or not _schema_is_valid(entry):
        return []
    problems = []
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        path = list(error.absolute_path)
        where = f"<{path[0]}>" + "".join(f"[{p!r}]" for p in path[1:]) if path else "arguments"
        problems.append(f"{where}: {_short(error.message)}")
    return problems


def _short(message: str) -> str:
    return message if len(message) <= 300 else message[:300] + "..."
