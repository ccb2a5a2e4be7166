"""Repeated tasks' rules the mutation run of issue 47 found unpinned, each as the rule: a verdict
reports its task by name and file and its estimators over its passes; every figure of summary.json's
`repeats` entry and of JUnit's properties has its precision; `report merge` reads every measure
of every sample, a task run once beside a repeated one, and the rate a shard does not name."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from runner.errors import ConfigError, ExitCode
from runner.outcome import TaskOutcome, Totals
from runner.report import merge_summaries, pass_at_k, pass_hat_k, verdict_lost, verdicts
from runner.report.repeats import (
    MAX_REPEAT,
    Spread,
    run_exit_code,
    verdict_json,
    verdict_properties,
)
from runner.report.summary import summary_json
from tests.report.samples import outcome, summary_of


def sample(
    status: str,
    index: int,
    of: int,
    *,
    name: str = "r",
    task_file: str = "t.yaml",
    totals: Totals | None = None,
) -> TaskOutcome:
    code = ExitCode.OK if status == "passed" else ExitCode.FAILED
    base = outcome(name, status, task_file=task_file)  # type: ignore[arg-type]
    found = dataclasses.replace(base, exit_code=code, sample=index, of=of)
    return dataclasses.replace(found, totals=totals) if totals is not None else found


def statuses(letters: str, **kwargs: Any) -> list[TaskOutcome]:
    """`p` passed, `f` failed, one letter per sample from 1."""
    k = len(letters)
    return [
        sample("passed" if s == "p" else "failed", i, k, **kwargs) for i, s in enumerate(letters, 1)
    ]


# The estimators and the verdict.


@pytest.mark.parametrize(("n", "c", "k"), [(5, 6, 1), (4, 2, 7), (3, -1, 2)])
def test_an_estimator_refused_names_each_count_it_was_given(n: int, c: int, k: int) -> None:
    for estimator, name in ((pass_at_k, "pass@k"), (pass_hat_k, "pass^k")):
        with pytest.raises(ValueError) as raised:
            estimator(n, c, k)
        assert str(raised.value) == (
            f"{name} needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})"
        )


def test_pass_at_k_and_pass_hat_k_are_over_the_passes_when_samples_failed() -> None:
    """K = 5 with 2 passes, all 5 ran: the estimators are over c = 2, not over those that ran."""
    (verdict,) = verdicts(statuses("fpfpf"), 0.0)
    assert (verdict.samples, verdict.ran, verdict.passes) == (5, 5, 2)
    assert verdict.pass_at == pytest.approx([pass_at_k(5, 2, k) for k in range(1, 6)])
    assert verdict.pass_hat == pytest.approx([pass_hat_k(5, 2, k) for k in range(1, 6)])
    assert verdict.pass_at == pytest.approx([0.4, 0.7, 0.9, 1.0, 1.0])
    assert verdict.pass_hat == pytest.approx([0.4, 0.1, 0.0, 0.0, 0.0])


def test_pass_at_k_is_over_k_when_samples_are_missing_and_one_failed() -> None:
    """K = 4, samples 1..3 ran, one failed: n = 4, c = 2 (not n = 3, not c = 3)."""
    found = [sample("passed", 1, 4), sample("failed", 2, 4), sample("passed", 3, 4)]
    (verdict,) = verdicts(found, 0.0)
    assert (verdict.samples, verdict.ran, verdict.passes) == (4, 3, 2)
    assert verdict.pass_at == pytest.approx([pass_at_k(4, 2, k) for k in range(1, 5)])
    assert verdict.pass_hat == pytest.approx([pass_hat_k(4, 2, k) for k in range(1, 5)])


@pytest.mark.parametrize("code", [ExitCode.BUDGET, ExitCode.INFRASTRUCTURE, ExitCode.INTERNAL])
def test_a_failed_verdict_takes_the_code_of_the_samples_that_did_not_pass(
    code: ExitCode,
) -> None:
    """A sample that ended over budget (or down, or broken) gives the verdict its code, not
    FAILED, and a passed sample's OK never counts."""
    found = statuses("pp")
    found[1] = dataclasses.replace(found[1], status="budget_exceeded", exit_code=code)
    (verdict,) = verdicts(found, 1.0)
    assert (verdict.passed, verdict.exit_code) == (False, code)
    assert verdict_json(verdict)["exit_code"] == int(code)


def test_a_verdict_names_its_task_and_its_file() -> None:
    (verdict,) = verdicts(statuses("pp", name="build", task_file="suite/ci.yaml"), 1.0)
    assert (verdict.name, verdict.file) == ("build", "suite/ci.yaml")
    entry = verdict_json(verdict)
    assert (entry["name"], entry["file"]) == ("build", "suite/ci.yaml")


def test_a_verdict_and_a_spread_are_values_that_cannot_change() -> None:
    (verdict,) = verdicts(statuses("pf"), 0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.passes = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.turns.mean = 0.0  # type: ignore[misc]
    assert hash(verdict) == hash(dataclasses.replace(verdict))
    assert {verdict.turns: 1}[Spread.of([3, 3])] == 1


def test_a_measure_over_no_values_spreads_as_zeros() -> None:
    assert Spread.of([]) == Spread(0.0, 0.0, 0.0)
    assert Spread.of([]).as_json(3) == {"mean": 0.0, "min": 0.0, "max": 0.0}


def test_the_default_rate_is_every_sample() -> None:
    """Without a rate, a task passes only when every sample passed; the run's code follows."""
    (all_passed,) = verdicts(statuses("pp"))
    (one_failed,) = verdicts(statuses("pf"))
    assert (all_passed.passed, all_passed.min_pass_rate) == (True, 1.0)
    assert (one_failed.passed, one_failed.exit_code) == (False, ExitCode.FAILED)
    assert run_exit_code(statuses("pp")) == ExitCode.OK
    assert run_exit_code(statuses("pf")) == ExitCode.FAILED


def test_the_runs_code_counts_every_task_run_once_beside_the_repeated_ones() -> None:
    failed_once = dataclasses.replace(outcome("single", "failed"), exit_code=ExitCode.BUDGET)
    passed_once = outcome("other", "passed")
    assert run_exit_code([failed_once, *statuses("pp")], 1.0) == ExitCode.BUDGET
    assert run_exit_code([*statuses("pp"), failed_once], 1.0) == ExitCode.BUDGET
    assert run_exit_code([passed_once, *statuses("pf")], 1.0) == ExitCode.FAILED
    assert run_exit_code([passed_once, *statuses("pf")], 0.5) == ExitCode.OK
    assert run_exit_code([passed_once], 1.0) == ExitCode.OK


# What a verdict is written as: summary.json's `repeats` entry and JUnit's properties.


def _odd_verdict() -> Any:
    """K = 3 with one pass (1/3 repeats forever) and measures whose means need rounding."""
    measures = [(1, 1, 0.1234561, 1.0001), (2, 2, 0.0, 2.0002), (2, 4, 0.0000003, 0.0004)]
    found = [
        sample(
            "passed" if i == 1 else "failed",
            i,
            3,
            totals=Totals(turns=t, input_tokens=tok, cost_usd=cost, duration_s=dur),
        )
        for i, (t, tok, cost, dur) in enumerate(measures, 1)
    ]
    (verdict,) = verdicts(found, 0.3)
    return verdict


def test_the_repeats_entry_rounds_rates_to_6_digits_and_each_measure_to_its_own() -> None:
    entry = verdict_json(_odd_verdict())
    assert entry["pass_rate"] == 0.333333
    assert entry["pass_at_k"] == {"1": 0.333333, "2": 0.666667, "3": 1.0}
    assert entry["pass_hat_k"] == {"1": 0.333333, "2": 0.0, "3": 0.0}
    assert entry["turns"] == {"mean": 1.667, "min": 1.0, "max": 2.0}
    assert entry["tokens"] == {"mean": 2.333, "min": 1.0, "max": 4.0}
    assert entry["cost_usd"] == {"mean": 0.041152, "min": 0.0, "max": 0.123456}
    assert entry["duration_s"] == {"mean": 1.0, "min": 0.0, "max": 2.0}
    assert (entry["status"], entry["exit_code"], entry["min_pass_rate"]) == ("passed", 0, 0.3)


def test_every_junit_property_of_a_verdict_is_named_and_written_at_its_precision() -> None:
    assert verdict_properties(_odd_verdict()) == {
        "repeat.r.status": "passed",
        "repeat.r.samples": "3",
        "repeat.r.passes": "1",
        "repeat.r.pass_rate": "0.333333",
        "repeat.r.min_pass_rate": "0.3",
        "repeat.r.pass@1": "0.333333",
        "repeat.r.pass@2": "0.666667",
        "repeat.r.pass@3": "1.000000",
        "repeat.r.pass^1": "0.333333",
        "repeat.r.pass^2": "0.000000",
        "repeat.r.pass^3": "0.000000",
        "repeat.r.turns.mean": "1.667",
        "repeat.r.turns.min": "1",
        "repeat.r.turns.max": "2",
        "repeat.r.tokens.mean": "2.333",
        "repeat.r.tokens.min": "1",
        "repeat.r.tokens.max": "4",
        "repeat.r.cost_usd.mean": "0.041152",
        "repeat.r.cost_usd.min": "0.000000",
        "repeat.r.cost_usd.max": "0.123456",
        "repeat.r.duration_s.mean": "1",
        "repeat.r.duration_s.min": "0",
        "repeat.r.duration_s.max": "2",
    }


def test_a_failed_verdicts_properties_say_failed() -> None:
    (verdict,) = verdicts(statuses("pf"), 1.0)
    props = verdict_properties(verdict)
    assert props["repeat.r.status"] == "failed" and props["repeat.r.min_pass_rate"] == "1"
    assert verdict_json(verdict)["status"] == "failed"


# `report merge`: the samples' entries as summary.json holds them (untrusted input).


def _merge(tmp_path: Path, shards: list[dict[str, Any]]) -> dict[str, Any]:
    paths = []
    for n, data in enumerate(shards):
        path = tmp_path / f"shard-{n}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        paths.append(path)
    merge_summaries(paths, tmp_path / "out.json")
    return dict(json.loads((tmp_path / "out.json").read_text(encoding="utf-8")))


def _shard(outcomes: list[TaskOutcome], code: ExitCode, rate: float | None) -> dict[str, Any]:
    data = summary_json(dataclasses.replace(summary_of(outcomes, exit_code=code)))
    if rate is None:
        data.pop("min_pass_rate", None)
    else:
        data["min_pass_rate"] = rate
    return data


def test_merge_reads_each_samples_turns_tokens_cost_and_time(tmp_path: Path) -> None:
    found = [
        sample(
            "passed",
            i,
            2,
            totals=Totals(turns=t, input_tokens=tok, output_tokens=1, cost_usd=c, duration_s=d),
        )
        for i, (t, tok, c, d) in enumerate([(2, 9, 0.25, 0.5), (4, 19, 0.75, 1.5)], 1)
    ]
    (entry,) = _merge(tmp_path, [_shard(found, ExitCode.OK, 1.0)])["repeats"]
    assert entry["turns"] == {"mean": 3.0, "min": 2.0, "max": 4.0}
    assert entry["tokens"] == {"mean": 15.0, "min": 10.0, "max": 20.0}
    assert entry["cost_usd"] == {"mean": 0.5, "min": 0.25, "max": 0.75}
    assert entry["duration_s"] == {"mean": 1.0, "min": 0.5, "max": 1.5}


@pytest.mark.parametrize("bad", [float("nan"), -0.5, "0.5", None, True])
def test_merge_reads_a_measure_that_is_no_amount_as_zero_and_keeps_a_fraction(
    tmp_path: Path, bad: Any
) -> None:
    data = _shard(statuses("pp"), ExitCode.OK, 1.0)
    data["tasks"][0]["cost_usd"], data["tasks"][1]["cost_usd"] = bad, 0.5
    data["tasks"][0]["duration_s"], data["tasks"][1]["duration_s"] = 0, 0.25
    (entry,) = _merge(tmp_path, [data])["repeats"]
    assert entry["cost_usd"] == {"mean": 0.25, "min": 0.0, "max": 0.5}
    assert entry["duration_s"] == {"mean": 0.125, "min": 0.0, "max": 0.25}


def test_merge_takes_the_highest_rate_the_shards_name_and_every_sample_without_one(
    tmp_path: Path,
) -> None:
    """Shards that name no rate merge at 1.0 (every sample must pass), and the merged summary
    says the rate it used; a shard's rate that is no number is not one."""
    found = statuses("pf")
    shards = [_shard(found[:1], ExitCode.OK, None), _shard(found[1:], ExitCode.FAILED, None)]
    unnamed = _merge(tmp_path, shards)
    assert unnamed["min_pass_rate"] == 1.0
    assert (unnamed["passed"], unnamed["failed"], unnamed["exit_code"]) == (0, 1, 1)
    assert unnamed["repeats"][0]["status"] == "failed"
    named = [_shard(found[:1], ExitCode.OK, 0.2), _shard(found[1:], ExitCode.FAILED, 0.5)]
    named[0]["min_pass_rate"] = "0.9"
    merged = _merge(tmp_path, named)
    assert merged["min_pass_rate"] == 0.5
    assert (merged["passed"], merged["failed"], merged["exit_code"]) == (1, 0, 0)
    assert merged["repeats"][0]["min_pass_rate"] == 0.5


def test_merge_counts_a_task_run_once_beside_a_repeated_one(tmp_path: Path) -> None:
    single = dataclasses.replace(outcome("single", "failed"), exit_code=ExitCode.FAILED)
    shards = [
        _shard([single, sample("passed", 1, 2)], ExitCode.FAILED, 1.0),
        _shard([sample("passed", 2, 2)], ExitCode.OK, 1.0),
    ]
    merged = _merge(tmp_path, shards)
    assert [(t["name"], t.get("sample"), t.get("of")) for t in merged["tasks"]] == [
        ("single", None, None),
        ("r", 1, 2),
        ("r", 2, 2),
    ]
    assert [(r["name"], r["samples"], r["passes"]) for r in merged["repeats"]] == [("r", 2, 2)]
    assert (merged["passed"], merged["failed"], merged["exit_code"]) == (1, 1, 1)


def test_merge_takes_the_most_samples_a_task_may_have_and_refuses_one_more(
    tmp_path: Path,
) -> None:
    data = _shard([sample("passed", 1, 2)], ExitCode.OK, 0.0)
    data["tasks"][0]["of"] = MAX_REPEAT
    data["tasks"][0]["sample"] = MAX_REPEAT
    (entry,) = _merge(tmp_path, [data])["repeats"]
    assert (entry["samples"], entry["passes"]) == (1000, 1) and MAX_REPEAT == 1000
    data["tasks"][0]["of"] = MAX_REPEAT + 1
    with pytest.raises(ConfigError, match="at most 1000 samples of a task"):
        _merge(tmp_path, [data])


def test_a_refused_sample_is_shown_cut_to_20_characters_and_its_task_to_100(
    tmp_path: Path,
) -> None:
    data = _shard([sample("passed", 1, 2)], ExitCode.OK, 1.0)
    data["tasks"][0].update({"name": "n" * 150, "sample": "s" * 30, "of": 2})
    with pytest.raises(ConfigError) as raised:
        _merge(tmp_path, [data])
    message = str(raised.value)
    assert message.startswith(f"report merge: task {'n' * 100!r} claims sample {'s' * 20} of 2;")
    data["tasks"][0].update({"sample": 1, "of": "o" * 30})
    with pytest.raises(ConfigError) as raised:
        _merge(tmp_path, [data])
    assert f"claims sample 1 of {'o' * 20}; a sample" in str(raised.value)


def test_merge_keeps_every_status_a_sample_may_have_and_reads_another_as_error(
    tmp_path: Path,
) -> None:
    """A sample's status decides only passed or not; one this runner does not know is not a
    pass even when its code says 0."""
    data = _shard(statuses("ppp"), ExitCode.OK, 0.0)
    data["tasks"][2]["status"] = "PASSED"
    (entry,) = _merge(tmp_path, [data])["repeats"]
    assert entry["passes"] == 2
    assert math.isclose(entry["pass_rate"], 0.666667)


@pytest.mark.parametrize("rate", [0.66666664, 0.6666667, 0.5, 2 / 3])
def test_fail_fast_decides_a_task_lost_exactly_when_its_verdict_would_fail(rate: float) -> None:
    """K = 3, one sample failed and the others pass: `--fail-fast` stops at the failure only
    when that verdict fails, at the rate as the verdict reads it (6 digits, so 0.66666664
    asks for more than 2 of 3)."""
    first = sample("failed", 2, 3)
    (verdict,) = verdicts([sample("passed", 1, 3), first, sample("passed", 3, 3)], rate)
    assert verdict_lost(first, [], rate) is (not verdict.passed)


def test_a_merge_keeps_the_worst_shard_code_over_a_usage_error(tmp_path: Path) -> None:
    """A shard's internal error or signal outranks another shard's usage error, as in a run."""
    for worse in (ExitCode.INTERNAL, ExitCode.SIGINT):
        shards = [
            _shard([sample("passed", 1, 2)], worse, 1.0),
            _shard([sample("passed", 2, 2)], ExitCode.USAGE, 1.0),
        ]
        assert _merge(tmp_path, shards)["exit_code"] == int(worse)


def test_a_merge_keeps_tasks_of_one_name_in_two_files_apart(tmp_path: Path) -> None:
    found = [sample("passed", i, 2, task_file=f) for f in ("a.yaml", "b.yaml") for i in (1, 2)]
    merged = _merge(tmp_path, [_shard(found, ExitCode.OK, 1.0)])
    assert [(r["file"], r["samples"], r["passes"]) for r in merged["repeats"]] == [
        ("a.yaml", 2, 2),
        ("b.yaml", 2, 2),
    ]
