"""The proxy's unix socket leaves nothing behind (DESIGN 24): whatever the length of its path,
and whether the bind works or fails, no descriptor of the runner's stays open (the folder's
descriptor a long path is bound through, the socket a failed bind made), and a failure is
raised, never handed back as a socket that listens nowhere."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.workspace.sandbox.proxy import unix_listener


def _open_fds() -> set[str]:
    """The process's descriptors, less the one the listing itself held."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            os.readlink(f"/proc/self/fd/{name}")
        except FileNotFoundError:
            continue
        found.add(name)
    return found


@pytest.fixture
def folders() -> Iterator[dict[str, Path]]:
    """A short folder and one whose socket path is far beyond AF_UNIX's 107 bytes."""
    with tempfile.TemporaryDirectory(prefix="ar-rules-") as top:
        long = Path(top) / ("l" * 120) / ("o" * 90)
        long.mkdir(parents=True)
        yield {"short": Path(top), "long": long}


@pytest.mark.parametrize("kind", ["short", "long"])
def test_a_bound_socket_holds_only_its_own_descriptor(folders: dict[str, Path], kind: str) -> None:
    path = folders[kind] / "proxy.sock"
    before = _open_fds()
    listener = unix_listener(path)
    try:
        assert _open_fds() - before == {str(listener.fileno())}  # no folder descriptor left
        assert path.is_socket() and path.stat().st_mode & 0o777 == 0o600
    finally:
        listener.close()
    assert _open_fds() == before


@pytest.mark.parametrize("kind", ["short", "long"])
@pytest.mark.parametrize("obstacle", ["a file there", "no such folder"])
def test_a_bind_that_fails_raises_and_leaves_no_descriptor_open(
    folders: dict[str, Path], kind: str, obstacle: str
) -> None:
    if obstacle == "a file there":
        path = folders[kind] / "proxy.sock"
        path.write_text("taken", encoding="utf-8")
    else:
        path = folders[kind] / "gone" / "proxy.sock"
    before = _open_fds()
    with pytest.raises(OSError) as caught:
        unix_listener(path)
    # The traceback still holds the function's frame: its socket must be closed already.
    assert caught.value.__traceback__ is not None
    assert _open_fds() == before, obstacle
    if obstacle == "a file there":
        assert path.read_text(encoding="utf-8") == "taken"
