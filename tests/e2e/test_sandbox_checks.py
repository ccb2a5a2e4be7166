"""Success checks and hooks run like commands (issue 17's review): the minimal environment plus
`check_env:`, confined, their background processes killed, and what a failed check printed is
masked before the model sees it."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path

from tests.e2e.conftest import Done, Scenario, complete, processes_mentioning, run_one

TOKEN = "ghp_e2eCheckSecretValue0123456789abcdef"


def _sent(done: Done, index: int) -> str:
    return json.dumps(done.requests[index].body["messages"])


def _env_file(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def test_check_and_hooks_get_the_minimal_env_are_confined_and_masked(tmp_path: Path) -> None:
    marker = f"{uuid.uuid4().int % 10**6:06d}"
    check = (
        "env > check_env.txt; echo x > ../beside.txt 2>/dev/null && echo CHECK-WROTE-BESIDE; "
        f"setsid -f sleep 97{marker}; (sleep 96{marker} &); "
        "if [ -f once ]; then exit 0; fi; touch once; cat token.txt; exit 1"
    )
    scenario = Scenario(
        task={
            "check_env": ["EXTRA_FOR_CHECKS", "NOT_SET_ANYWHERE"],
            "success": {"check": check, "retries": 1},
            "hooks": {"session_start": [{"run": "env > hook_env.txt"}]},
            "sandbox": {"mode": "auto"},
        },
        files={"token.txt": TOKEN + "\n"},
        steps=[complete(), complete()],
        env={"GITHUB_TOKEN": TOKEN, "EXTRA_FOR_CHECKS": "extra-value"},
    )
    done = run_one(scenario, tmp_path)
    assert done.code == 0, done.explain()
    workdir = done.root / "w"
    for name in ("check_env.txt", "hook_env.txt"):
        env = _env_file(workdir / name)
        assert "GITHUB_TOKEN" not in env and "OPENAI_API_KEY" not in env, name
        assert env["EXTRA_FOR_CHECKS"] == "extra-value", name
        assert "NOT_SET_ANYWHERE" not in env
    feedback = _sent(done, 1)
    assert "The success check" in feedback
    assert TOKEN not in feedback  # the check printed it; the model gets it masked
    assert TOKEN not in (done.out / "summary.json").read_text(encoding="utf-8")
    # Within its process group, the background sleep dies with the check everywhere; the one
    # that left the group (setsid) dies with bwrap's PID namespace only (README: Sandbox).
    must_die = marker if done.task()["sandbox"]["backend"] == "bwrap" else f"96{marker}"
    deadline = time.monotonic() + 10
    while processes_mentioning(must_die) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = processes_mentioning(must_die)
    for pid in processes_mentioning(marker):  # cleanup: the documented escapee without bwrap
        os.kill(pid, signal.SIGKILL)
    assert survivors == []
    if done.task()["sandbox"]["status"] == "enforced":
        assert not (done.root / "beside.txt").exists()
