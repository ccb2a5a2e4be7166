"""Which tasks a run picks and how: --filter, --shard, --jobs, --output json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    NO_WORKSPACE,
    REACH_S,
    Done,
    Scenario,
    call,
    complete,
    default_args,
    kill,
    run_all,
    start,
    wait_until,
)
from tests.fakes.model_server import FakeModelServer, fault

NAMES = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
SUITE: dict[str, Any] = {
    "defaults": {**NO_WORKSPACE, "workdir": "w"},
    "tasks": [{"name": name, "prompt": f"Task {name}."} for name in NAMES],
}
SCENARIOS = {
    "filter_json": Scenario(
        task=SUITE, default=complete(), args=default_args("--filter", "*ta", "--output", "json")
    ),
    "shard_1": Scenario(task=SUITE, default=complete(), args=default_args("--shard", "1/2")),
    "shard_2": Scenario(task=SUITE, default=complete(), args=default_args("--shard", "2/2")),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(SCENARIOS, module_dir)


def ran(done: Done) -> set[str]:
    return {t["name"] for t in done.summary()["tasks"]}


def test_output_json_prints_the_run_summary_as_json_on_stdout(runs: dict[str, Done]) -> None:
    done = runs["filter_json"]
    assert done.code == 0, done.explain()
    printed = json.loads(done.stdout)
    assert printed["exit_code"] == 0
    assert {t["name"] for t in printed["tasks"]} == ran(done)


def test_filter_runs_only_the_tasks_whose_names_match(runs: dict[str, Done]) -> None:
    assert ran(runs["filter_json"]) == {"beta", "delta", "zeta"}
    assert len(runs["filter_json"].requests) == 3


def test_the_shards_of_a_run_split_its_tasks_without_overlap(runs: dict[str, Done]) -> None:
    first, second = ran(runs["shard_1"]), ran(runs["shard_2"])
    assert first and second
    assert first.isdisjoint(second)
    assert first | second == set(NAMES)
    assert runs["shard_1"].code == runs["shard_2"].code == 0


def test_jobs_2_runs_two_tasks_at_the_same_time(tmp_path: Path) -> None:
    # The first task's reply stalls; the second task's request can only arrive while it is
    # stalled if the two run concurrently. Then the stall is released and both complete.
    suite = {**SUITE, "tasks": SUITE["tasks"][:2]}
    stalled = fault("stall", text=call("attempt_completion", result="after the stall"))
    with FakeModelServer([stalled, complete("while the other waited")]) as server:
        run = start(Scenario(task=suite, args=default_args("--jobs", "2")), tmp_path, server)
        try:
            assert server.wait_for_stall(timeout=REACH_S)
            wait_until(lambda: len(server.requests) == 2, REACH_S, "the second task's request")
            server.release()
            done = run.wait()
        finally:
            kill(run.process)
    assert done.code == 0, done.explain()
    results = {t["name"]: t["result"] for t in done.summary()["tasks"]}
    assert sorted(results.values()) == ["after the stall", "while the other waited"]
