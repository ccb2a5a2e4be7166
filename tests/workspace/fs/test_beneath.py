"""open_beneath: symlinks inside the root work as before; nothing leads out (openat2 or walk)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.workspace.fs import beneath
from runner.workspace.fs.beneath import EscapeError, open_beneath


@pytest.fixture(params=["openat2", "walk"])
def how(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test twice: with the kernel's openat2, and as on a kernel without it."""
    if request.param == "walk":
        monkeypatch.setattr(beneath, "_openat2_works", False)
    yield str(request.param)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "a.txt").write_text("inside\n", encoding="utf-8")
    (root / "src" / "deep" / "b.txt").write_text("deeper\n", encoding="utf-8")
    (root / ".git").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "a.txt").write_text("SECRET\n", encoding="utf-8")
    (root / "rel").symlink_to("src")
    (root / "abs").symlink_to(root / "src")
    (root / "src" / "deep" / "up").symlink_to("../a.txt")
    (root / "out").symlink_to(tmp_path / "outside")
    (root / "dotdot").symlink_to("../outside")
    (root / "gitlink").symlink_to(".git")
    (root / "loop").symlink_to("loop")
    return root


def read(root: Path, rel: str) -> str:
    fd = open_beneath(root, rel, os.O_RDONLY)
    with os.fdopen(fd, encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.usefixtures("how")
@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("src/a.txt", "inside\n"),
        ("rel/a.txt", "inside\n"),
        ("abs/a.txt", "inside\n"),
        ("abs/deep/up", "inside\n"),
        ("src/deep/../a.txt", "inside\n"),
        ("rel/deep/b.txt", "deeper\n"),
    ],
)
def test_symlinks_that_stay_inside_the_root_are_followed(tree: Path, rel: str, text: str) -> None:
    assert read(tree, rel) == text


@pytest.mark.usefixtures("how")
@pytest.mark.parametrize("rel", ["out/a.txt", "dotdot/a.txt", "../outside/a.txt", "src/../../x"])
def test_a_path_or_symlink_out_of_the_root_is_refused(tree: Path, rel: str) -> None:
    with pytest.raises(EscapeError):
        open_beneath(tree, rel, os.O_RDONLY)


@pytest.mark.usefixtures("how")
def test_an_absolute_path_is_refused(tree: Path) -> None:
    with pytest.raises(EscapeError):
        open_beneath(tree, str(tree / "src" / "a.txt"), os.O_RDONLY)


@pytest.mark.usefixtures("how")
def test_a_symlink_loop_fails_as_open_does(tree: Path) -> None:
    with pytest.raises(OSError, match="symbolic links") as caught:
        open_beneath(tree, "loop", os.O_RDONLY)
    assert not isinstance(caught.value, EscapeError)


@pytest.mark.usefixtures("how")
def test_a_write_creates_missing_folders_and_follows_inside_links(tree: Path) -> None:
    for rel in ("new/sub/c.txt", "rel/d.txt", "abs/deep/e.txt"):
        os.close(open_beneath(tree, rel, os.O_WRONLY | os.O_CREAT, write=True))
    assert (tree / "new" / "sub" / "c.txt").is_file()
    assert (tree / "src" / "d.txt").is_file()
    assert (tree / "src" / "deep" / "e.txt").is_file()


@pytest.mark.usefixtures("how")
@pytest.mark.parametrize("rel", ["gitlink/config", ".git/config", "out/new.txt", "dotdot/n/x"])
def test_a_write_into_git_or_out_of_the_root_is_refused(tree: Path, rel: str) -> None:
    with pytest.raises(EscapeError):
        open_beneath(tree, rel, os.O_WRONLY | os.O_CREAT, write=True)
    assert not (tree / ".git" / "config").exists()
    assert sorted(p.name for p in (tree.parent / "outside").iterdir()) == ["a.txt"]


@pytest.mark.usefixtures("how")
def test_a_missing_file_is_not_found(tree: Path) -> None:
    with pytest.raises(FileNotFoundError):
        open_beneath(tree, "src/missing.txt", os.O_RDONLY)
    with pytest.raises(FileNotFoundError):
        open_beneath(tree, "missing/a.txt", os.O_RDONLY)


def test_openat2_is_used_where_the_kernel_has_it(tree: Path) -> None:
    read(tree, "src/a.txt")
    assert beneath._openat2_works in (True, False)
