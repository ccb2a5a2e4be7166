"""The file tools touch regular files only: a FIFO, socket or device never makes them wait."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from runner.workspace.files import Files
from runner.workspace.paths import WorkspaceError

BOUND_S = 20.0
"""Bound on one call: without the fix a call on a FIFO waits forever, and the test fails here."""


def finishes(call: Callable[[], object]) -> BaseException | object:
    """What `call` returned or raised; fails the test if it is still waiting after BOUND_S."""
    box: list[object] = []

    def run() -> None:
        try:
            box.append(call())
        except BaseException as exc:  # handed back to the test
            box.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND_S)
    if thread.is_alive():
        pytest.fail("the call is still waiting on a non-regular file")
    return box[0]


@pytest.fixture
def fifo(root: Path) -> Path:
    path = root / "fifo"
    os.mkfifo(path)
    return path


def test_read_file_refuses_a_fifo_without_waiting(files: Files, fifo: Path) -> None:
    result = finishes(lambda: files.read("fifo"))
    assert isinstance(result, WorkspaceError)
    assert "not a regular file" in str(result)


def test_write_to_file_refuses_a_fifo_without_a_reader(files: Files, fifo: Path) -> None:
    result = finishes(lambda: files.write("fifo", "x"))
    assert isinstance(result, WorkspaceError)
    assert "only regular files" in str(result)


def test_write_to_file_refuses_a_fifo_with_a_reader(files: Files, fifo: Path) -> None:
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        result = finishes(lambda: files.write("fifo", "x"))
        assert isinstance(result, WorkspaceError)
        assert "not a regular file" in str(result)
        assert os.read(reader, 10) == b""
    finally:
        os.close(reader)


def test_replace_in_file_refuses_a_fifo(files: Files, fifo: Path) -> None:
    result = finishes(lambda: files.replace("fifo", [("a", "b")]))
    assert isinstance(result, WorkspaceError)


def test_read_file_refuses_a_socket(files: Files, root: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(root / "sock"))
        result = finishes(lambda: files.read("sock"))
        assert isinstance(result, WorkspaceError)
    finally:
        server.close()


def test_read_file_refuses_a_device_through_a_symlink_inside(files: Files, root: Path) -> None:
    # /dev/zero is outside the root anyway; a link to it is refused before any open.
    (root / "zero").symlink_to("/dev/zero")
    with pytest.raises(WorkspaceError, match="outside"):
        files.read("zero")


def test_a_refused_write_leaves_a_hard_linked_file_untouched(
    files: Files, root: Path, outside: Path
) -> None:
    os.link(outside / "secret.txt", root / "hard.txt")
    with pytest.raises(WorkspaceError, match="hard links"):
        files.write("hard.txt", "pwned")
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "secret\n"


def test_write_to_file_still_creates_and_overwrites_regular_files(files: Files, root: Path) -> None:
    assert files.write("new/a.txt", "one").startswith("Created new/a.txt")
    assert files.write("new/a.txt", "two\n").startswith("Overwrote new/a.txt")
    assert (root / "new" / "a.txt").read_text(encoding="utf-8") == "two\n"
