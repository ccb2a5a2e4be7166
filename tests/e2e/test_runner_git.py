"""The runner's own git through the CLI (DESIGN 18): what the agent writes steers none of it.

Each scenario's workdir `w/` is a git repository of its own (so the agent's sandbox may write its
`.git`), with an uncommitted change (`dirty.txt`) and an untracked file (`extra.txt`). The agent
plants what would make the runner's git run a program (a clean filter that writes its
environment to `leak.txt` beside `w/`, where only an unconfined process can write) or write
elsewhere (the worktree's `.git` file pointed at the original checkout's git folder).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git
from tests.e2e.conftest import (
    API_KEY,
    Done,
    Scenario,
    Started,
    complete,
    default_args,
    kill,
    prepare,
    start,
    tool_reply,
)

FILES = {"a.txt": "a\n", "dirty.txt": "uncommitted\n", "extra.txt": "untracked\n"}
WORKTREE = {"isolation": "worktree"}
FILTER = 'git config filter.x.clean "env > {leak}; cat" && echo "* filter=x" > .gitattributes'
REDIRECT = (
    "git init -q ev && git -C ev -c user.name=a -c user.email=a@a commit -q --allow-empty -m x"
    " && cd ev && " + FILTER.replace(".gitattributes", "../.gitattributes") + " && cd .."
    # `;`: the `.git` file is read-only under bubblewrap (DESIGN 24); the write fails there.
    '; echo "gitdir: ev/.git" > .git; echo new > new.txt'
)


def repository(root: Path, scenario: Scenario) -> None:
    """`root/w` as a repository with one commit, then dirty.txt modified and extra.txt new."""
    prepare(scenario, root)
    work = root / "w"
    (work / "dirty.txt").write_text("committed\n", encoding="utf-8")
    (work / "extra.txt").unlink()
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "start")
    prepare(scenario, root)


def attack(command: str, task: dict[str, Any], **more: Any) -> Scenario:
    return Scenario(
        task=task,
        files=FILES,
        steps=[tool_reply("execute_command", command=command), complete("done")],
        **more,
    )


def suite(*names: str) -> dict[str, Any]:
    """Tasks that each write `<name>.txt`, side by side in worktrees of one repository."""
    return {
        "defaults": {"workdir": "w", "isolation": "worktree"},
        "tasks": [{"name": name, "prompt": f"route-{name}: write."} for name in names],
    }


def scenarios(base: Path) -> dict[str, Scenario]:
    return {
        "redirect": attack(REDIRECT.format(leak=base / "redirect" / "leak.txt"), WORKTREE),
        "original_index": attack(
            "git init -q nested; sed -i 's#/worktrees/.*##' .git; echo new > new.txt", WORKTREE
        ),
        "changed_files": attack(
            # Same size, new mtime: git status hashes the file, through the filter.
            FILTER.format(leak=base / "changed_files" / "leak.txt")
            + "; touch -d 2001-01-01 a.txt && echo n > new.txt",  # `;`: .git is read-only
            {"success": {"require": {"changed_files": True}}},
        ),
        "read_only": Scenario(
            task=WORKTREE,
            files=FILES,
            steps=[tool_reply("read_file", path="a.txt"), complete("read it")],
        ),
        "parallel": Scenario(
            task=suite("alpha", "beta"),
            files=FILES,
            args=default_args("--jobs", "2"),
            routes={
                f"route-{name}": [
                    tool_reply("write_to_file", path=f"{name}.txt", content=f"{name}\n"),
                    complete(),
                ]
                for name in ("alpha", "beta")
            },
        ),
    }


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, tuple[Done, str]]:
    """Every scenario at once: (the run, `git ls-files -s` of the original before it)."""
    started: dict[str, tuple[Started, str]] = {}
    try:
        for name, scenario in scenarios(module_dir).items():
            root = module_dir / name
            repository(root, scenario)
            started[name] = (start(scenario, root), git(root / "w", "ls-files", "-s"))
        return {name: (run.wait(), index) for name, (run, index) in started.items()}
    finally:
        for run, _ in started.values():
            kill(run.process)
            run.server.stop()


def test_a_filter_behind_an_agent_written_gitdir_never_runs(
    runs: dict[str, tuple[Done, str]],
) -> None:
    done, _ = runs["redirect"]
    leak = done.root / "leak.txt"
    assert not leak.exists(), API_KEY in leak.read_text(encoding="utf-8")
    assert done.code == 0, done.explain()
    patch = (done.out / "patches" / "t.patch").read_text(encoding="utf-8")
    assert "new.txt" in patch and API_KEY not in patch


def test_a_git_file_pointed_at_the_original_leaves_its_index_alone(
    runs: dict[str, tuple[Done, str]],
) -> None:
    done, before = runs["original_index"]
    assert done.code == 0, done.explain()
    work = done.root / "w"
    assert git(work, "ls-files", "-s") == before
    assert git(work, "diff", "--cached", "--name-only") == ""
    assert "new.txt" in (done.out / "patches" / "t.patch").read_text(encoding="utf-8")


def test_changed_files_runs_no_filter_of_the_agents(runs: dict[str, tuple[Done, str]]) -> None:
    done, _ = runs["changed_files"]
    assert not (done.root / "leak.txt").exists()
    assert done.code == 0, done.explain()


def test_a_read_only_task_leaves_no_patch(runs: dict[str, tuple[Done, str]]) -> None:
    done, _ = runs["read_only"]
    assert done.code == 0, done.explain()
    assert done.task()["patch"] is None
    assert not (done.out / "patches" / "t.patch").exists()


def test_the_patches_of_two_parallel_tasks_both_apply_to_the_checkout(
    runs: dict[str, tuple[Done, str]], tmp_path: Path
) -> None:
    done, _ = runs["parallel"]
    assert done.code == 0, done.explain()
    copy = tmp_path / "copy"  # the original checkout as it is, uncommitted changes included
    shutil.copytree(done.root / "w", copy, symlinks=True)
    for name in ("alpha", "beta"):
        git(copy, "apply", str(done.out / "patches" / f"{name}.patch"))
    assert (copy / "alpha.txt").read_text(encoding="utf-8").strip() == "alpha"
    assert (copy / "beta.txt").read_text(encoding="utf-8").strip() == "beta"
    assert (copy / "dirty.txt").read_text(encoding="utf-8") == "uncommitted\n"


def test_the_header_names_the_snapshot_the_patch_starts_from(
    runs: dict[str, tuple[Done, str]],
) -> None:
    done, _ = runs["parallel"]
    work = done.root / "w"
    head = git(work, "rev-parse", "HEAD").strip()
    for record in done.logs():
        snapshot = record.header["checkout"]["isolation"]["snapshot"]
        assert snapshot != head
        # The snapshot is HEAD plus the uncommitted changes the task found.
        assert git(work, "rev-parse", f"{snapshot}^") == head + "\n"
        assert git(work, "show", f"{snapshot}:dirty.txt") == "uncommitted\n"
        assert git(work, "show", f"{snapshot}:extra.txt") == "untracked\n"
