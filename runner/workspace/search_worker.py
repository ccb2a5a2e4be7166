"""The Python backend of search_files, run in a child process that can be killed at any time.

Reads its request (JSON) on stdin and prints what `rg --json` would: `begin`, `match`/`context`
and `end` messages for each file with a match, in path order. `runner.workspace.search` reads and
formats them. Python's `re` backtracks: a regex such as `^(\\w+\\s?)+$` can run for hours on one
line, so this never runs inside the runner.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __name__ != "__main__":
    from runner.workspace.fs import open_beneath, walk_entries
else:
    # Run as a script (`python -I search_worker.py`): importing the package would import its face
    # and pydantic, 0.2 s per search. tree.py needs only pathspec, beneath, confined_read and
    # repo_ignore: load them by their paths, under their own names, so that the imports
    # find them in sys.modules and never import the package.
    import importlib.util
    from types import ModuleType

    def _load(name: str, filename: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / "fs" / filename)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    open_beneath = _load("runner.workspace.fs.beneath", "beneath.py").open_beneath
    _load("runner.workspace.fs.confined_read", "confined_read.py")
    _load("runner.workspace.fs.repo_ignore", "repo_ignore.py")
    walk_entries = _load("_tree", "tree.py").walk_entries

__all__ = ["main", "search"]


def main() -> None:
    """Search as the request on stdin says; write JSON lines on stdout."""
    request = json.loads(sys.stdin.buffer.read())
    out = sys.stdout
    try:
        for message in search(
            Path.cwd(), request["target"], request["regex"], request["glob"], request["max_bytes"]
        ):
            out.write(json.dumps(message) + "\n")
        out.flush()
    except BrokenPipeError:  # the runner had enough matches and stopped reading
        os._exit(0)


def search(
    root: Path, target: str, regex: str, glob: str | None, max_bytes: int
) -> Iterator[dict[str, Any]]:
    """rg-style JSON messages for the matches of `regex` in `target` (relative to `root`)."""
    pattern = re.compile(regex)
    start = root / target
    files: Iterator[str] = iter([target])
    if start.is_dir():
        files = (f for f in _walk(root, start) if glob is None or _glob_matches(f, glob))
    for rel in files:
        lines = _lines(root, rel, max_bytes)
        if lines is None:
            continue
        hits = [n for n, line in enumerate(lines) if pattern.search(line)]
        if not hits:
            continue
        path = {"text": rel}
        yield {"type": "begin", "data": {"path": path}}
        hit_set = set(hits)
        shown = sorted({k for n in hits for k in (n - 1, n, n + 1) if 0 <= k < len(lines)})
        for k in shown:
            kind = "match" if k in hit_set else "context"
            data = {"path": path, "lines": {"text": lines[k] + "\n"}, "line_number": k + 1}
            yield {"type": kind, "data": data}
        yield {"type": "end", "data": {"path": path, "binary_offset": None}}


def _glob_matches(rel: str, glob: str) -> bool:
    return Path(rel).match(glob) or Path(rel).name == glob


def _lines(root: Path, rel: str, max_bytes: int) -> list[str] | None:
    """The file's lines, or None when it is not searched (as rg skips it, or refused)."""
    try:
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW
        fd = open_beneath(root, rel, flags)  # no folder on the way swapped for a link out
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1 or info.st_size > max_bytes:
            return None
        data = os.read(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if b"\x00" in data or len(data) > max_bytes:
        return None
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _walk(root: Path, start: Path) -> Iterator[str]:
    for rel, entry in walk_entries(root, start, recursive=True):
        if entry.is_file(follow_symlinks=False):
            yield rel


if __name__ == "__main__":
    main()
