"""The `.git` guard (runner.workspace.git.guard, DESIGN 24): found by hand, recorded, restored.

Everything in the repository is hostile: links are not followed, FIFOs do not block, big files
are fingerprinted, and what was changed, added, removed or moved aside is put back and named.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.workspace.git.guard import git_places, protected, record
from tests.conftest import git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work = tmp_path / "w"
    work.mkdir()
    (work / "a.txt").write_text("a\n", encoding="utf-8")
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "start")
    return work


def test_the_repository_is_found_at_or_above_the_workdir(repo: Path) -> None:
    (repo / "sub").mkdir()
    places = git_places(repo / "sub")
    assert places is not None
    assert places.entry == repo.resolve() / ".git"
    assert places.git_dir == places.common_dir == repo.resolve() / ".git"


def test_a_gitdir_file_and_its_commondir_are_followed_by_hand(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "worktrees" / "x").mkdir(parents=True)
    (store / "worktrees" / "x" / "commondir").write_text("../..\n", encoding="utf-8")
    work = tmp_path / "w"
    work.mkdir()
    (work / ".git").write_text(f"gitdir: {store}/worktrees/x\n", encoding="utf-8")
    places = git_places(work)
    assert places is not None
    assert places.git_dir == (store / "worktrees" / "x").resolve()
    assert places.common_dir == store.resolve()


def test_a_git_fifo_is_no_repository(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".git")  # opening it would block
    assert git_places(tmp_path) is None


def test_bwrap_binds_the_entry_read_only_or_pins_it_when_writable(repo: Path) -> None:
    places = git_places(repo)
    assert places is not None
    locked, pinned = protected(places, writable=False)
    assert locked == (places.entry,) and pinned == ()
    locked, pinned = protected(places, writable=True)
    assert pinned == (places.entry,)
    assert {p.name for p in locked} == {"config", "hooks", "info"}


def test_every_planted_file_is_named_and_put_back(repo: Path) -> None:
    places = git_places(repo)
    assert places is not None
    before = record(places)
    dot = repo / ".git"
    config = (dot / "config").read_bytes()
    with (dot / "config").open("a", encoding="utf-8") as out:
        out.write("[core]\n\tfsmonitor = sh -c evil\n")
    (dot / "hooks" / "pre-commit").write_text("#!/bin/sh\nevil\n", encoding="utf-8")
    (dot / "hooks" / "pre-commit").chmod(0o755)
    (dot / "info" / "attributes").write_text("* filter=x\n", encoding="utf-8")
    (dot / "commondir").write_text("/tmp/elsewhere\n", encoding="utf-8")
    (dot / "info" / "exclude").unlink()
    changes, failed = before.restore()
    assert failed == []
    assert set(changes) == {
        ".git/config changed",
        ".git/hooks/pre-commit added (file)",
        ".git/info/attributes added (file)",
        ".git/commondir added (file)",
        ".git/info/exclude removed",
    }
    assert (dot / "config").read_bytes() == config
    assert not (dot / "hooks" / "pre-commit").exists()
    assert not (dot / "commondir").exists()
    assert (dot / "info" / "exclude").is_file()
    assert before.restore() == ([], [])


def test_an_executable_bit_alone_is_a_change(repo: Path) -> None:
    places = git_places(repo)
    assert places is not None
    sample = repo / ".git" / "hooks" / "pre-commit.sample"
    sample.chmod(0o644)
    before = record(places)
    sample.chmod(0o755)
    changes, _ = before.restore()
    assert changes == [".git/hooks/pre-commit.sample changed"]
    assert not os.access(sample, os.X_OK)


def test_a_folder_moved_aside_for_a_file_comes_back(repo: Path, tmp_path: Path) -> None:
    places = git_places(repo)
    assert places is not None
    before = record(places)
    (repo / ".git").rename(repo / ".git-moved")
    (repo / ".git").write_text(f"gitdir: {tmp_path}/evil\n", encoding="utf-8")
    changes, failed = before.restore()
    assert changes[0] == ".git replaced (a dir, now a file)" and failed == []
    assert (repo / ".git").is_dir() and not (repo / ".git-moved").exists()
    assert git(repo, "log", "--format=%s") == "start\n"


def test_links_fifos_and_big_files_are_recorded_without_being_followed(repo: Path) -> None:
    places = git_places(repo)
    assert places is not None
    hooks = repo / ".git" / "hooks"
    (hooks / "big").write_bytes(b"x" * (2 << 20))
    before = record(places)
    os.mkfifo(hooks / "pipe")  # reading it would block
    (hooks / "link").symlink_to("/etc/passwd")
    (hooks / "big").write_bytes(b"y" * (2 << 20))
    (repo / ".git" / "info").rename(repo / "info-aside")
    (repo / ".git" / "info").symlink_to("/etc")
    changes, failed = before.restore()
    assert ".git/hooks/pipe added (other)" in changes
    assert ".git/hooks/link added (symlink)" in changes
    assert ".git/info replaced (a dir, now a symlink)" in changes
    assert ".git/hooks/big changed" in changes
    assert [f for f in failed if "big" in f], failed  # over 1 MiB: not kept, so not restored
    assert not (hooks / "pipe").exists() and not (hooks / "link").is_symlink()
    assert (repo / ".git" / "info").is_dir() and not (repo / ".git" / "info").is_symlink()
    assert (repo / ".git" / "info" / "exclude").is_file()
    assert Path("/etc/passwd").is_file()
