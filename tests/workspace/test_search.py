"""search_files: both backends (ripgrep and the Python child process) give the same results."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

import runner.workspace.search_worker
from runner.settings import WorkspaceLimits
from runner.workspace.paths import Confinement, WorkspaceError
from runner.workspace.search import MAX_SEARCH_MATCHES, Backend, search_files

MAX_FILE = WorkspaceLimits().search_file_max_bytes
HAS_RG = shutil.which("rg") is not None
BACKENDS = [
    pytest.param("rg", marks=pytest.mark.skipif(not HAS_RG, reason="ripgrep is not installed")),
    "python",
]


async def search(
    paths: Confinement, backend: Backend, path: str, regex: str, glob: str | None = None
) -> list[str]:
    with anyio.fail_after(30):
        text = await search_files(paths, path, regex, glob, MAX_FILE, backend)
    return text.splitlines()


def tree(root: Path, outside: Path) -> None:
    """A tree with every kind of file the search must show or skip."""
    files = {
        "a.txt": "hit first\nsecond\nthird\nfourth\nfifth hit\nlast line\n",
        "b.py": "x = 1\ny = hit\n",
        "s/c.txt": "one\nhit\nthree\n",
        "s/t/d.txt": "hit\n",
        "s-e.txt": "no\nhit\n",
        ".hidden": "hit\n",
        ".gitignore": "ignored.txt\nbuild/\n",
        "ignored.txt": "hit\n",
        "build/out.txt": "hit\n",
        "s/.gitignore": "local.txt\n",
        "s/local.txt": "hit\n",
        "crlf.txt": "hit\r\nnext\r\n",
        "noeol.txt": "a\nhit",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text.encode("utf-8"))
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("hit\n", encoding="utf-8")
    (root / "big.txt").write_text("hit\n" + "x" * MAX_FILE, encoding="utf-8")
    (root / "bin.dat").write_bytes(b"hit\n\x00\x01\n")
    (root / "link.txt").symlink_to(root / "b.py")
    os.link(outside / "secret.txt", root / "hard.txt")
    os.mkfifo(root / "fifo")


EXPECTED = [
    ".hidden:1:hit",
    "--",
    "a.txt:1:hit first",
    "a.txt-2-second",
    "--",
    "a.txt-4-fourth",
    "a.txt:5:fifth hit",
    "a.txt-6-last line",
    "--",
    "b.py-1-x = 1",
    "b.py:2:y = hit",
    "--",
    "crlf.txt:1:hit",
    "crlf.txt-2-next",
    "--",
    "noeol.txt-1-a",
    "noeol.txt:2:hit",
    "--",
    "s/c.txt-1-one",
    "s/c.txt:2:hit",
    "s/c.txt-3-three",
    "--",
    "s/t/d.txt:1:hit",
    "--",
    "s-e.txt-1-no",
    "s-e.txt:2:hit",
]


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_tree_gives_exactly_the_expected_lines(
    paths: Confinement, root: Path, outside: Path, backend: Backend
) -> None:
    tree(root, outside)
    assert await search(paths, backend, ".", "hit") == EXPECTED


@pytest.mark.skipif(not HAS_RG, reason="ripgrep is not installed")
@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "regex", "glob"),
    [
        (".", "hit", None),
        (".", "^h", "*.txt"),
        ("s", "hit|one", None),
        ("a.txt", "i", None),
        (".", "nothing matches this", None),
        (".", r"\bt\w+", None),
    ],
)
async def test_both_backends_give_the_same_results(
    paths: Confinement, root: Path, outside: Path, path: str, regex: str, glob: str | None
) -> None:
    tree(root, outside)
    rg = await search(paths, "rg", path, regex, glob)
    python = await search(paths, "python", path, regex, glob)
    assert rg == python


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_match_on_line_one_shows_no_line_zero(
    paths: Confinement, root: Path, backend: Backend
) -> None:
    (root / "a.txt").write_text("hit\nmiddle\nlast\n", encoding="utf-8")
    assert await search(paths, backend, ".", "hit") == ["a.txt:1:hit", "a.txt-2-middle"]


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_single_file_search_names_the_file(
    paths: Confinement, root: Path, backend: Backend
) -> None:
    (root / "s").mkdir()
    (root / "s" / "a.txt").write_text("hit\n", encoding="utf-8")
    assert await search(paths, backend, "s/a.txt", "hit") == ["s/a.txt:1:hit"]


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_file_over_the_size_limit_is_skipped_even_when_named(
    paths: Confinement, root: Path, backend: Backend
) -> None:
    (root / "big.txt").write_text("hit\n" + "x" * MAX_FILE, encoding="utf-8")
    (lines,) = await search(paths, backend, "big.txt", "hit")
    assert lines.startswith("No matches")
    (lines,) = await search(paths, backend, ".", "hit")
    assert lines.startswith("No matches")


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_search_stops_at_the_match_cap(
    paths: Confinement, root: Path, backend: Backend
) -> None:
    (root / "many.txt").write_text("hit\n" * (MAX_SEARCH_MATCHES * 50), encoding="utf-8")
    (root / "more.txt").write_text("hit\n", encoding="utf-8")
    lines = await search(paths, backend, ".", "hit")
    assert sum(1 for line in lines if ":" in line.split("hit")[0]) == MAX_SEARCH_MATCHES
    assert lines[-1] == f"(stopped at {MAX_SEARCH_MATCHES} matches; narrow the path or the regex)"


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_bad_regex_is_refused(paths: Confinement, backend: Backend) -> None:
    with pytest.raises(WorkspaceError, match="invalid regex"):
        await search(paths, backend, ".", "(")


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_search_cannot_leave_the_root(paths: Confinement, backend: Backend) -> None:
    with pytest.raises(WorkspaceError, match="outside"):
        await search(paths, backend, "..", "secret")


@pytest.mark.anyio
async def test_a_backtracking_regex_is_stopped_by_cancelling_the_call(
    paths: Confinement, root: Path
) -> None:
    # `^(\w+\s?)+$` takes exponential time on a word line that ends in a non-word character.
    (root / "line.txt").write_text("a" * 40 + "!\n", encoding="utf-8")
    with anyio.move_on_after(2) as scope:
        await search_files(paths, ".", r"^(\w+\s?)+$", None, MAX_FILE, "python")
    assert scope.cancelled_caught
    worker = [pid for pid in _children() if b"search_worker" in _cmdline(pid)]
    assert not worker, "the search process outlived its call"


def _children() -> list[int]:
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_the_search_worker_starts_without_importing_the_runner_package() -> None:
    """Run as a script it loads tree.py and confined_read.py by path: the package's face would
    bring pydantic and the settings, about 0.2 s on every search."""
    worker = Path(runner.workspace.search_worker.__file__)
    ran = subprocess.run(
        [sys.executable, "-I", "-X", "importtime", str(worker)],
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in ran.stderr.decode().splitlines()}
    assert "pathspec" in imported
    assert not {"pydantic", "runner.settings", "runner.workspace"} & imported


def test_a_reported_line_that_the_file_beneath_the_root_lacks_is_dropped(
    root: Path, outside: Path
) -> None:
    """What rg reports is read again beneath the root: a line it read through a folder that was
    a symlink to outside at that moment (here: always one) is not shown."""
    from runner.workspace.search import _confirmed, _File

    (root / "real").mkdir()
    (root / "real" / "a.txt").write_text("kept\nother\n", encoding="utf-8")
    (root / "link").symlink_to(outside)
    reported = [
        _File("real/a.txt", [(1, "kept", True), (2, "other", False)]),
        _File("real/a.txt", [(2, "secret", True)]),  # not what the file holds there
        _File("link/secret.txt", [(1, "secret", True)]),  # outside, through a symlink
    ]
    kept = _confirmed(root, reported, 1000)
    assert [(f.path, f.lines) for f in kept] == [
        ("real/a.txt", [(1, "kept", True), (2, "other", False)])
    ]
