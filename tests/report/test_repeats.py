"""runner.report.repeats: pass@k, pass^k and a repeated task's verdict; merging shards' samples."""

from __future__ import annotations

import dataclasses
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from runner.errors import ConfigError, ExitCode
from runner.outcome import TaskOutcome
from runner.redact import Redactor
from runner.report import merge_summaries, pass_at_k, pass_hat_k, verdict_lost, verdicts
from runner.report.github import step_summary_markdown
from runner.report.junit import merge_junit, write_junit
from runner.report.junit_repeats import sample_of
from runner.report.summary import summary_json
from tests.report.samples import outcome, summary_of


def samples(statuses: str) -> list[TaskOutcome]:
    """`statuses` as `p` (passed) and `f` (failed), one letter per sample from 1."""
    k = len(statuses)
    return [
        dataclasses.replace(
            outcome("r", "passed" if s == "p" else "failed"),
            exit_code=ExitCode.OK if s == "p" else ExitCode.FAILED,
            sample=i,
            of=k,
        )
        for i, s in enumerate(statuses, 1)
    ]


def test_pass_at_k_matches_the_hand_computation_for_n5_c2() -> None:
    # 1 - C(3, k) / C(5, k): 1 - 3/5, 1 - 3/10, 1 - 1/10, 1 - 0/5, 1 - 0/1
    assert [pass_at_k(5, 2, k) for k in range(1, 6)] == pytest.approx([0.4, 0.7, 0.9, 1, 1])
    # C(2, k) / C(5, k): 2/5, 1/10, then 0
    assert [pass_hat_k(5, 2, k) for k in range(1, 6)] == pytest.approx([0.4, 0.1, 0, 0, 0])


def test_the_estimators_are_exact_at_the_edges() -> None:
    assert pass_at_k(32, 0, 32) == 0 and pass_hat_k(32, 32, 32) == 1
    assert pass_at_k(1000, 1, 1) == pytest.approx(0.001)
    assert math.isfinite(pass_hat_k(1000, 500, 500))
    with pytest.raises(ValueError, match="pass@k"):
        pass_at_k(5, 6, 1)


def test_a_verdict_passes_at_the_rate_and_takes_the_worst_failing_code() -> None:
    outcomes = samples("pfpfp")
    (strict,) = verdicts(outcomes, 1.0)
    assert (strict.passes, strict.passed, strict.exit_code) == (3, False, ExitCode.FAILED)
    (lenient,) = verdicts(outcomes, 0.6)  # 3/5 is exactly 0.6
    assert (lenient.passed, lenient.exit_code) == (True, ExitCode.OK)


def test_the_summary_counts_a_repeated_task_once_by_its_verdict() -> None:
    summary = dataclasses.replace(
        summary_of([outcome("single", "passed"), *samples("pff")]), min_pass_rate=0.3
    )
    data = summary_json(summary)
    assert (data["passed"], data["failed"]) == (2, 0)
    assert [t.get("sample") for t in data["tasks"]] == [None, 1, 2, 3]
    (entry,) = data["repeats"]
    assert entry["pass_at_k"] == {"1": pytest.approx(1 / 3), "2": pytest.approx(2 / 3), "3": 1.0}


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_merge_joins_a_tasks_samples_from_shards_into_one_verdict(tmp_path: Path) -> None:
    outcomes = samples("pffp")
    one = summary_json(dataclasses.replace(summary_of(outcomes[:2], exit_code=ExitCode.FAILED)))
    two = summary_json(dataclasses.replace(summary_of(outcomes[2:], exit_code=ExitCode.FAILED)))
    whole = summary_json(summary_of(outcomes, exit_code=ExitCode.FAILED))
    paths = [write(tmp_path / "1.json", one), write(tmp_path / "2.json", two)]
    merge_summaries(paths, tmp_path / "out.json")
    merged = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert merged["repeats"][0]["passes"] == 2
    assert merged["repeats"][0]["pass_at_k"] == whole["repeats"][0]["pass_at_k"]
    assert (merged["passed"], merged["failed"], merged["exit_code"]) == (0, 1, 1)


def test_merge_refuses_a_summary_that_claims_too_many_samples(tmp_path: Path) -> None:
    data = summary_json(summary_of(samples("p"), exit_code=ExitCode.OK))
    data["tasks"][0]["of"] = 10**9
    with pytest.raises(ConfigError, match="at most 1000 samples"):
        merge_summaries([write(tmp_path / "s.json", data)], tmp_path / "out.json")


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("fix [2/5]", ("fix", 2, 5)),
        ("a [b] [1/1]", ("a [b]", 1, 1)),
        ("fix [6/5]", None),
        ("fix [0/5]", None),
        ("fix [1/99999]", None),
        ("fix", None),
        ("fix [x/5]", None),
    ],
)
def test_a_sample_testcase_is_named_task_i_of_k(name: str, found: Any) -> None:
    assert sample_of(name) == found


def test_fail_fast_stops_at_a_failed_sample_only_once_its_task_cannot_pass() -> None:
    first, second, _ = samples("ffp")  # K = 3; at 0.5, two passes are needed
    assert not verdict_lost(first, [], 0.3)
    assert verdict_lost(second, [first], 0.5)
    assert verdict_lost(first, [], 1.0)
    assert verdict_lost(outcome("single", "failed"), [], 0.0)


def test_the_step_summary_has_a_table_of_the_repeated_tasks() -> None:
    summary = dataclasses.replace(summary_of(samples("pfp")), min_pass_rate=0.5)
    text = step_summary_markdown(summary, Redactor(), 1 << 20)
    assert "| r [2/3] |" in text
    assert "| r | ✅ 2/3 | 0.67 | @1 0.67, @3 1.00 | ^1 0.67, ^3 0.00 |" in text


def test_merged_junit_recounts_a_tasks_samples_once_each_across_shards(tmp_path: Path) -> None:
    outcomes = samples("pffp")
    shards = [outcomes[:2], outcomes[2:], outcomes[1:2]]  # the last: a re-run of sample 2
    paths = []
    for number, part in enumerate(shards):
        path = tmp_path / f"{number}.xml"
        write_junit(summary_of(part, exit_code=ExitCode.FAILED), path, Redactor())
        paths.append(path)
    merge_junit(paths, tmp_path / "merged.xml")
    root = ET.parse(tmp_path / "merged.xml").getroot()
    for suite in root.findall("testsuite"):
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert (props["repeat.r.passes"], props["repeat.r.samples"]) == ("2", "4")
        assert props["repeat.r.pass@2"] == f"{1 - 1 / 6:.6f}"  # 1 - C(2, 2) / C(4, 2)
