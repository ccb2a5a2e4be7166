"""Every path stays inside the root: `..`, absolute paths, symlinks, hard links, .git."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.workspace.files import Files
from runner.workspace.paths import Confinement, WorkspaceError


def test_relative_path_inside_the_root_resolves(paths: Confinement, root: Path) -> None:
    assert paths.resolve("a/../b.txt") == root.resolve() / "b.txt"


def test_absolute_path_inside_the_root_is_accepted(paths: Confinement, root: Path) -> None:
    assert paths.resolve(str(root / "x.txt")) == root.resolve() / "x.txt"


@pytest.mark.parametrize("path", ["../outside/secret.txt", "a/../../outside/secret.txt", ".."])
def test_dotdot_out_of_the_root_is_refused(files: Files, path: str) -> None:
    with pytest.raises(WorkspaceError, match="outside the workspace root"):
        files.read(path)


def test_absolute_path_outside_the_root_is_refused(files: Files) -> None:
    with pytest.raises(WorkspaceError, match="outside the workspace root"):
        files.read("/etc/passwd")


def test_symlink_to_a_file_outside_is_refused_for_read_and_write(
    files: Files, root: Path, outside: Path
) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(WorkspaceError, match="outside"):
        files.read("link.txt")
    with pytest.raises(WorkspaceError, match="outside"):
        files.write("link.txt", "pwned")
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "secret\n"


def test_symlinked_folder_out_of_the_root_is_refused(
    files: Files, root: Path, outside: Path
) -> None:
    (root / "dir").symlink_to(outside, target_is_directory=True)
    with pytest.raises(WorkspaceError, match="outside"):
        files.write("dir/new/deep.txt", "x")
    assert not (outside / "new").exists()


def test_symlink_to_a_file_that_does_not_exist_yet_is_refused(
    files: Files, root: Path, outside: Path
) -> None:
    (root / "dangling.txt").symlink_to(outside / "created.txt")
    with pytest.raises(WorkspaceError, match="outside"):
        files.write("dangling.txt", "x")
    assert not (outside / "created.txt").exists()


def test_symlink_inside_the_root_is_followed(files: Files, root: Path) -> None:
    (root / "real.txt").write_text("hello\n", encoding="utf-8")
    (root / "alias.txt").symlink_to(root / "real.txt")
    assert files.read("alias.txt") == "1 | hello"


def test_a_hard_linked_file_is_refused_for_read_and_write(
    files: Files, root: Path, outside: Path
) -> None:
    os.link(outside / "secret.txt", root / "hard.txt")
    with pytest.raises(WorkspaceError, match="hard links"):
        files.read("hard.txt")
    with pytest.raises(WorkspaceError, match="hard links"):
        files.write("hard.txt", "pwned")
    with pytest.raises(WorkspaceError, match="hard links"):
        files.replace("hard.txt", [("secret", "pwned")])
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "secret\n"


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".git/hooks/pre-commit",
        "./.git/HEAD",
        "sub/.git/hooks/post-checkout",
        "a/b/.git/config",
        "sub/.GIT/hooks/post-checkout",
        "wt/.git",
    ],
)
def test_writes_into_any_dot_git_are_refused(files: Files, root: Path, path: str) -> None:
    (root / ".git").mkdir()
    (root / "sub" / ".git" / "hooks").mkdir(parents=True)
    with pytest.raises(WorkspaceError, match=r"\.git"):
        files.write(path, "x")
    assert not (root / path).exists()


def test_a_folder_merely_named_like_git_can_be_written(files: Files, root: Path) -> None:
    files.write("docs/.github/x.md", "x")
    files.write("my.git/x", "x")
    assert (root / "docs" / ".github" / "x.md").is_file()


def test_reading_the_command_output_folder_is_allowed(paths: Confinement, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    assert paths.resolve(str(tmp_path / "out" / "command-1.log")).name == "command-1.log"
    with pytest.raises(WorkspaceError, match="outside"):
        paths.resolve(str(tmp_path / "out" / "command-1.log"), write=True)


def test_base_of_names_the_root_or_the_readable_folder(root: Path, tmp_path: Path) -> None:
    extra = tmp_path / "out"
    extra.mkdir()
    paths = Confinement(root, readable=(extra,))
    assert paths.base_of(paths.resolve("a.txt")) == root.resolve()
    assert paths.base_of(paths.resolve(str(extra / "b.txt"))) == extra.resolve()


def test_a_folder_that_goes_away_while_it_is_resolved_is_a_refusal(
    paths: Confinement, monkeypatch: pytest.MonkeyPatch
) -> None:
    """realpath reads a symlink it has just seen; swapped for a folder in between, the read
    fails (EINVAL): the model reads a refusal, not a crash."""

    def swapped(path: object) -> str:
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr("runner.workspace.paths.os.path.realpath", swapped)
    with pytest.raises(WorkspaceError, match="'x/y' cannot be resolved: Invalid argument"):
        paths.resolve("x/y")


def test_resolving_a_hard_linked_file_for_a_write_is_refused(
    paths: Confinement, root: Path, outside: Path
) -> None:
    """The check before any open: the message says why a write in particular is refused."""
    os.link(outside / "secret.txt", root / "hard.txt")
    with pytest.raises(WorkspaceError, match="has 2 hard links; a write could change a file"):
        paths.resolve("hard.txt", write=True)
    assert paths.resolve("hard.txt") == root.resolve() / "hard.txt"  # reads check on open


def test_a_path_the_sandbox_locks_is_refused_for_writes_only(root: Path, tmp_path: Path) -> None:
    from runner.workspace import Sandbox, confine

    out = root / "agent-runs"
    (out / "tasks").mkdir(parents=True)
    (out / "tasks" / "prompt.yaml").write_text("prompt: x\n", encoding="utf-8")
    sandbox = Sandbox("landlock", "python3", root, tmp_path, locked=(out,))
    paths = Confinement(root)
    with confine(sandbox):
        for given in ("agent-runs/tasks/prompt.yaml", "agent-runs/new.txt", str(out / "x")):
            with pytest.raises(WorkspaceError, match="keeps for its own files"):
                paths.resolve(given, write=True)
        assert paths.resolve("agent-runs/tasks/prompt.yaml") == out / "tasks" / "prompt.yaml"
        assert paths.resolve("agent-runsX", write=True) == root / "agent-runsX"
    assert paths.resolve("agent-runs/new.txt", write=True) == out / "new.txt"
