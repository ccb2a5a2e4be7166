"""The sandbox record in JUnit system-out and summary.json (DESIGN 15)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from runner.outcome import SandboxRecord
from runner.report.junit import task_facts
from runner.report.summary import summary_json
from tests.report.samples import outcome, summary_of


@pytest.mark.parametrize(
    ("record", "line"),
    [
        (
            SandboxRecord("enforced", "bwrap", writable=("build", "dist")),
            "sandbox: enforced (bwrap); network: off; writable: workdir, build, dist",
        ),
        (
            SandboxRecord("enforced", "landlock", network=True),
            "sandbox: enforced (landlock); network: on; writable: workdir",
        ),
        (
            SandboxRecord(
                "enforced",
                "landlock",
                reason="pid: the runner's process is visible",
                enforced=("fs", "caps", "net", "sockets"),
                missing=("pid",),
            ),
            "sandbox: enforced (landlock); network: off; writable: workdir; confined: fs, caps,"
            " net, sockets; not confined: pid (pid: the runner's process is visible)",
        ),
        (
            SandboxRecord("degraded", reason="bwrap: not installed"),
            "sandbox: degraded (bwrap: not installed)",
        ),
        (SandboxRecord("unavailable", reason="none"), "sandbox: unavailable (none)"),
        (SandboxRecord("off", network=True), "sandbox: off"),
    ],
)
def test_the_record_reads_as_one_line(record: SandboxRecord, line: str) -> None:
    assert record.line() == line
    facts = task_facts(replace(outcome("t", "passed"), sandbox=record))
    assert facts[-1] == line


def test_a_task_without_a_record_has_no_sandbox_line() -> None:
    assert not any(f.startswith("sandbox:") for f in task_facts(outcome("t", "passed")))


def test_summary_json_carries_the_record() -> None:
    record = SandboxRecord(
        "enforced", "bwrap", writable=("build",), enforced=("fs", "caps", "net", "pid", "sockets")
    )
    data = summary_json(summary_of([replace(outcome("t", "passed"), sandbox=record)]))
    assert data["tasks"][0]["sandbox"] == {
        "status": "enforced",
        "backend": "bwrap",
        "reason": None,
        "network": False,
        "writable": ["build"],
        "enforced": ["fs", "caps", "net", "pid", "sockets"],
        "missing": [],
    }
    assert summary_json(summary_of([outcome("u", "passed")]))["tasks"][0]["sandbox"] is None
