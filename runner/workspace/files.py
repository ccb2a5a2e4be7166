"""File tools of the workspace server: read, write, search/replace edits, listing.

Plain functions over a `Confinement`; the MCP wiring is in `runner.workspace.server`.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from runner.settings import WorkspaceLimits
from runner.workspace.fs import read_regular, walk_entries, write_regular
from runner.workspace.paths import Confinement, WorkspaceError

__all__ = [
    "MAX_LINE_CHARS",
    "MAX_LIST_ENTRIES",
    "MAX_READ_BYTES",
    "MAX_READ_LINES",
    "Files",
    "is_binary",
    "parse_blocks",
    "walk",
]

MAX_READ_BYTES = WorkspaceLimits().read_max_bytes
"""Files larger than this are refused by read_file (use search_files or execute_command)."""
MAX_READ_LINES = 2000
"""Lines read_file shows at most per call."""
MAX_LINE_CHARS = 2000
"""Longer lines are cut, with a marker."""
MAX_LIST_ENTRIES = 500
"""Entries list_files shows at most."""
_BLOCK = re.compile(
    r"^<{7} SEARCH[ \t]*\r?\n(.*?)^={7}[ \t]*\r?\n(.*?)^>{7} REPLACE[ \t]*$", re.M | re.S
)


def is_binary(data: bytes) -> bool:
    """A NUL byte in the first 8 KiB, or bytes that are not UTF-8, make a file binary."""
    if b"\x00" in data[:8192]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


@dataclass
class Files:
    """The file tools, with what the agent last read of each file (to refuse stale edits)."""

    paths: Confinement
    max_read_bytes: int = MAX_READ_BYTES
    """read_file refuses larger files."""
    _seen: dict[Path, str] = field(default_factory=dict)

    def read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """`N | line` numbered text of a file, or of a line range of it."""
        real = self.paths.resolve(path)
        data = self._read_bytes(path, real)
        if is_binary(data):
            raise WorkspaceError(
                f"{path!r} is a binary file ({len(data)} bytes); read_file shows text only"
            )
        self._seen[real] = _digest(data)
        lines = data.decode("utf-8").splitlines()
        first = max(start_line or 1, 1)
        last = min(end_line or len(lines), len(lines), first + MAX_READ_LINES - 1)
        if not lines:
            return f"({path} is empty)"
        if first > len(lines):
            raise WorkspaceError(
                f"start_line {first} is past the end: {path!r} has {len(lines)} lines"
            )
        width = len(str(last))
        body = "\n".join(f"{n:>{width}} | {_cut(lines[n - 1])}" for n in range(first, last + 1))
        if first > 1 or last < len(lines):
            body += f"\n(lines {first}-{last} of {len(lines)}; use start_line/end_line for more)"
        return body

    def write(self, path: str, content: str) -> str:
        """Create or overwrite a file, creating its parent folders."""
        real = self.paths.resolve(path, write=True)
        data = content.encode("utf-8")
        existed = write_regular(path, real, self.paths.root, data)
        self._seen[real] = _digest(data)
        verb = "Overwrote" if existed else "Created"
        lines = content.count("\n") + 1
        return f"{verb} {self.paths.relative(real)} ({len(data)} bytes, {lines} lines)"

    def replace(self, path: str, blocks: list[tuple[str, str]]) -> str:
        """Apply exact search/replace blocks, in order, to a file the agent has seen as it is."""
        real = self.paths.resolve(path, write=True)
        if not real.exists():
            raise WorkspaceError(f"{path!r} does not exist; create it with write_to_file")
        data = self._read_bytes(path, real)
        if is_binary(data):
            raise WorkspaceError(f"{path!r} is a binary file; it cannot be edited as text")
        seen = self._seen.get(real)
        if seen is not None and seen != _digest(data):
            raise WorkspaceError(
                f"{path!r} changed since you last read it; read it again with read_file "
                "and redo the edit against its current content"
            )
        text = data.decode("utf-8")
        newline = "\r\n" if "\r\n" in text else "\n"
        for number, (search, replacement) in enumerate(blocks, 1):
            text = _apply(path, text, number, _eol(search, newline), _eol(replacement, newline))
        out = text.encode("utf-8")
        write_regular(path, real, self.paths.root, out)
        self._seen[real] = _digest(out)
        return f"Applied {len(blocks)} edit(s) to {self.paths.relative(real)}"

    def list(self, path: str = ".", recursive: bool = False) -> str:
        """Entries under a folder, folders with a trailing `/`, honouring .gitignore."""
        real = self.paths.resolve(path)
        if not real.is_dir():
            raise WorkspaceError(f"{path!r} is not a folder")
        entries: list[str] = []
        for entry in walk(self.paths.root, real, recursive=recursive):
            if len(entries) == MAX_LIST_ENTRIES:
                entries.append(
                    f"(listing cut at {MAX_LIST_ENTRIES} entries; list a subfolder for more)"
                )
                break
            entries.append(entry)
        return "\n".join(entries) if entries else f"({self.paths.relative(real)} is empty)"

    def _read_bytes(self, given: str, real: Path) -> bytes:
        return read_regular(
            given,
            real,
            self.paths.base_of(real),
            self.max_read_bytes,
            hint=" of read_file; use search_files, or execute_command with head/sed, to see "
            "parts of it",
        )


def _apply(path: str, text: str, number: int, search: str, replacement: str) -> str:
    if not search:
        raise WorkspaceError(f"block {number}: SEARCH is empty; use write_to_file for new files")
    count = text.count(search)
    if count == 1:
        return text.replace(search, replacement, 1)
    if count > 1:
        lines = _match_lines(text, search)
        raise WorkspaceError(
            f"block {number}: SEARCH matches {count} places in {path!r} (lines {lines}); "
            "add surrounding lines to SEARCH so it matches exactly one"
        )
    raise WorkspaceError(
        f"block {number}: SEARCH does not match {path!r} exactly (check whitespace and "
        f"indentation). The closest lines are:\n{_closest(text, search)}"
    )


def _match_lines(text: str, search: str) -> str:
    starts = [m.start() for m in re.finditer(re.escape(search), text)]
    return ", ".join(str(text.count("\n", 0, start) + 1) for start in starts[:10])


def _closest(text: str, search: str) -> str:
    lines = text.splitlines()
    want = search.splitlines() or [search]
    size = len(want)
    best, best_at = -1.0, 0
    for at in range(max(len(lines) - size + 1, 1)):
        ratio = difflib.SequenceMatcher(None, "\n".join(lines[at : at + size]), search).ratio()
        if ratio > best:
            best, best_at = ratio, at
    shown = lines[best_at : best_at + size][:40]
    width = len(str(best_at + len(shown)))
    return "\n".join(f"{best_at + i + 1:>{width}} | {line}" for i, line in enumerate(shown))


def parse_blocks(diff: str) -> list[tuple[str, str]]:
    """The (search, replace) pairs of a diff made of SEARCH/REPLACE blocks."""
    blocks = [(m.group(1), m.group(2)) for m in _BLOCK.finditer(diff)]
    if not blocks:
        raise WorkspaceError(
            "no SEARCH/REPLACE block found; write each edit as\n<<<<<<< SEARCH\n"
            "exact existing lines\n=======\nnew lines\n>>>>>>> REPLACE"
        )
    return [(_strip_last_eol(s), _strip_last_eol(r)) for s, r in blocks]


def _strip_last_eol(text: str) -> str:
    return text.removesuffix("\n").removesuffix("\r")


def _eol(text: str, newline: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", newline)


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}... [line cut: {len(line)} characters]"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def walk(root: Path, start: Path, *, recursive: bool) -> Iterator[str]:
    """Paths under `start` relative to `root`, sorted, skipping .git and .gitignore'd entries."""
    for rel, entry in walk_entries(root, start, recursive=recursive):
        yield f"{rel}/" if entry.is_dir(follow_symlinks=False) else rel
