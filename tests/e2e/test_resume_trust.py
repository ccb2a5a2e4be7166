"""`resume` does not trust a log header, resumes only each task's latest session, and its log
continues the parent's turns (DESIGN 8 and 12).

A header is an artifact that may have been edited: the resumed task comes from the task file; the
header's success check, extension commands, workdir and task name never run in its place. Only
`--from-log` runs what the log says, and says so.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner.sessionlog import SessionRecord, find_sessions, read_session
from tests.e2e.conftest import (
    MODEL,
    NO_WORKSPACE,
    Done,
    Scenario,
    call,
    complete,
    run_all,
    tool_reply,
)
from tests.fakes.mcp_test_server import SCRIPT as PROBE_SERVER
from tests.fakes.model_server import reply

TASK: dict[str, Any] = {
    "prompt": "Create ok.txt.",
    "extensions": {"probe": {"type": "stdio", "cmd": sys.executable, "args": [str(PROBE_SERVER)]}},
    "success": {"check": "test -f ok.txt", "retries": 0},
}
GIVE_UP = reply(call("attempt_completion", result="cannot", status="failure"))
FIX = [tool_reply("write_to_file", path="ok.txt", content="ok"), complete("fixed")]
RESUME = ["resume", "OUT", "--model", MODEL, "--out", "OUT"]
ESCAPED = "escaped-by-name"


def records(out: Path) -> list[SessionRecord]:
    return [read_session(p) for p in find_sessions(out)]


def children(done: Done, parents: set[str]) -> list[SessionRecord]:
    return [r for r in records(done.out) if r.session_id not in parents]


@pytest.fixture(scope="module")
def parent(module_dir: Path) -> Done:
    """A run of TASK whose agent gave up: the session every header test resumes a copy of."""
    done = run_all({"parent": Scenario(task=TASK, steps=[GIVE_UP])}, module_dir)["parent"]
    assert done.code == 1, done.explain()
    return done


def copy_of(
    parent: Done, root: Path, edit: Callable[[dict[str, Any], Path], None], task_file: bool
) -> None:
    """`root` with the parent's task file (or not), workdir and OUT, its header edited."""
    root.mkdir(parents=True)
    shutil.copytree(parent.out, root / "OUT")
    (root / "w").mkdir()
    (root / "outside").mkdir()
    if task_file:
        shutil.copy(parent.root / "t.yaml", root / "t.yaml")
    (log,) = find_sessions(root / "OUT")
    lines = log.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    edit(header, root)
    log.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")


def hostile(header: dict[str, Any], root: Path) -> None:
    """What an attacker who can edit the artifact writes into the header."""
    task = header["task"]
    task["success"]["check"] = f"touch {root}/pwned-check"
    task["extensions"]["evil"] = {
        "name": "evil",
        "type": "stdio",
        "cmd": "sh",
        "args": ["-c", f"touch {root}/pwned-ext"],
    }
    task["workdir"] = str(root / "outside")
    if "checkout" in header:  # written since resume resolves paths in the checkout
        header["checkout"]["workdir"] = str(root / "outside")


def check_only(header: dict[str, Any], root: Path) -> None:
    header["task"]["success"]["check"] = "touch pwned-check"


def written_before_checkout(header: dict[str, Any], root: Path) -> None:
    """A header as runners before `checkout` wrote it: paths only through `host.cwd`."""
    del header["checkout"]


def file_elsewhere(header: dict[str, Any], root: Path) -> None:
    """The header points at the parent's task file, in another folder."""
    header["checkout"]["task_file"] = "../../parent/t.yaml"


def named(name: str) -> Callable[[dict[str, Any], Path], None]:
    def edit(header: dict[str, Any], root: Path) -> None:
        header["task"]["name"] = name

    return edit


CASES: dict[str, tuple[Callable[[dict[str, Any], Path], None], bool, list[str]]] = {
    "file_present": (hostile, True, []),
    "file_missing": (hostile, False, []),
    "from_log_outside": (hostile, False, ["--from-log"]),
    "from_log": (check_only, False, ["--from-log", "--workdir", "w"]),
    "name_escapes": (named(f"../../../{ESCAPED}"), False, []),
    "old_log": (written_before_checkout, True, []),
    "file_escapes": (file_elsewhere, True, []),
    "id_escapes": (lambda header, root: header.update(session_id="../../x"), True, []),
    "workdir_flag": (lambda header, root: None, True, ["--workdir", "outside"]),
}


@pytest.fixture(scope="module")
def resumed(module_dir: Path, parent: Done) -> dict[str, Done]:
    base = module_dir / "copies"
    for name, (edit, task_file, _) in CASES.items():
        copy_of(parent, base / name, edit, task_file)
    scenarios = {
        name: Scenario(steps=FIX, args=[*RESUME, *more]) for name, (_, _, more) in CASES.items()
    }
    return run_all(scenarios, base)


def pwned(root: Path) -> list[Path]:
    return [p for p in root.rglob("pwned-*")]


def test_an_edited_header_runs_the_task_file_not_the_header(
    resumed: dict[str, Done], parent: Done
) -> None:
    done = resumed["file_present"]
    assert done.code == 0, done.explain()
    assert pwned(done.root) == []
    assert (done.root / "w" / "ok.txt").is_file() and not (
        done.root / "outside" / "ok.txt"
    ).exists()
    (child,) = children(done, {parent.log().session_id})
    assert "evil" not in child.header["task"]["extensions"]
    (drift,) = [line for line in done.stderr.splitlines() if "drifted since the session" in line]
    assert "extensions" in drift and "success" in drift and "outside this checkout" in drift


def test_a_missing_task_file_is_refused_without_from_log(resumed: dict[str, Done]) -> None:
    done = resumed["file_missing"]
    assert done.code == 2, done.explain()
    assert "--from-log" in done.stderr and "t.yaml does not exist in this checkout" in done.stderr
    assert pwned(done.root) == [] and len(records(done.out)) == 1
    assert done.requests == []


def test_from_log_refuses_a_workdir_outside_the_checkout(resumed: dict[str, Done]) -> None:
    done = resumed["from_log_outside"]
    assert done.code == 2, done.explain()
    assert "outside the checkout" in done.stderr and "--workdir" in done.stderr
    assert pwned(done.root) == [] and done.requests == []


def test_from_log_says_plainly_that_the_logs_commands_run(resumed: dict[str, Done]) -> None:
    done = resumed["from_log"]
    assert done.code == 0, done.explain()
    assert "as the log recorded it" in done.stdout
    assert "success check `touch pwned-check`" in done.stdout and "probe (`" in done.stdout
    # It ran, as it said it would, in the workdir chosen with --workdir.
    assert (done.root / "w" / "pwned-check").is_file()


def test_a_session_id_that_is_no_file_name_is_refused(resumed: dict[str, Done]) -> None:
    done = resumed["id_escapes"]
    assert done.code == 2, done.explain()
    assert "session id '../../x' is not a safe file name" in done.stderr


def test_a_task_file_outside_the_checkout_is_refused(resumed: dict[str, Done]) -> None:
    done = resumed["file_escapes"]
    assert done.code == 2, done.explain()
    assert "task file '../../parent/t.yaml' lies outside the checkout" in done.stderr
    assert done.requests == []


def test_a_task_name_that_leaves_out_is_refused(resumed: dict[str, Done]) -> None:
    done = resumed["name_escapes"]
    assert done.code == 2, done.explain()
    assert "cannot be used as a file name" in done.stderr
    assert not list(done.root.parents[2].rglob(ESCAPED)) and done.requests == []


def test_a_log_without_checkout_resolves_its_paths_through_its_cwd(
    resumed: dict[str, Done],
) -> None:
    done = resumed["old_log"]
    assert done.code == 0, done.explain()
    assert (done.root / "w" / "ok.txt").is_file()
    assert (
        f"from {done.root.resolve() / 't.yaml'}, workdir {done.root.resolve() / 'w'}" in done.stdout
    )


def test_workdir_flag_roots_the_tools_where_it_says(resumed: dict[str, Done]) -> None:
    done = resumed["workdir_flag"]
    assert done.code == 0, done.explain()
    assert (done.root / "outside" / "ok.txt").is_file() and not (
        done.root / "w" / "ok.txt"
    ).exists()
    assert f"workdir {done.root.resolve() / 'outside'} " in done.stdout


# --- which sessions a folder resumes, and what the resumed log says --------------------------

SUITE = {
    "defaults": {"prompt": "Do it.", **NO_WORKSPACE},
    "tasks": [{"name": "a", "workdir": "w"}, {"name": "b", "workdir": "w"}],
}
SUITE_RUN = ["run", "t.yaml", "--model", MODEL, "--out", "OUT", "--jobs", "1"]


@pytest.fixture(scope="module")
def stale(module_dir: Path) -> tuple[list[SessionRecord], Done]:
    """a failed then passed; b failed twice; then `resume OUT`: (the sessions before, resume)."""
    root = module_dir / "stale"
    first = run_all(
        {"stale": Scenario(task=SUITE, steps=[GIVE_UP, GIVE_UP], args=SUITE_RUN)}, module_dir
    )
    assert first["stale"].code == 1
    second = Scenario(task=SUITE, steps=[complete("a done"), GIVE_UP], args=SUITE_RUN)
    assert run_all({"stale": second}, module_dir)["stale"].code == 1
    before = records(root / "OUT")
    again = Scenario(task=SUITE, steps=[complete("b done")], args=RESUME)
    return before, run_all({"stale": again}, module_dir)["stale"]


def test_resume_dir_continues_only_the_latest_session_of_each_task(
    stale: tuple[list[SessionRecord], Done],
) -> None:
    before, done = stale
    assert done.code == 0, done.explain()
    (child,) = children(done, {r.session_id for r in before})
    latest_b = max(
        (r for r in before if r.header["task"]["name"] == "b"), key=lambda r: r.header["started_at"]
    )
    assert child.parent_id == latest_b.session_id
    assert [t["name"] for t in done.summary()["tasks"]] == ["b"]


@pytest.fixture(scope="module")
def drifted(module_dir: Path) -> tuple[SessionRecord, Done]:
    """A task resumed after its file started to deny execute_command."""
    task = {"prompt": "Do it.", "workdir": "w"}
    done = run_all({"drift": Scenario(task=task, steps=[GIVE_UP])}, module_dir)["drift"]
    parent_record = done.log()
    denied = {**task, "tools": {"deny": ["execute_command"]}}
    # Its tools changed: an executable part (DESIGN 24), accepted on the command line.
    again = Scenario(task=denied, steps=[complete("done")], args=[*RESUME, "--accept-task-changes"])
    return parent_record, run_all({"drift": again}, module_dir)["drift"]


def test_tool_drift_names_only_what_changed(drifted: tuple[SessionRecord, Done]) -> None:
    _, done = drifted
    assert done.code == 0, done.explain()
    (line,) = [line for line in done.stderr.splitlines() if "tools drifted" in line]
    assert line.endswith("tools drifted since the parent session: removed execute_command")


def test_a_resumed_log_continues_the_parents_turns(drifted: tuple[SessionRecord, Done]) -> None:
    parent_record, done = drifted
    (child,) = children(done, {parent_record.session_id})
    turns = [e["turn"] for e in child.events if e["type"] in ("message", "model_call")]
    assert turns == [1, 2, 2]
