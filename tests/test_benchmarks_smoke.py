"""The benchmark's quick mode runs end to end and reports every figure (no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_quick_benchmark_writes_every_figure(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(tmp_path)],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=240,
    )

    report = json.loads((tmp_path / "quick.json").read_text(encoding="utf-8"))
    figures = " ".join(row["figure"] for row in report["rows"])
    for part in (
        "per-turn, openai",
        "per-turn, anthropic",
        "--version",
        "first model request",
        "MCP tool call",
        "speed-up",
        "memory per concurrent task",
        "peak RSS",
        "log append",
        "prompt bytes",
        "rolling cache",
        "fan-out under 429s",
        "CONNECT round trips",
        "--repeat",
        "fleet governor",
        "first request, default task",
        "server-everything",
    ):
        assert part in figures
    # A difference of two peaks may be 0 in a tiny run, and so may a count of 429s.
    differences = ("growth", "memory per", "429s of a")
    assert all(
        row["runner"] > 0
        for row in report["rows"]
        if not any(word in row["figure"] for word in differences)
    )
    assert "| figure |" in (tmp_path / "quick.md").read_text(encoding="utf-8")
