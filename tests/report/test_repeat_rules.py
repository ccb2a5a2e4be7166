"""Repeated tasks' rules (DESIGN 22), each pinned as a rule: the pass rate and pass@k are over
K, the samples the task was to run (a sample that never ran counts as not passed), never over
the samples that ran; `--fail-fast` decides a task by its own failed samples only; and
`report merge` refuses every sample index that is not 1..K with exit 2, never a crash."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner.errors import ConfigError, ExitCode, worst_exit_code
from runner.outcome import TaskOutcome
from runner.report import merge_summaries, pass_at_k, pass_hat_k, verdict_lost, verdicts
from runner.report.repeats import sample_key, verdict_json
from runner.report.summary import summary_json
from tests.report.samples import outcome, summary_of

RunCli = Callable[..., subprocess.CompletedProcess[str]]


def sample(name: str, status: str, index: int, of: int, task_file: str = "t.yaml") -> TaskOutcome:
    code = ExitCode.OK if status == "passed" else ExitCode.FAILED
    base = outcome(name, status, task_file=task_file)  # type: ignore[arg-type]
    return dataclasses.replace(base, exit_code=code, sample=index, of=of)


@pytest.mark.parametrize(("ran", "k"), [(3, 5), (1, 4), (2, 3), (4, 4)])
def test_the_pass_rate_is_over_k_not_over_the_samples_that_ran(ran: int, k: int) -> None:
    """Every sample that ran passed; the ones that never ran count as not passed."""
    (verdict,) = verdicts([sample("r", "passed", i, k) for i in range(1, ran + 1)], 0.0)
    assert (verdict.samples, verdict.ran, verdict.passes) == (k, ran, ran)
    assert verdict.pass_rate == pytest.approx(ran / k)
    entry = verdict_json(verdict)
    assert entry["pass_rate"] == pytest.approx(round(ran / k, 6))
    assert entry["pass_at_k"]["1"] == pytest.approx(ran / k)
    assert len(entry["pass_at_k"]) == len(entry["pass_hat_k"]) == k


def test_missing_samples_fail_a_rate_the_samples_that_ran_would_meet() -> None:
    ran = [sample("r", "passed", i, 5) for i in (1, 2, 3)]  # 3 of 5: 0.6
    (at_rate,) = verdicts(ran, 0.6)
    (over,) = verdicts(ran, 0.61)
    assert (at_rate.passed, at_rate.exit_code) == (True, ExitCode.OK)
    assert (over.passed, over.exit_code) == (False, ExitCode.FAILED)


def test_fail_fast_counts_only_the_decided_tasks_failed_samples() -> None:
    """K = 3 at rate 0.5: a task may lose one sample. Other tasks' failures (another name, or
    the same name in another file) and its own passes never count against it."""
    first = sample("a", "failed", 1, 3)
    others = [sample("b", "failed", i, 3) for i in (1, 2, 3)]
    others += [sample("a", "failed", i, 3, task_file="other.yaml") for i in (2, 3)]
    passes = [sample("a", "passed", i, 3) for i in (2, 3)]
    single = [dataclasses.replace(outcome("a", "failed"), exit_code=ExitCode.FAILED)]
    assert not verdict_lost(first, [*others, *passes, *single], 0.5)
    assert verdict_lost(first, [*others, sample("a", "failed", 2, 3)], 0.5)


def test_fail_fast_counts_a_sample_once_however_often_it_is_reported() -> None:
    first = sample("a", "failed", 1, 3)
    assert not verdict_lost(first, [first, first], 0.5)


def _shard(tmp_path: Path, changes: dict[str, Any]) -> tuple[Path, Path]:
    """A junit.xml and a summary.json of task `r`'s 3 samples, the first entry changed."""
    outcomes = [sample("r", "passed", i, 3) for i in (1, 2, 3)]
    data = summary_json(summary_of(outcomes, exit_code=ExitCode.OK))
    data["tasks"][0].update(changes)
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps(data), encoding="utf-8")
    junit = tmp_path / "junit.xml"
    junit.write_text('<?xml version="1.0"?><testsuites/>', encoding="utf-8")
    return junit, summary


@pytest.mark.parametrize(
    "changes",
    [
        {"sample": 4},
        {"sample": 7, "of": 5},
        {"sample": 1001, "of": 1000},
        {"sample": 0},
        {"sample": -2},
        {"sample": "x"},
        {"sample": 1.5},
        {"sample": True},
        {"sample": [1]},
        {"sample": 1e300},
        {"of": 0},
        {"of": "3"},
        {"of": 10**9, "sample": 1},
    ],
    ids=repr,
)
def test_report_merge_refuses_a_sample_index_outside_one_to_k_with_exit_2(
    run_cli: RunCli, tmp_path: Path, changes: dict[str, Any]
) -> None:
    junit, summary = _shard(tmp_path, changes)
    done = run_cli(
        "report", "merge", str(junit), "--summary", str(summary), "-o", str(tmp_path / "o.xml")
    )
    assert done.returncode == 2, done.stderr
    assert "report merge: task 'r' claims sample" in done.stderr
    assert "from 1 to its task's count" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr) < 400


def test_report_merge_takes_every_index_from_one_to_k(run_cli: RunCli, tmp_path: Path) -> None:
    junit, summary = _shard(tmp_path, {})
    out = tmp_path / "o.xml"
    done = run_cli("report", "merge", str(junit), "--summary", str(summary), "-o", str(out))
    assert done.returncode == 0, done.stderr
    merged = json.loads(out.with_name("summary.json").read_text(encoding="utf-8"))
    assert merged["repeats"][0]["passes"] == merged["repeats"][0]["samples"] == 3


@pytest.mark.parametrize(("n", "c", "k"), [(5, -1, 1), (5, 6, 1), (5, 2, 0), (5, 2, 6)])
def test_the_estimators_refuse_counts_outside_their_domain(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="pass@k needs"):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError, match=r"pass\^k needs"):
        pass_hat_k(n, c, k)


def test_each_measure_spreads_as_its_mean_least_and_most() -> None:
    turns = (1, 2, 6)
    found = [
        dataclasses.replace(
            sample("r", "passed", i, 3),
            totals=dataclasses.replace(outcome("r", "passed").totals, turns=t, cost_usd=t / 8),
        )
        for i, t in enumerate(turns, 1)
    ]
    entry = verdict_json(verdicts(found, 1.0)[0])
    assert entry["turns"] == {"mean": 3.0, "min": 1.0, "max": 6.0}
    assert entry["cost_usd"] == {"mean": 0.375, "min": 0.125, "max": 0.75}


@pytest.mark.parametrize("signal", [ExitCode.SIGINT, ExitCode.SIGTERM])
def test_a_verdict_that_met_its_rate_keeps_the_signal_of_an_interrupted_sample(
    signal: ExitCode,
) -> None:
    stopped = dataclasses.replace(sample("r", "interrupted", 3, 3), exit_code=signal)
    (verdict,) = verdicts([sample("r", "passed", 1, 3), sample("r", "passed", 2, 3), stopped], 0.5)
    assert (verdict.passed, verdict.exit_code) == (True, signal)


@pytest.mark.parametrize(
    "changes",
    [{"sample": 4}, {"sample": 0}, {"sample": "1"}, {"sample": True}, {"sample": 3, "of": 2}],
    ids=repr,
)
def test_merging_summaries_refuses_a_sample_index_outside_one_to_k(
    tmp_path: Path, changes: dict[str, Any]
) -> None:
    """In-process, as `report merge` does it (the CLI's cases are above)."""
    _, summary = _shard(tmp_path, changes)
    with pytest.raises(ConfigError, match="a sample is a whole number from 1 to its task's"):
        merge_summaries([summary], tmp_path / "out.json")


def test_a_summary_entry_is_keyed_by_name_file_and_sample() -> None:
    assert sample_key({"name": "a", "file": "f.yaml", "sample": 2}) == ("a", "f.yaml", 2)
    assert sample_key({"name": "a", "file": "f.yaml", "sample": None}) == ("a", "f.yaml", 0)
    assert sample_key({"name": "a", "file": "f.yaml"}) == ("a", "f.yaml", 0)


def _merged_code(tmp_path: Path, shards: list[tuple[str, int]]) -> int:
    """The merged exit code of shards, each (`p`/`f` per sample of task r of K, exit code)."""
    k = sum(len(statuses) for statuses, _ in shards)
    paths, first = [], 1
    for n, (statuses, code) in enumerate(shards):
        found = [
            sample("r", "passed" if s == "p" else "failed", i, k)
            for i, s in enumerate(statuses, first)
        ]
        first += len(statuses)
        data = summary_json(summary_of(found, exit_code=ExitCode(code)))
        path = tmp_path / f"{n}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        paths.append(path)
    merge_summaries(paths, tmp_path / "out.json")
    return int(json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["exit_code"])


def test_a_shards_usage_error_counts_when_every_task_passed(tmp_path: Path) -> None:
    assert _merged_code(tmp_path, [("pp", 0), ("p", 0)]) == 0
    assert _merged_code(tmp_path, [("pp", 0), ("p", 2)]) == 2
    assert _merged_code(tmp_path, [("ff", 1), ("f", 2)]) == int(
        worst_exit_code([ExitCode.FAILED, ExitCode.USAGE])
    )


def test_a_failed_samples_unknown_exit_code_counts_as_internal(tmp_path: Path) -> None:
    outcomes = [sample("r", "passed", 1, 2), sample("r", "failed", 2, 2)]
    data = summary_json(summary_of(outcomes, exit_code=ExitCode.FAILED))
    for value in (None, "x", [1], 99):
        data["tasks"][1]["exit_code"] = value
        path = tmp_path / "s.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        merge_summaries([path], tmp_path / "out.json")
        merged = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
        assert merged["repeats"][0]["exit_code"] == int(ExitCode.INTERNAL), value


def _merged_repeat(tmp_path: Path, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The merged `repeats` entry of task r's samples, each sample's entry changed as given."""
    outcomes = [sample("r", "passed", i, len(entries)) for i in range(1, len(entries) + 1)]
    data = summary_json(summary_of(outcomes, exit_code=ExitCode.OK))
    for task, changes in zip(data["tasks"], entries, strict=True):
        task.update(changes)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    merge_summaries([path], tmp_path / "out.json")
    merged = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    return dict(merged["repeats"][0])


def test_a_measure_that_is_no_count_merges_as_zero(tmp_path: Path) -> None:
    bad = [{"turns": True}, {"turns": -3}, {"turns": "7"}, {"turns": 4}]
    assert _merged_repeat(tmp_path, bad)["turns"] == {"mean": 1.0, "min": 0.0, "max": 4.0}


def test_merged_samples_keep_their_sessions_and_none_is_no_session(tmp_path: Path) -> None:
    entries = [{"session_id": "s-1"}, {"session_id": None}, {"session_id": "s-3"}]
    assert _merged_repeat(tmp_path, entries)["session_ids"] == ["s-1", "s-3"]
