"""The fleet governor's figures in summary.json, the step summary, and `report merge`, which
keeps them once for the run rather than once per shard (DESIGN 25)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from runner.redact import Redactor
from runner.report.github import step_summary_markdown
from runner.report.summary import merge_summaries, summary_json
from tests.report.samples import mixed_outcomes, summary_of


def fleet_entry(calls: int, spent: float, shard_spent: float, **more: Any) -> dict[str, Any]:
    return {
        "run": "gh-1-1",
        "store": "redis://:***@redis:6379/0",
        "mode": "fleet",
        "on_error": "fail",
        "max_cost_usd": 1.0,
        "fleet": {
            "spent_usd": spent,
            "reserved_usd": 0.0,
            "reservations": 0,
            "max_cost_usd": 1.0,
            "calls": calls,
            "refused": 1,
            "expired": 0,
            "shards": 2,
            "waits": 3,
            "wait_s": 4.5,
            "rate_limited": 1,
            "paused_s": 0.0,
        },
        "shard": {
            "id": f"host-{calls}",
            "calls": calls,
            "refused": 0,
            "spent_usd": shard_spent,
            "waits": 1,
            "wait_s": 2.0,
            "rate_limited": 0,
        },
        "warnings": more.get("warnings", []),
    }


def test_the_summary_carries_the_fleet_only_with_a_governor() -> None:
    summary = summary_of(mixed_outcomes())
    assert "fleet" not in summary_json(summary)
    entry = fleet_entry(3, 0.3, 0.1)
    assert summary_json(dataclasses.replace(summary, fleet=entry))["fleet"] == entry


def test_the_step_summary_shows_the_fleet_its_shard_and_its_warnings() -> None:
    entry = fleet_entry(3, 0.3, 0.1, warnings=["governor store redis://: down: per-process"])
    summary = dataclasses.replace(summary_of(mixed_outcomes()), fleet=entry)
    text = step_summary_markdown(summary, Redactor(), 1_000_000)
    assert "**Fleet** (run `gh-1-1`, store `redis://:***@redis:6379/0`)" in text
    assert "$0.3000 spent" in text and "of $1.00" in text and "1 429(s)" in text
    assert "This shard: 3 call(s), 0 refused, $0.1000 spent, 1 wait(s) (2.0 s)" in text
    assert "> [!WARNING]" in text and "per-process" in text


def test_merge_keeps_the_latest_fleet_figures_once_and_lists_each_shard(tmp_path: Path) -> None:
    paths = []
    for index, entry in enumerate([fleet_entry(5, 0.5, 0.2), fleet_entry(9, 0.8, 0.6)]):
        data = summary_json(dataclasses.replace(summary_of(mixed_outcomes()), fleet=entry))
        path = tmp_path / f"s{index}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        paths.append(path)
    merge_summaries(paths, tmp_path / "merged.json")
    merged = json.loads((tmp_path / "merged.json").read_text(encoding="utf-8"))
    fleet = merged["fleet"]
    assert fleet["fleet"]["spent_usd"] == 0.8  # the later figures, not 0.5 + 0.8
    assert fleet["fleet"]["waits"] == 3
    assert [s["spent_usd"] for s in fleet["shards"]] == [0.2, 0.6]
    assert (fleet["run"], fleet["mode"]) == ("gh-1-1", "fleet")


def test_merge_of_shards_without_a_governor_has_no_fleet(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(summary_json(summary_of(mixed_outcomes()))), encoding="utf-8")
    merge_summaries([path], tmp_path / "merged.json")
    assert "fleet" not in json.loads((tmp_path / "merged.json").read_text(encoding="utf-8"))
