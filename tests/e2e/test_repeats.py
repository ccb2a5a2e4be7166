"""Repeats (DESIGN 22) through the CLI: a task run as K samples, by a scripted model that passes
some samples and fails others by sample index (samples run one at a time, in order, so the
script's i-th reply is sample i's); the counts, rates and estimators, JUnit, shards merged, and a
resume that runs only the failed samples again."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from runner.run.plan import shard_of
from tests.e2e.conftest import (
    NO_WORKSPACE,
    Done,
    Scenario,
    clean_env,
    complete,
    default_args,
    junit_schema_problems,
    log_schema_errors,
    needs_shared_junit,
    run_all,
    run_one,
)

PASSING = {2, 4}
"""Of five samples, these pass: n = 5, c = 2."""
TASK: dict[str, Any] = {**NO_WORKSPACE, "success": {"expect": {"regex": "^PASS"}}}
# pass@k = 1 - C(3, k) / C(5, k) and pass^k = C(2, k) / C(5, k), worked out by hand.
PASS_AT = {"1": 0.4, "2": 0.7, "3": 0.9, "4": 1.0, "5": 1.0}
PASS_HAT = {"1": 0.4, "2": 0.1, "3": 0.0, "4": 0.0, "5": 0.0}


def script(samples: list[int]) -> list[Any]:
    """Replies for these samples, in the order they run."""
    return [complete("PASS" if i in PASSING else "FAIL") for i in samples]


def shard(k: int) -> list[int]:
    return [i for i in range(1, 6) if shard_of(f"t#{i}", 2) == k]


SCENARIOS = {
    "flag": Scenario(task=TASK, steps=script([1, 2, 3, 4, 5]), args=default_args("--repeat", "5")),
    "rate": Scenario(
        task={**TASK, "repeat": 5},
        steps=script([1, 2, 3, 4, 5]),
        args=default_args("--min-pass-rate", "0.4"),
    ),
    "shard_1": Scenario(
        task=TASK, steps=script(shard(1)), args=default_args("--repeat", "5", "--shard", "1/2")
    ),
    "shard_2": Scenario(
        task=TASK, steps=script(shard(2)), args=default_args("--repeat", "5", "--shard", "2/2")
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(SCENARIOS, module_dir)


def test_each_sample_is_its_own_session_with_sample_and_of_in_its_header(
    runs: dict[str, Done],
) -> None:
    done = runs["flag"]
    assert done.code == 1, done.explain()
    logs = sorted(done.logs(), key=lambda r: r.header["sample"])
    assert [(r.header["sample"], r.header["of"]) for r in logs] == [(i, 5) for i in range(1, 6)]
    assert len({r.session_id for r in logs}) == 5
    assert [r.end["status"] for r in logs if r.end] == [
        "passed" if i in PASSING else "failed" for i in range(1, 6)
    ]
    for record in logs:
        assert log_schema_errors(record.path) == []


def test_the_summary_counts_passes_and_gives_exact_pass_at_k_and_pass_hat_k(
    runs: dict[str, Done],
) -> None:
    summary = runs["flag"].summary()
    assert [(t["name"], t["sample"], t["of"]) for t in summary["tasks"]] == [
        ("t", i, 5) for i in range(1, 6)
    ]
    (verdict,) = summary["repeats"]
    assert verdict["samples"] == 5
    assert verdict["passes"] == 2
    assert verdict["pass_rate"] == 0.4
    assert verdict["pass_at_k"] == pytest.approx(PASS_AT, abs=1e-9)
    assert verdict["pass_hat_k"] == pytest.approx(PASS_HAT, abs=1e-9)
    assert verdict["status"] == "failed"
    assert verdict["turns"] == {"mean": 1, "min": 1, "max": 1}
    assert verdict["session_ids"] == [t["session_id"] for t in summary["tasks"]]
    assert (summary["passed"], summary["failed"], summary["exit_code"]) == (0, 1, 1)


def test_a_task_passes_when_its_pass_rate_reaches_min_pass_rate(runs: dict[str, Done]) -> None:
    done = runs["rate"]  # `repeat: 5` in the task file
    assert done.code == 0, done.explain()
    (verdict,) = done.summary()["repeats"]
    assert (verdict["passes"], verdict["status"], verdict["min_pass_rate"]) == (2, "passed", 0.4)
    assert "t  passed  2/5 passed (rate 0.40)  pass@1=0.40 pass@2=0.70" in done.stdout


@needs_shared_junit
def test_junit_has_a_testcase_per_sample_and_the_verdict_as_properties(
    runs: dict[str, Done],
) -> None:
    done = runs["flag"]
    names = [c.get("name") for c in done.junit().iter("testcase")]
    assert names == [f"t [{i}/5]" for i in range(1, 6)]
    failed = [c.get("name") for c in done.junit().iter("testcase") if c.find("failure") is not None]
    assert failed == ["t [1/5]", "t [3/5]", "t [5/5]"]
    props = {p.get("name"): p.get("value") for p in done.junit().iter("property")}
    assert props["repeat.t.passes"] == "2"
    assert props["repeat.t.samples"] == "5"
    assert props["repeat.t.pass@2"] == "0.700000"
    assert props["repeat.t.pass^2"] == "0.100000"
    assert props["repeat.t.status"] == "failed"
    assert junit_schema_problems(done.out / "junit.xml") is None


def _merge(root: Path, runs: dict[str, Done]) -> subprocess.CompletedProcess[str]:
    one, two = runs["shard_1"].out, runs["shard_2"].out
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "runner",
            "report",
            "merge",
            str(one / "junit.xml"),
            str(two / "junit.xml"),
            "-o",
            str(root / "merged.xml"),
            "--summary",
            str(one / "summary.json"),
            str(two / "summary.json"),
        ],
        env=clean_env(root),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@needs_shared_junit
def test_shards_split_the_samples_and_merge_to_the_verdict_of_one_run(
    runs: dict[str, Done], tmp_path: Path
) -> None:
    assert shard(1) and shard(2), "the hash puts samples of t in both shards"
    for k in (1, 2):
        samples = [t["sample"] for t in runs[f"shard_{k}"].summary()["tasks"]]
        assert samples == shard(k)
    merged = _merge(tmp_path, runs)
    assert merged.returncode == 0, merged.stderr
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    one_run = runs["flag"].summary()
    keys = ("samples", "passes", "pass_rate", "pass_at_k", "pass_hat_k", "status", "exit_code")
    assert [{k: v[k] for k in keys} for v in summary["repeats"]] == [
        {k: v[k] for k in keys} for v in one_run["repeats"]
    ]
    assert (summary["passed"], summary["failed"], summary["exit_code"]) == (0, 1, 1)
    props = {p.get("name"): p.get("value") for p in runs["flag"].junit().iter("property")}
    root = ET.parse(tmp_path / "merged.xml").getroot()
    for suite in root.findall("testsuite"):
        mine = {p.get("name"): p.get("value") for p in suite.iter("property")}
        for name in ("passes", "samples", "pass_rate", "pass@3", "pass^2", "status"):
            assert mine[f"repeat.t.{name}"] == props[f"repeat.t.{name}"], name
    assert junit_schema_problems(tmp_path / "merged.xml") is None


def test_resume_runs_only_the_failed_samples_and_reports_the_task_over_all_k(
    runs: dict[str, Done], tmp_path: Path
) -> None:
    shutil.copytree(runs["flag"].root, tmp_path / "run")  # run_one runs in <root>/run
    done = run_one(
        Scenario(default=complete("PASS"), args=["resume", "OUT", "--out", "OUT"]), tmp_path
    )
    assert done.code == 0, done.explain()
    assert len(done.requests) == 3  # samples 1, 3 and 5
    summary = done.summary()
    assert [(t["sample"], t["status"]) for t in summary["tasks"]] == [
        (i, "passed") for i in range(1, 6)
    ]
    (verdict,) = summary["repeats"]
    assert (verdict["passes"], verdict["samples"], verdict["status"]) == (5, 5, "passed")
    resumed = [r for r in done.logs() if r.parent_id]
    assert sorted(r.header["sample"] for r in resumed) == [1, 3, 5]


def test_resuming_one_sample_log_reports_its_task_over_the_samples_beside_it(
    runs: dict[str, Done], tmp_path: Path
) -> None:
    shutil.copytree(runs["flag"].root, tmp_path / "run")
    first = next(r for r in runs["flag"].logs() if r.header["sample"] == 1)
    log = f"OUT/sessions/{first.path.name}"
    resume = Scenario(default=complete("PASS"), args=["resume", log, "--out", "OUT"])
    done = run_one(resume, tmp_path)
    assert done.code == 1, done.explain()  # 3 of 5 pass now; every sample must
    assert len(done.requests) == 1
    summary = done.summary()
    assert [(t["sample"], t["status"]) for t in summary["tasks"]] == [
        (1, "passed"), (2, "passed"), (3, "failed"), (4, "passed"), (5, "failed")
    ]  # fmt: skip
    assert summary["repeats"][0]["passes"] == 3
