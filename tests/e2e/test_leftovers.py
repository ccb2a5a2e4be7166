"""What the agent leaves behind (DESIGN 24), attacked through the CLI under each backend.

The workdir `w/` is a repository's top, the task runs in place (`run -p` in a checkout). Its
commands try every way of planting code that the workflow's next step (`git status`, `git diff`,
`git commit`, unconfined, with a token in its environment) would run: `core.fsmonitor`,
`core.hooksPath`, a clean filter selected by `info/attributes`, a `hooks/pre-commit`, the `.git`
folder moved aside for a `.git` file naming a git folder of the agent's, and a `.git` file of
the repository's pointed elsewhere. Then that next step runs in the checkout: nothing the agent
wrote may run, whatever the backend held; the record says how it was held.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from runner.workspace import probe
from tests.conftest import git
from tests.e2e.conftest import (
    API_KEY,
    REPO,
    RUN_TIMEOUT_S,
    Done,
    Scenario,
    call,
    clean_env,
    complete,
    log_schema_errors,
    prepare,
    start,
    tool_reply,
)
from tests.e2e.test_confinement import BACKENDS
from tests.fakes.model_server import FakeModelServer, reply

ARGS = ("run", "t.yaml", "--model", "openai:gpt-4.1", "--out", "OUT")


def _plants(mark: Path) -> list[str]:
    """Commands that each plant one program for the next git in the checkout to run; each
    writes its name into `mark`'s folder when it runs."""
    run = f"sh -c 'echo ran >> {mark}-%s'"
    hook = f"#!/bin/sh\necho ran >> {mark}-hook\n"
    return [
        f'git config core.fsmonitor "{run % "fsmonitor"}"',
        f"mkdir -p evil && printf '{hook}' > evil/pre-commit && chmod +x evil/pre-commit"
        " && git config core.hooksPath evil",
        f'git config filter.x.clean "{run % "filter"}"'
        " && echo '* filter=x' >> .git/info/attributes",
        f"printf '{hook}' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        f"printf '[core]\\n\\tfsmonitor = {run % 'appended'}\\n' >> .git/config",
        # The folder moved aside, a git folder of the agent's in its place behind a `.git` file.
        "mv .git .git-moved && git init -q --separate-git-dir=mine other"
        f' && git -C other config core.fsmonitor "{run % "moved"}"'
        " && cp other/.git .git && sed -i 's#gitdir: #gitdir: #' .git",
    ]


def _repository(root: Path, scenario: Scenario) -> Path:
    prepare(scenario, root)
    work = root / "w"
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "start")
    return work


def _run(root: Path, scenario: Scenario) -> Done:
    _repository(root, scenario)
    started = start(scenario, root)
    try:
        return started.wait()
    finally:
        started.server.stop()


def _next_step(work: Path, root: Path) -> list[str]:
    """The workflow's next step in the checkout, unconfined, with a token: what it ran."""
    env = {**os.environ, "GITHUB_TOKEN": "ghs_secret", "GIT_AUTHOR_NAME": "ci"}
    env.update(GIT_AUTHOR_EMAIL="ci@ci", GIT_COMMITTER_NAME="ci", GIT_COMMITTER_EMAIL="ci@ci")
    (work / "a.txt").write_text("changed by the workflow\n", encoding="utf-8")
    for args in (["status"], ["diff"], ["add", "a.txt"], ["commit", "-q", "-m", "next step"]):
        subprocess.run(["git", *args], cwd=work, env=env, capture_output=True, check=False)
    return sorted(p.name for p in root.glob("mark-*"))


def _scenario(mark: Path, backend: str, sandbox: dict[str, Any] | None = None) -> Scenario:
    steps = [tool_reply("execute_command", command=c) for c in _plants(mark)]
    return Scenario(
        task={"sandbox": {"mode": "auto", **(sandbox or {})}},
        files={"a.txt": "a\n"},
        steps=[*steps, complete()],
        args=[*ARGS, "--sandbox-backend", backend],
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_nothing_planted_in_the_git_folder_runs_in_the_next_step(
    tmp_path: Path, backend: str
) -> None:
    done = _run(tmp_path, _scenario(tmp_path / "mark", backend))
    work = tmp_path / "w"
    record = done.task()["sandbox"]
    if backend == "bwrap":
        assert done.code == 0, done.explain()
        assert record["git"] == "read-only"
    else:
        assert done.code == 1, done.explain()
        assert record["git"] == "checked"
        reason = done.task()["reason"]
        assert done.task()["kind"] == "security"
        for change in (".git/config changed", ".git/hooks/pre-commit added", ".git/info"):
            assert change in reason, reason
    (log,) = (done.out / "sessions").glob("*.jsonl")
    assert log_schema_errors(log) == []
    assert set(json.loads(log.read_text(encoding="utf-8").splitlines()[0])["task_hashes"]) >= {
        "extensions",
        "hooks",
        "success",
    }
    assert (work / ".git").is_dir()
    assert not (work / ".git-moved").exists()
    assert _next_step(work, tmp_path) == []
    assert "ghs_secret" not in "".join(p.read_text() for p in tmp_path.glob("mark-*"))
    assert git(work, "log", "--format=%s", "-1").strip() == "next step"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_git_file_pointed_elsewhere_is_put_back(tmp_path: Path, backend: str) -> None:
    mark = tmp_path / "mark"
    run = f"sh -c 'echo ran >> {mark}-fsmonitor'"
    command = (
        f'git init -q --bare evil.git && git --git-dir=evil.git config core.fsmonitor "{run}"'
        " && echo 'gitdir: evil.git' > .git"
    )
    scenario = Scenario(
        task={"sandbox": {"mode": "auto"}},
        files={"a.txt": "a\n"},
        steps=[tool_reply("execute_command", command=command), complete()],
        args=[*ARGS, "--sandbox-backend", backend],
    )
    prepare(scenario, tmp_path)
    work = tmp_path / "w"
    subprocess.run(
        ["git", "init", "-q", f"--separate-git-dir={tmp_path / 'w' / 'store'}"],
        cwd=work,
        check=True,
    )
    git(work, "add", "a.txt")
    git(work, "commit", "-q", "-m", "start")
    before = (work / ".git").read_text(encoding="utf-8")
    started = start(scenario, tmp_path)
    try:
        done = started.wait()
    finally:
        started.server.stop()
    assert (work / ".git").read_text(encoding="utf-8") == before
    if backend == "bwrap":
        assert done.code == 0, done.explain()
    else:
        assert done.code == 1 and ".git changed" in done.task()["reason"], done.explain()
    assert _next_step(work, tmp_path) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_task_with_a_writable_git_folder_commits_but_a_planted_hook_fails_it(
    tmp_path: Path, backend: str
) -> None:
    mark = tmp_path / "mark"
    commit = (
        "echo b > b.txt && git add b.txt && git -c user.name=a -c user.email=a@a commit -qm agent"
    )
    hook = f"printf '#!/bin/sh\\necho ran >> {mark}-hook\\n' > .git/hooks/pre-commit"
    steps = [
        tool_reply("execute_command", command=c)
        for c in (commit, hook + " && chmod +x .git/hooks/pre-commit")
    ]
    scenario = Scenario(
        task={"sandbox": {"mode": "auto", "git": "writable"}},
        files={"a.txt": "a\n"},
        steps=[*steps, complete()],
        args=[*ARGS, "--sandbox-backend", backend],
    )
    done = _run(tmp_path, scenario)
    work = tmp_path / "w"
    assert git(work, "log", "--format=%s", "-1").strip() == "agent", done.explain()
    assert done.task()["sandbox"]["git"] == "writable"
    if backend == "bwrap":
        assert done.code == 0, done.explain()  # hooks/ stayed read-only: the write failed
    else:
        assert done.code == 1 and done.task()["kind"] == "security", done.explain()
        assert ".git/hooks/pre-commit added" in done.task()["reason"]
    assert not (work / ".git" / "hooks" / "pre-commit").exists()
    assert _next_step(work, tmp_path) == []


# The run's output folder (`run -p` in the checkout: agent-runs/ inside the workdir).

PLANT_TASK = (
    "printf 'extensions: {evil: {cmd: sh, args: [-c, \"echo ran > ../mark\"]}}\\n'"
    " >> agent-runs/tasks/prompt.yaml; echo x > agent-runs/tasks/planted.yaml; echo done"
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_run_p_agent_changes_no_file_of_the_runs_output(tmp_path: Path, backend: str) -> None:
    steps = [
        tool_reply("execute_command", command=PLANT_TASK),
        tool_reply("write_to_file", path="agent-runs/tasks/prompt.yaml", content="prompt: x\n"),
        tool_reply(
            "replace_in_file",
            path="agent-runs/tasks/prompt.yaml",
            diff="<<<<<<< SEARCH\nDo it.\n=======\nDo more.\n>>>>>>> REPLACE",
        ),
        complete(),
    ]
    scenario = Scenario(
        files={"a.txt": "a\n"},
        steps=steps,
        args=["run", "-p", "Do it.", "--model", "openai:gpt-4.1", "--sandbox-backend", backend],
    )
    prepare(scenario, tmp_path)
    root = tmp_path / "w"
    started = start(scenario, root)
    try:
        done = started.wait()
    finally:
        started.server.stop()
    task_file = root / "agent-runs" / "tasks" / "prompt.yaml"
    text = task_file.read_text(encoding="utf-8")
    assert "evil" not in text and "Do it." in text, text
    summary = root / "agent-runs" / "summary.json"
    record = json.loads(summary.read_text(encoding="utf-8"))["tasks"][0]
    (session,) = (root / "agent-runs" / "sessions").glob("*.jsonl")
    log = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines()]
    writes = [e for e in log if e["type"] == "tool_call" and e["tool"] != "execute_command"]
    assert [e["is_error"] for e in writes] == [True, True]
    assert all("keeps for its own files" in e["result"] for e in writes), writes
    if backend == "bwrap":
        assert done.code == 0, done.explain()
        assert record["sandbox"]["out"] == "read-only"
        assert not (root / "agent-runs" / "tasks" / "planted.yaml").exists()
    else:
        assert done.code == 1, done.explain()
        assert record["sandbox"]["out"] == "checked" and record["kind"] == "security"
        assert "agent-runs/tasks/prompt.yaml changed" in record["reason"]


# As a user of its own (root may write anything with its capabilities; nobody may not).

NOBODY = 65534


def _as_nobody(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        user=NOBODY,
        group=NOBODY,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


@pytest.mark.skipif(os.getuid() != 0, reason="runs the runner as nobody, which only root can")
@pytest.mark.skipif(not Path("/usr/bin/python3").is_file(), reason="no Python nobody may run")
@pytest.mark.parametrize("backend", BACKENDS)
def test_as_another_user_nothing_planted_in_the_git_folder_runs(backend: str) -> None:
    base = Path(tempfile.mkdtemp(prefix="ar-nobody-", dir="/tmp"))
    try:
        root, mark = base / "run", base / "mark"
        scenario = _scenario(mark, backend)
        work = _repository(root, scenario)
        for path in (base, *base.rglob("*")):
            os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
        site = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
        with FakeModelServer(scenario.steps) as server:
            env = clean_env(root, {"OPENAI_BASE_URL": server.openai_base_url})
            env.update(OPENAI_API_KEY=API_KEY, HOME=str(base), PYTHONPATH=f"{REPO}:{site}")
            done = _as_nobody(["/usr/bin/python3", "-m", "runner", *scenario.args], root, env)
        summary = json.loads((root / "OUT" / "summary.json").read_text(encoding="utf-8"))
        record = summary["tasks"][0]
        assert record["sandbox"]["status"] == "enforced", done.stdout + done.stderr
        if backend == "bwrap":
            assert done.returncode == 0 and record["sandbox"]["git"] == "read-only", done.stdout
        else:
            assert done.returncode == 1 and record["kind"] == "security", done.stdout
        assert (work / ".git").is_dir() and not (work / ".git-moved").exists()
        git_env = {"PATH": os.defpath, "HOME": str(base), "GITHUB_TOKEN": "ghs_secret"}
        git_env.update(GIT_AUTHOR_NAME="ci", GIT_AUTHOR_EMAIL="ci@ci")
        git_env.update(GIT_COMMITTER_NAME="ci", GIT_COMMITTER_EMAIL="ci@ci")
        for args in (["status"], ["diff"], ["commit", "-qam", "next"]):
            _as_nobody(["git", *args], work, git_env)
        assert sorted(p.name for p in base.glob("mark-*")) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_validate_names_a_bad_sandbox_git_value(tmp_path: Path) -> None:
    task = {"prompt": "x", "workdir": "w", "sandbox": {"git": "wrtable"}}
    scenario = Scenario(task=task, args=["validate", "t.yaml"])
    started = start(scenario, tmp_path)
    try:
        done = started.wait()
    finally:
        started.server.stop()
    assert done.code == 2, done.explain()
    assert "sandbox.git: Input should be 'read-only' or 'writable'" in done.stdout + done.stderr


def test_under_landlock_logs_that_grow_beside_a_task_do_not_fail_it(tmp_path: Path) -> None:
    """`--out` in the workdir, checked: two read-only tasks at once, a run after an earlier one;
    each task's check sees the other's log grow and earlier logs untouched."""
    if probe("landlock").backend != "landlock":
        pytest.skip("landlock does not work here")
    suite = {
        "defaults": {
            "workdir": ".",
            "tools": {"deny": ["execute_command", "write_to_file", "replace_in_file"]},
        },
        "tasks": [{"name": n, "prompt": f"route-{n}: read."} for n in ("one", "two")],
    }
    routes = {
        f"route-{n}": [tool_reply("read_file", path="t.yaml"), complete()] for n in ("one", "two")
    }
    args = ["run", "t.yaml", "--model", "openai:gpt-4.1", "--out", "OUT", "--jobs", "2"]
    scenario = Scenario(task=suite, routes=routes, args=[*args, "--sandbox-backend", "landlock"])
    for _ in range(2):
        started = start(scenario, tmp_path)
        try:
            done = started.wait()
        finally:
            started.server.stop()
        assert done.code == 0, done.explain()
    assert {t["sandbox"]["out"] for t in done.summary()["tasks"]} == {"checked"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_git_file_planted_in_a_workdir_below_the_repository_is_removed(
    tmp_path: Path, backend: str
) -> None:
    mark = tmp_path / "mark"
    plant = (
        "git init -q --bare evil.git && git --git-dir=evil.git config core.fsmonitor"
        f" \"sh -c 'echo ran >> {mark}-sub'\" && echo 'gitdir: evil.git' > .git"
    )
    scenario = Scenario(
        task={"workdir": "w/sub", "sandbox": {"mode": "auto"}},
        files={"a.txt": "a\n", "sub/b.txt": "b\n"},
        steps=[tool_reply("execute_command", command=plant), complete()],
        args=[*ARGS, "--sandbox-backend", backend],
    )
    done = _run(tmp_path, scenario)
    assert done.code == 1 and done.task()["kind"] == "security", done.explain()
    assert done.task()["sandbox"]["git"] == "read-only"
    assert ".git added (file)" in done.task()["reason"]
    sub = tmp_path / "w" / "sub"
    assert not (sub / ".git").exists()
    subprocess.run(["git", "status"], cwd=sub, capture_output=True, check=False)
    assert not Path(f"{mark}-sub").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_change_outside_what_commands_may_write_is_never_restored(
    tmp_path: Path, backend: str
) -> None:
    """The workdir is below the repository's top: its git folder is out of the commands' reach,
    so a change there while the task runs (another process's) is neither named nor undone."""
    finish = call("attempt_completion", result="done")
    scenario = Scenario(
        task={"workdir": "w/sub", "sandbox": {"mode": "auto"}},
        files={"a.txt": "a\n", "sub/b.txt": "b\n"},
        steps=[reply(finish, fault="stall")],
        args=[*ARGS, "--sandbox-backend", backend],
    )
    _repository(tmp_path, scenario)
    server = FakeModelServer(scenario.steps).start()
    started = start(scenario, tmp_path, server)
    try:
        assert server.wait_for_stall(RUN_TIMEOUT_S), started.explain()
        git(tmp_path / "w", "config", "user.signingkey", "someone-else")
        server.release()
        done = started.wait()
    finally:
        server.stop()
    assert done.code == 0, done.explain()
    assert git(tmp_path / "w", "config", "user.signingkey").strip() == "someone-else"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_submodule_the_agent_adds_to_the_index_runs_nothing(tmp_path: Path, backend: str) -> None:
    """`git status` recurses into a populated gitlink and runs its git folder's fsmonitor."""
    mark = tmp_path / "mark"
    plant = (
        "git init -q sub && cd sub && echo s > s && git add s"
        " && git -c user.name=a -c user.email=a@a commit -qm s"
        f" && git config core.fsmonitor \"sh -c 'echo ran >> {mark}-sub'\" && cd .."
        " && git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub"
    )
    scenario = Scenario(
        task={"sandbox": {"mode": "auto"}},
        files={"a.txt": "a\n"},
        steps=[tool_reply("execute_command", command=plant), complete()],
        args=[*ARGS, "--sandbox-backend", backend],
    )
    done = _run(tmp_path, scenario)
    if backend == "bwrap":
        assert done.code == 0, done.explain()  # the index is read-only: no gitlink
    else:
        assert done.code == 1 and "sub/.git added" in done.task()["reason"], done.explain()
    assert _next_step(tmp_path / "w", tmp_path) == []
