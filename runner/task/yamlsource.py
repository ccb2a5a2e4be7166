"""YAML with positions: plain data plus a map from key paths to line:column.

Task files need errors that point at `file:line:column`; PyYAML's constructed data forgets where
each value came from, so this module builds the data from the node tree itself and remembers the
marks. It also refuses duplicate keys, alias bombs, absurd nesting and Python tags. And it finds
the task files a command line names (`discover_task_files`).
"""

from __future__ import annotations

import glob
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from runner.errors import ConfigError

__all__ = ["TASK_SUFFIXES", "Located", "Path_", "YamlError", "discover_task_files", "load_located"]

TASK_SUFFIXES = (".yaml", ".yml")

Path_ = tuple[str | int, ...]
"""A path into the data: mapping keys and list indexes."""

_MAX_NODES = 200_000  # far above any real task file; stops "billion laughs" alias expansion
_MAX_DEPTH = 64
_PLAIN_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:omap"}


class YamlError(Exception):
    """The text is not YAML the runner accepts; `line`/`column` are 1-based."""

    def __init__(self, message: str, line: int, column: int, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.hint = hint


@dataclass
class Located:
    """Loaded data and where each key path starts in the file."""

    data: Any
    marks: dict[Path_, tuple[int, int]] = field(default_factory=dict)

    def where(self, path: Path_) -> tuple[int, int]:
        """The position of `path`, or of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            mark = self.marks.get(tuple(path[:end]))
            if mark is not None:
                return mark
        return (1, 1)


class _Builder:
    def __init__(self) -> None:
        self.marks: dict[Path_, tuple[int, int]] = {}
        self.nodes = 0
        self._scalars = yaml.SafeLoader("")

    def build(self, node: yaml.Node, path: Path_, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > _MAX_NODES:
            raise _error(node, "document expands to too many values (an alias bomb?)", "")
        if depth > _MAX_DEPTH:
            raise _error(node, f"nesting deeper than {_MAX_DEPTH} levels", "flatten the file")
        self.marks.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.MappingNode | yaml.SequenceNode) and node.tag not in _PLAIN_TAGS:
            raise _error(node, f"unsupported YAML tag {node.tag}", "remove the tag")
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        try:
            return self._scalars.construct_object(node, deep=True)
        except (ValueError, OverflowError) as exc:  # e.g. an integer of 5,000 digits
            raise _error(node, f"unreadable value: {exc}", "write a shorter value") from None

    def _mapping(self, node: yaml.MappingNode, path: Path_, depth: int) -> dict[str, Any]:
        self._scalars.flatten_mapping(node)  # resolves `<<:` merge keys
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise _error(key_node, "a key must be a plain value", "quote it as a string")
            key = str(self.build(key_node, (*path, "<key>"), depth + 1))
            if key in result:
                line = self.marks[(*path, key)][0]
                raise _error(key_node, f"duplicate key {key!r} (first on line {line})", "keep one")
            self.marks[(*path, key)] = (
                key_node.start_mark.line + 1,
                key_node.start_mark.column + 1,
            )
            result[key] = self.build(value_node, (*path, key), depth + 1)
        return result


def _error(node: yaml.Node, message: str, hint: str) -> YamlError:
    return YamlError(message, node.start_mark.line + 1, node.start_mark.column + 1, hint)


def _syntax_error(exc: yaml.MarkedYAMLError) -> YamlError:
    """PyYAML's own words, at the start of what is broken: for an unterminated quote that is
    where the quote opens (its context), not the end of the file where PyYAML gave up."""
    problem = exc.problem or "syntax error"
    mark, context = exc.problem_mark, exc.context_mark
    if context is not None and exc.context and (mark is None or mark.line != context.line):
        found = f" (at line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = f"{exc.context}: {problem}{found}"
        mark = context
    line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    return YamlError(f"not valid YAML: {problem}", line, column, "fix the syntax here")


def load_located(text: str) -> Located | None:
    """Parse one YAML document; None for an empty document. Raises YamlError."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(exc) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"not valid YAML: {exc}", 1, 1, "fix the syntax") from None
    except RecursionError:
        raise YamlError("nesting too deep", 1, 1, "flatten the file") from None
    if root is None:
        return None
    builder = _Builder()
    try:
        data = builder.build(root, (), 0)
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise YamlError(f"not valid YAML: {exc.problem}", line, column, "fix the value") from None
    except RecursionError:
        raise YamlError("nesting too deep", 1, 1, "flatten the file") from None
    return Located(data, builder.marks)


def discover_task_files(patterns: Iterable[str]) -> list[Path]:
    """Task files from files, directories (searched recursively) and globs, in a stable order."""
    found: dict[Path, None] = {}
    for pattern in patterns:
        path = Path(pattern)
        if path.is_dir():
            matches = sorted(p for p in path.rglob("*") if p.suffix in TASK_SUFFIXES)
            if not matches:
                raise ConfigError(f"{pattern}: no .yaml or .yml task files in this directory")
        elif path.exists():
            matches = [path]
        else:
            # glob.glob, not Path.glob: users pass absolute patterns too.
            matches = sorted(Path(p) for p in glob.glob(pattern, recursive=True))  # noqa: PTH207
            matches = [p for p in matches if p.is_file()]
            if not matches:
                raise ConfigError(f"{pattern}: no such task file, directory or glob match")
        for match in matches:
            found.setdefault(match.resolve(), None)
    return list(found)
