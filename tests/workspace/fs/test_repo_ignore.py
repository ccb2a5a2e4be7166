"""The repository's ignore files above a workdir: found as git finds them, read only inside it."""

from __future__ import annotations

from pathlib import Path

from runner.workspace.fs.repo_ignore import repository_rules
from runner.workspace.fs.tree import is_ignored, list_tree


def _repo(tmp_path: Path) -> Path:
    (tmp_path / "repo" / "pkg" / "web").mkdir(parents=True)
    (tmp_path / "repo" / ".gitignore").write_text("*.log\n", encoding="utf-8")
    (tmp_path / "repo" / "pkg" / ".gitignore").write_text("dist/\n", encoding="utf-8")
    for name in ("a.py", "b.log", "dist/x.js"):
        (tmp_path / "repo" / "pkg" / "web" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "repo" / "pkg" / "web" / name).write_text("", encoding="utf-8")
    return tmp_path / "repo"


def test_every_gitignore_from_the_repository_root_down_applies(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / ".git").mkdir()
    listing = list_tree(repo / "pkg" / "web", 100)
    assert listing.paths == ["a.py"]


def test_a_folder_without_git_takes_no_rules_from_above(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert repository_rules(repo / "pkg" / "web", 1000) == []


def test_a_git_file_pointing_outside_the_repository_is_not_followed(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    outside = tmp_path / "elsewhere"
    (outside / "info").mkdir(parents=True)
    (outside / "info" / "exclude").write_text("a.py\n", encoding="utf-8")
    (repo / ".git").write_text(f"gitdir: {outside}\n", encoding="utf-8")
    rules = repository_rules(repo / "pkg" / "web", 1000)
    assert not is_ignored(repo / "pkg" / "web" / "a.py", False, rules)


def test_a_git_file_pointing_inside_the_repository_gives_its_exclude_file(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "modules" / "info").mkdir(parents=True)
    (repo / "modules" / "info" / "exclude").write_text("a.py\n", encoding="utf-8")
    (repo / ".git").write_text("gitdir: modules\n", encoding="utf-8")
    rules = repository_rules(repo / "pkg" / "web", 1000)
    assert is_ignored(repo / "pkg" / "web" / "a.py", False, rules)


def test_a_workdir_the_repository_ignores_still_lists_its_files(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / ".git").mkdir()
    (repo / ".gitignore").write_text("pkg/\n", encoding="utf-8")
    assert "a.py" in list_tree(repo / "pkg" / "web", 100).paths
