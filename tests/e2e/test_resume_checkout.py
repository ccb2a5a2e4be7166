"""`resume` of a downloaded artifact works in the checkout where it runs (DESIGN 12).

Two real git repositories hold the same task: checkout `a` runs it (and fails its check), its
`agent-runs/` is copied into checkout `b` and resumed there; then into `c` after `a` is deleted.
The resumed task is rebuilt from the task file of the checkout `resume` runs in, so the tools edit
that checkout's `src/`, and extensions resolve `${VAR}` again from the resuming environment.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from runner.sessionlog import SessionRecord, find_sessions, read_session
from tests.e2e.conftest import (
    MODEL,
    Done,
    Scenario,
    complete,
    log_schema_errors,
    start,
    tool_reply,
)
from tests.fakes.mcp_test_server import SCRIPT as PROBE_SERVER
from tests.fakes.model_server import FakeModelServer

TASK = {
    "name": "fix",
    "workdir": "../src",
    "prompt": "Create done.txt.",
    "extensions": {
        "probe": {
            "type": "stdio",
            "cmd": sys.executable,
            "args": [str(PROBE_SERVER), "--name", "probe"],
            "envs": {"PROBE_SETTING": "${PROBE_SETTING:-plain-default}"},
        }
    },
    "success": {"check": "test -f done.txt", "retries": 0},
}
FILES = {
    "tasks/t.yaml": yaml.safe_dump(TASK, sort_keys=False),
    "src/notes.txt": "notes\n",
    "README.md": "a checkout\n",
}
RESUME = ["resume", "previous/agent-runs", "--model", MODEL, "--out", "agent-runs"]
FIX = [
    tool_reply("environment"),
    tool_reply("write_to_file", path="done.txt", content="resumed\n"),
    complete("fixed"),
]


def checkout(root: Path) -> Path:
    """A real git repository with the task's files."""
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def invoke(root: Path, args: list[str], steps: list, env: dict[str, str] | None = None) -> Done:
    with FakeModelServer(steps) as server:
        done = start(Scenario(args=args, env=env or {}), root, server).wait()
    (root / "w").rmdir()  # the harness's default workdir, unused here
    return done


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` but git's own, with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def newest(out: Path) -> SessionRecord:
    return max((read_session(p) for p in find_sessions(out)), key=lambda r: r.header["started_at"])


@pytest.fixture(scope="module")
def first(module_dir: Path) -> Done:
    a = checkout(module_dir / "a")
    done = invoke(a, ["run", "tasks/t.yaml", "--model", MODEL, "--out", "agent-runs"], [complete()])
    assert done.code == 1, done.explain()
    return done


@pytest.fixture(scope="module")
def in_b(module_dir: Path, first: Done) -> tuple[Done, dict[str, bytes]]:
    """Resumed in checkout b, with a still on disk: (the run, a's files before the resume)."""
    a, b = first.root, checkout(module_dir / "b")
    shutil.copytree(a / "agent-runs", b / "previous" / "agent-runs")
    before = tree(a)
    return invoke(b, RESUME, FIX), before


@pytest.fixture(scope="module")
def in_c(module_dir: Path, first: Done, in_b: tuple[Done, dict[str, bytes]]) -> Done:
    """Resumed in checkout c after a was deleted, with PROBE_SETTING set."""
    c = checkout(module_dir / "c")
    shutil.copytree(first.root / "agent-runs", c / "previous" / "agent-runs")
    shutil.rmtree(first.root)
    return invoke(c, RESUME, FIX, env={"PROBE_SETTING": "from-the-resuming-env"})


def test_the_first_run_records_its_paths_relative_to_the_checkout(first: Done) -> None:
    (record,) = [read_session(p) for p in find_sessions(first.root / "agent-runs")]
    checkout_facts = record.header["checkout"]
    assert checkout_facts["root"] == str(first.root.resolve())
    assert checkout_facts["task_file"] == "tasks/t.yaml" and checkout_facts["workdir"] == "src"
    assert log_schema_errors(record.path) == []


def test_resume_in_another_checkout_leaves_the_original_untouched(
    in_b: tuple[Done, dict[str, bytes]], first: Done
) -> None:
    done, before = in_b
    assert done.code == 0, done.explain()
    assert tree(first.root) == before
    assert (done.root / "src" / "done.txt").read_text(encoding="utf-8").strip() == "resumed"
    assert not (done.root / "done.txt").exists()


def test_resume_says_which_paths_it_used(in_b: tuple[Done, dict[str, bytes]], first: Done) -> None:
    done, _ = in_b
    root = done.root.resolve()
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("resume ")]
    assert f"from {root / 'tasks' / 't.yaml'}, workdir {root / 'src'}" in line
    assert f"checkout {root}; the log was written in {first.root.resolve()}" in line
    child = newest(done.root / "agent-runs")
    assert child.header["task_file"] == str(root / "tasks" / "t.yaml")
    assert child.header["checkout"]["root"] == str(root)


def test_resume_with_the_original_deleted_uses_the_copys_src(in_c: Done) -> None:
    assert in_c.code == 0, in_c.explain()
    assert (in_c.root / "src" / "done.txt").read_text(encoding="utf-8").strip() == "resumed"
    assert not (in_c.root / "done.txt").exists()
    assert f"workdir {in_c.root.resolve() / 'src'}" in in_c.stdout


def test_resume_resolves_extensions_again_from_the_current_environment(in_c: Done) -> None:
    child = newest(in_c.root / "agent-runs")
    (call,) = [
        e for e in child.events if e.get("type") == "tool_call" and e["tool"] == "environment"
    ]
    assert not call["is_error"], call
    # The probe server got the value of this environment (the model saw it in the result).
    assert "from-the-resuming-env" in str(in_c.requests[1].body["messages"])
    assert "skipped" not in in_c.stderr
