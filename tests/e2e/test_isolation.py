"""`isolation: worktree` through the CLI (DESIGN 15): tasks of one repository side by side.

Each scenario folder is a git repository holding the task file and its workdir `w/`, with the
artifacts folder `OUT/` inside it (ignored), as in a CI checkout. The workdir carries
uncommitted changes into the run: a modified tracked file and an untracked one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git
from tests.e2e.conftest import (
    MODEL,
    Done,
    Scenario,
    call,
    complete,
    default_args,
    log_schema_errors,
    prepare,
    start,
    tool_reply,
)
from tests.fakes.model_server import FakeModelServer, reply

FILES = {
    "shared.txt": "one\n",
    "dirty.txt": "uncommitted\n",
    "extra.txt": "untracked\n",
    "keep.txt": "keep\n",
}
"""The workdir as the run finds it; `repository` commits dirty.txt as `committed`, no extra.txt."""
# The check proves it runs in the worktree: the carried-over changes and the task's file are there.
CHECK = "grep -q uncommitted dirty.txt && test -f extra.txt && test -f {own}.txt"


def suite(**defaults: Any) -> dict[str, Any]:
    return {
        "defaults": {"workdir": "w", **defaults},
        "tasks": [
            {
                "name": name,
                "prompt": f"route-{name}: do your part.",
                "success": {"check": CHECK.format(own=name)},
            }
            for name in ("alpha", "beta")
        ],
    }


ROUTES = {
    # Both edit shared.txt: in one checkout they would trample each other.
    "route-alpha": [
        tool_reply("write_to_file", path="alpha.txt", content="from alpha\n"),
        tool_reply("write_to_file", path="shared.txt", content="alpha was here\n"),
        complete("alpha done"),
    ],
    "route-beta": [
        reply(call("execute_command", command="echo 'from beta' > beta.txt && rm keep.txt")),
        tool_reply("write_to_file", path="shared.txt", content="beta was here\n"),
        complete("beta done"),
    ],
}


def repository(root: Path, scenario: Scenario) -> None:
    """`root` as a repository with one commit, then the uncommitted changes of FILES."""
    prepare(scenario, root)
    (root / ".gitignore").write_text("OUT/\nOUT2/\nstdout.txt\nstderr.txt\n", encoding="utf-8")
    (root / "w" / "dirty.txt").write_text("committed\n", encoding="utf-8")
    (root / "w" / "extra.txt").unlink()
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    prepare(scenario, root)


def state(root: Path) -> dict[str, Any]:
    """What `untouched` means: status, refs, worktrees, stash, and every workdir file's bytes."""
    return {
        "status": git(root, "status", "--porcelain", "--untracked-files=all"),
        "refs": git(root, "for-each-ref"),
        "worktrees": git(root, "worktree", "list", "--porcelain"),
        "files": {p.name: p.read_bytes() for p in sorted((root / "w").iterdir())},
    }


def run(root: Path, scenario: Scenario, routes: dict[str, Any] | None = None) -> Done:
    with FakeModelServer([], routes=routes or ROUTES) as server:
        return start(scenario, root, server).wait()


@pytest.fixture(scope="module")
def isolated(module_dir: Path) -> tuple[Done, dict[str, Any], dict[str, Any]]:
    """Two tasks on one repository, --jobs 2 --isolation worktree: (run, state before, after)."""
    root = module_dir / "isolated"
    scenario = Scenario(
        task=suite(),
        files=FILES,
        args=default_args("--jobs", "2", "--isolation", "worktree"),
    )
    repository(root, scenario)
    before = state(root)
    done = run(root, scenario)
    return done, before, state(root)


def test_two_tasks_on_one_repository_both_pass_in_worktrees(
    isolated: tuple[Done, dict[str, Any], dict[str, Any]],
) -> None:
    done, _, _ = isolated
    assert done.code == 0, done.explain()
    assert {t["name"]: t["status"] for t in done.summary()["tasks"]} == {
        "alpha": "passed",
        "beta": "passed",
    }


def test_the_original_checkout_is_untouched(
    isolated: tuple[Done, dict[str, Any], dict[str, Any]],
) -> None:
    done, before, after = isolated
    assert after == before, done.explain()
    assert not (done.root / "w" / "alpha.txt").exists()


@pytest.mark.parametrize("name", ["alpha", "beta"])
def test_each_patch_applies_to_the_original_checkout_as_it_is(
    isolated: tuple[Done, dict[str, Any], dict[str, Any]], name: str, tmp_path: Path
) -> None:
    done, _, _ = isolated
    patch = done.out / "patches" / f"{name}.patch"
    copy = tmp_path / "copy"  # the checkout, its uncommitted changes included
    shutil.copytree(done.root, copy, symlinks=True)
    git(copy, "apply", "--check", str(patch))
    git(copy, "apply", str(patch))
    work = copy / "w"
    # The task's own change, new files included; beta's deletion too.
    assert (work / f"{name}.txt").read_text(encoding="utf-8").strip() == f"from {name}"
    assert (work / "shared.txt").read_text(encoding="utf-8").strip() == f"{name} was here"
    assert (work / "keep.txt").exists() == (name == "alpha")
    # The carried-over changes were there already: they are in no patch (DESIGN 18).
    assert (work / "dirty.txt").read_text(encoding="utf-8") == "uncommitted\n"
    text = patch.read_text(encoding="utf-8")
    assert "dirty.txt" not in text and "extra.txt" not in text
    assert "OUT/" not in text  # the artifacts are not carried


def test_the_reports_name_the_patches(
    isolated: tuple[Done, dict[str, Any], dict[str, Any]],
) -> None:
    done, _, _ = isolated
    assert done.task("alpha")["patch"] == "OUT/patches/alpha.patch"
    assert done.task("alpha")["worktree"] is None
    system_out = done.testcase("beta").findtext("system-out") or ""
    assert "patch: OUT/patches/beta.patch" in system_out
    assert "patch=OUT/patches/alpha.patch" in done.stdout


def test_the_log_records_the_original_workdir_head_and_patch(
    isolated: tuple[Done, dict[str, Any], dict[str, Any]],
) -> None:
    done, _, _ = isolated
    head = git(done.root, "rev-parse", "HEAD").strip()
    for record in done.logs():
        checkout = record.header["checkout"]
        name = record.header["task"]["name"]
        assert checkout["workdir"] == "w"
        assert checkout["isolation"]["head"] == head
        assert checkout["isolation"]["patch"] == f"patches/{name}.patch"
        # The worktree was removed, and with it git's record of it.
        assert not Path(checkout["isolation"]["worktree"]).exists()


@pytest.fixture(scope="module")
def refused(module_dir: Path) -> tuple[Done, dict[str, Any]]:
    root = module_dir / "refused"
    scenario = Scenario(task=suite(), files=FILES, args=default_args("--jobs", "2"))
    repository(root, scenario)
    before = state(root)
    return run(root, scenario), before


def test_sharing_a_workdir_without_isolation_is_refused(
    refused: tuple[Done, dict[str, Any]],
) -> None:
    done, before = refused
    assert done.code == 2, done.explain()
    assert "'alpha'" in done.stderr and "'beta'" in done.stderr
    assert "isolation: worktree" in done.stderr
    assert done.requests == []
    assert state(done.root) == before


def test_read_only_tasks_may_share_a_workdir(module_dir: Path) -> None:
    root = module_dir / "read-only"
    routes = {
        f"route-{n}": [tool_reply("read_file", path="shared.txt"), complete("read")]
        for n in ("alpha", "beta")
    }
    read_only = {"tools": {"deny": ["write_to_file", "replace_in_file", "execute_command"]}}
    task = suite(**read_only)
    for entry in task["tasks"]:
        entry["success"] = {}
    scenario = Scenario(task=task, files=FILES, args=default_args("--jobs", "2"))
    repository(root, scenario)
    done = run(root, scenario, routes)
    assert done.code == 0, done.explain()


def test_keep_worktrees_leaves_the_worktree_and_names_it(module_dir: Path) -> None:
    root = module_dir / "keep"
    task = suite(isolation="worktree")
    task["tasks"] = task["tasks"][:1]
    scenario = Scenario(task=task, files=FILES, args=default_args("--keep-worktrees"))
    repository(root, scenario)
    done = run(root, scenario)
    assert done.code == 0, done.explain()
    kept = Path(done.task("alpha")["worktree"])
    try:
        assert (kept / "w" / "alpha.txt").read_text(encoding="utf-8").strip() == "from alpha"
        assert str(kept) in git(root, "worktree", "list")
        assert f"worktree: {kept}" in (done.testcase("alpha").findtext("system-out") or "")
    finally:
        git(root, "worktree", "remove", "--force", str(kept))


def test_a_workdir_outside_git_is_a_configuration_error(tmp_path: Path) -> None:
    scenario = Scenario(task={"isolation": "worktree"}, files=FILES, steps=[complete()])
    done = run(tmp_path, scenario)
    assert done.code == 2, done.explain()
    assert "t.yaml:" in done.stderr and "not in a git repository" in done.stderr
    assert done.requests == []


def test_a_repository_without_a_commit_is_a_configuration_error(tmp_path: Path) -> None:
    scenario = Scenario(task={"isolation": "worktree"}, files=FILES, steps=[complete()])
    prepare(scenario, tmp_path)
    git(tmp_path, "init", "-q")
    done = run(tmp_path, scenario)
    assert done.code == 2, done.explain()
    assert "has no commit yet" in done.stderr


def test_resume_starts_from_the_patch_in_a_fresh_worktree(tmp_path: Path) -> None:
    task = {
        "isolation": "worktree",
        "prompt": "route-first: start.",
        "success": {"check": "test -f first.txt && test -f second.txt"},
    }
    scenario = Scenario(task=task, files=FILES)
    repository(tmp_path, scenario)
    first = run(
        tmp_path,
        scenario,
        {"route-first": [tool_reply("write_to_file", path="first.txt", content="1\n"), complete()]},
    )
    assert first.code == 1, first.explain()  # second.txt is missing: the check fails
    (log,) = (tmp_path / "OUT" / "sessions").glob("*.jsonl")
    header = json.loads(log.read_text(encoding="utf-8").splitlines()[0])
    assert header["checkout"]["isolation"]["patch"] == "patches/t.patch"
    # The worktree of the first run is gone: only its patch carries first.txt over.
    assert not (tmp_path / "w" / "first.txt").exists()
    resume = Scenario(
        task=task, files=FILES, args=["resume", str(log), "--model", MODEL, "--out", "OUT2"]
    )
    second = run(
        tmp_path,
        resume,
        {"route-first": [tool_reply("write_to_file", path="second.txt", content="2"), complete()]},
    )
    assert second.code == 0, second.explain()
    patch = (tmp_path / "OUT2" / "patches" / "t.patch").read_text(encoding="utf-8")
    assert "first.txt" in patch and "second.txt" in patch and "extra.txt" not in patch
    assert not (tmp_path / "w" / "second.txt").exists()


def test_the_logs_match_the_schema(
    isolated: tuple[Done, dict[str, Any], dict[str, Any]],
) -> None:
    done, _, _ = isolated
    for record in done.logs():
        assert log_schema_errors(record.path) == []


def test_without_git_a_worktree_task_is_a_configuration_error(tmp_path: Path) -> None:
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    scenario = Scenario(
        task={"isolation": "worktree"}, files=FILES, steps=[complete()], env={"PATH": str(empty)}
    )
    done = run(tmp_path, scenario)
    assert done.code == 2, done.explain()
    assert "isolation: worktree needs git, and git is not installed" in done.stderr
