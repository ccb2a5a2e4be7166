"""The `.git` entries of a work tree's submodules (runner.workspace.git.links, DESIGN 24).

The index is hostile: it may be written byte by byte by the agent, so the tests write it so
too (git reads paths there that it would never add: `../up`, `/abs`, `.git`). Every gitlink
inside the work tree is listed, nothing else; the list is bounded; an index git cannot read
(or a git that hangs on it) lists nothing.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import pytest

from runner.workspace.git import links
from runner.workspace.git.guard import GitPlaces, Item, git_places
from runner.workspace.git.links import gitlink_entries
from tests.conftest import git

_SHA = "a" * 40


@pytest.fixture
def tmp_path(memory_tmp_path: Path) -> Path:
    """On the memory file system: these tests make and walk thousands of entries."""
    return memory_tmp_path


def _index(git_dir: Path, entries: list[tuple[int, bytes]]) -> None:
    """Write `git_dir/index` (version 2) by hand: one entry per (mode, path), sorted by path."""
    body = b"DIRC" + struct.pack(">II", 2, len(entries))
    for mode, name in sorted(entries, key=lambda e: e[1]):
        entry = struct.pack(">10I", 0, 0, 0, 0, 0, 0, mode, 0, 0, 0) + bytes.fromhex(_SHA)
        entry += struct.pack(">H", min(len(name), 0xFFF)) + name
        entry += b"\0" * (8 - len(entry) % 8)
        body += entry
    (git_dir / "index").write_bytes(body + hashlib.sha1(body).digest())


@pytest.fixture
def top(tmp_path: Path) -> Path:
    work = (tmp_path / "w").resolve()
    work.mkdir()
    git(work, "init", "-q")
    return work


def _places(top: Path) -> GitPlaces:
    places = git_places(top)
    assert places is not None
    return places


def test_every_gitlink_inside_the_work_tree_is_listed_with_its_git_entry(top: Path) -> None:
    names = [b"fine", b"a//b", b"./c", b"deep/er/sub", "caf\u00e9".encode(), b"\xff-raw"]
    _index(top / ".git", [(0o160000, n) for n in names] + [(0o100644, b"file.txt")])
    (top / "fine").mkdir()
    (top / "fine" / ".git").write_text("gitdir: ../.git/modules/fine\n", encoding="utf-8")
    (top / "deep" / "er" / "sub" / ".git").mkdir(parents=True)
    found = gitlink_entries(_places(top), os.environ)
    assert set(found) == {
        str(top / "fine" / ".git"),
        str(top / "a" / "b" / ".git"),
        str(top / "c" / ".git"),
        str(top / "deep" / "er" / "sub" / ".git"),
        str(top / "caf\u00e9" / ".git"),
        os.fsdecode(os.fsencode(top) + b"/\xff-raw/.git"),
    }
    assert found[str(top / "fine" / ".git")].data == b"gitdir: ../.git/modules/fine\n"
    assert found[str(top / "deep" / "er" / "sub" / ".git")].kind == "dir"
    assert found[str(top / "a" / "b" / ".git")] == Item("absent")


@pytest.mark.parametrize(
    "name",
    [
        b"../up",
        b"a/../../up",
        b"/abs/x",
        b".git",
        b"ok/.git/x",
        b"a/.git",
        b"",
        b".",
        b"./",
        b"a/..",
    ],
)
def test_a_gitlink_path_leaving_the_work_tree_or_inside_a_git_folder_is_ignored(
    top: Path, name: bytes
) -> None:
    _index(top / ".git", [(0o160000, name), (0o160000, b"zz-kept")])
    assert set(gitlink_entries(_places(top), os.environ)) == {str(top / "zz-kept" / ".git")}


def test_only_gitlinks_count_not_files_links_or_trees(top: Path) -> None:
    modes = (0o100644, 0o100755, 0o120000, 0o040000)
    _index(top / ".git", [(mode, f"m{mode:o}".encode()) for mode in modes])
    assert gitlink_entries(_places(top), os.environ) == {}


def test_the_index_is_read_from_the_git_folder_named_not_one_git_would_find(
    top: Path, tmp_path: Path
) -> None:
    # `sub` holds no `.git`: git left to itself would find `top`'s above it, or the one the
    # caller's GIT_DIR names.
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    _index(other / ".git", [(0o160000, b"theirs")])
    _index(top / ".git", [(0o160000, b"ours")])
    sub = top / "sub"
    sub.mkdir()
    places = GitPlaces(sub / ".git", other / ".git", other / ".git")
    env = {**os.environ, "GIT_DIR": str(top / ".git"), "GIT_WORK_TREE": str(top)}
    assert set(gitlink_entries(places, env)) == {str(sub / "theirs" / ".git")}


def test_the_index_is_read_whole_wherever_the_runner_stands(
    top: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _index(top / ".git", [(0o160000, b"a/one"), (0o160000, b"b/two")])
    (top / "a").mkdir()
    monkeypatch.chdir(top / "a")
    assert set(gitlink_entries(_places(top), os.environ)) == {
        str(top / "a" / "one" / ".git"),
        str(top / "b" / "two" / ".git"),
    }


def test_the_work_tree_is_pinned_whatever_the_config_says(top: Path) -> None:
    # A work tree above `top` would make `top` a subfolder of it, and list only what is below.
    git(top, "config", "core.worktree", str(top.parent))
    _index(top / ".git", [(0o160000, b"sub")])
    assert set(gitlink_entries(_places(top), os.environ)) == {str(top / "sub" / ".git")}


def test_a_linked_checkout_lists_its_own_index(top: Path, tmp_path: Path) -> None:
    (top / "a.txt").write_text("a", encoding="utf-8")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "a")
    linked = tmp_path / "linked"
    git(top, "worktree", "add", "-q", str(linked))
    places = _places(linked)
    _index(places.git_dir, [(0o160000, b"in-linked")])
    _index(top / ".git", [(0o160000, b"in-main")])
    assert set(gitlink_entries(places, os.environ)) == {str(linked.resolve() / "in-linked/.git")}


def test_the_list_stops_at_a_thousand_gitlinks(top: Path) -> None:
    _index(top / ".git", [(0o160000, f"s{n:04}".encode()) for n in range(1002)])
    found = gitlink_entries(_places(top), os.environ)
    assert len(found) == 1000
    assert str(top / "s0999" / ".git") in found and str(top / "s1000" / ".git") not in found


def test_an_index_git_cannot_read_lists_nothing(top: Path) -> None:
    (top / ".git" / "index").write_bytes(b"DIRC garbage")
    assert gitlink_entries(_places(top), os.environ) == {}


def test_a_work_tree_that_is_gone_lists_nothing(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    assert gitlink_entries(GitPlaces(gone / ".git", gone / ".git", gone / ".git"), {}) == {}


def test_a_git_that_hangs_on_the_index_is_given_up(
    top: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.mkfifo(top / ".git" / "index")  # git's open() of it waits for a writer forever
    monkeypatch.setattr(links, "GIT_TIMEOUT_S", 1.0)
    assert gitlink_entries(_places(top), os.environ) == {}
