"""The run's cost cap holds with tasks running at once: each model call reserves its estimate."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import NO_WORKSPACE, Done, Scenario, complete, default_args, run_one

TASKS = 8
# $500 per million output tokens, 1000 output tokens per call (the max_output_tokens too): every
# call costs $0.50, and so does the estimate held while it runs (input is free).
CONFIG = {
    "models": {
        "gpt-4.1": {
            "context_window": 1_000_000,
            "input_usd_per_mtok": 0.0,
            "output_usd_per_mtok": 500.0,
        }
    },
    "max_output_tokens": 1000,
}


@pytest.fixture(scope="module")
def run(module_dir: Path) -> Done:
    scenario = Scenario(
        task={
            "defaults": {**NO_WORKSPACE, "workdir": "w"},
            "tasks": [{"name": f"t{i}", "prompt": "One call."} for i in range(TASKS)],
        },
        default=complete("done", output_tokens=1000),
        args=default_args("--jobs", str(TASKS), "--max-cost-usd", "1.0"),
        extra_files={"agent-runner.yaml": yaml.safe_dump(CONFIG)},
    )
    return run_one(scenario, module_dir)


def test_concurrent_tasks_spend_no_more_than_the_run_cost_cap(run: Done) -> None:
    tasks = run.summary()["tasks"]
    spent = sum(t["cost_usd"] for t in tasks)
    assert spent == pytest.approx(1.0), tasks
    assert len(run.requests) == 2
    statuses = sorted((t["status"], t["kind"]) for t in tasks)
    assert statuses == [("budget_exceeded", "run_cost")] * 6 + [("passed", "")] * 2, statuses
    assert run.code == 5, run.explain()
