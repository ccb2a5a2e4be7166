"""Confinement's edges (issue 21): empty and NUL paths, the root itself, directories given to file
tools, a worktree's `.git` file, a workdir that is a symlink, and readable extra folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.workspace.files import Files
from runner.workspace.paths import Confinement, WorkspaceError


@pytest.mark.parametrize("path", ["", "   ", "\t\n"])
def test_an_empty_or_whitespace_path_is_refused_with_a_hint(paths: Confinement, path: str) -> None:
    with pytest.raises(WorkspaceError, match="the path is empty"):
        paths.resolve(path)


@pytest.mark.parametrize("path", ["a\x00b.txt", "\x00"])
def test_a_nul_byte_gives_the_confinement_error_not_a_value_error(files: Files, path: str) -> None:
    with pytest.raises(WorkspaceError, match="NUL byte"):
        files.read(path)
    with pytest.raises(WorkspaceError, match="NUL byte"):
        files.write(path, "x")


def test_the_root_is_shown_to_the_model_as_dot(paths: Confinement, root: Path) -> None:
    assert paths.relative(paths.resolve(".")) == "."
    assert paths.relative(paths.resolve(str(root))) == "."
    assert paths.relative(paths.resolve("a/b.txt")) == "a/b.txt"


def test_a_path_outside_the_root_is_shown_whole(paths: Confinement, outside: Path) -> None:
    assert paths.relative(outside.resolve()) == str(outside.resolve())


def test_a_directory_given_to_a_file_tool_is_refused(files: Files, root: Path) -> None:
    (root / "src").mkdir()
    with pytest.raises(WorkspaceError, match="'src' is a directory, not a file"):
        files.write("src", "x")
    with pytest.raises(WorkspaceError, match="is a directory"):
        files.replace("src", [("a", "b")])
    assert (root / "src").is_dir()


def test_a_worktrees_git_file_cannot_be_written(files: Files, root: Path) -> None:
    gitfile = root / ".git"
    gitfile.write_text("gitdir: /elsewhere/.git/worktrees/w\n", encoding="utf-8")
    with pytest.raises(WorkspaceError, match=r"is a \.git file"):
        files.write(".git", "gitdir: /tmp/evil\n")
    assert gitfile.read_text(encoding="utf-8") == "gitdir: /elsewhere/.git/worktrees/w\n"


def test_a_file_named_like_git_is_writable(files: Files, root: Path) -> None:
    files.write(".gitignore", "x\n")
    files.write("docs/.git.md", "x\n")
    assert (root / ".gitignore").exists() and (root / "docs" / ".git.md").exists()


def test_a_workdir_that_is_a_symlink_confines_to_its_target(tmp_path: Path, root: Path) -> None:
    link = tmp_path / "link-to-root"
    link.symlink_to(root, target_is_directory=True)
    paths = Confinement(link)
    assert paths.root == root.resolve()
    assert paths.resolve("a.txt") == root.resolve() / "a.txt"
    assert paths.resolve(str(link / "b" / "c.txt")) == root.resolve() / "b" / "c.txt"
    assert paths.relative(paths.resolve(str(link))) == "."
    with pytest.raises(WorkspaceError, match="outside"):
        paths.resolve("../outside/secret.txt")
    Files(paths).write("new.txt", "x")
    assert (root / "new.txt").read_text(encoding="utf-8") == "x"


def test_a_missing_workdir_is_an_error_at_once(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Confinement(tmp_path / "missing")


def test_a_readable_folder_can_be_read_but_not_written(tmp_path: Path, root: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "notes.txt").write_text("notes\n", encoding="utf-8")
    paths = Confinement(root, readable=(extra,))
    assert paths.resolve(str(extra / "notes.txt")) == extra.resolve() / "notes.txt"
    with pytest.raises(WorkspaceError, match="outside"):
        paths.resolve(str(extra / "notes.txt"), write=True)
    with pytest.raises(WorkspaceError, match="outside"):
        Confinement(root).resolve(str(extra / "notes.txt"))
