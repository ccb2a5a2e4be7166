"""`report_finding` calls are checked, bounded and masked before they count (DESIGN 21): each bad
one gets an error the model can act on, and the task goes on."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from runner.outcome import Finding
from runner.redact import Redactor
from runner.run.guard import REPORT_FINDING, FindingSink, findings_gate
from runner.run.guard.findcheck import FindingLimits
from runner.task import FindingsSpec, Task, TaskSpec
from runner.toolcall import ToolResult, ToolSpec

SECRET = "tok-findings-5d1e0c77"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "repo" / "w"
    (work / "src").mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    (work / "src" / "a.py").write_text("one\ntwo\nthree\n", encoding="utf-8")
    (work / "blob.bin").write_bytes(b"PK\0\0binary")
    (tmp_path / "outside.py").write_text("x\n", encoding="utf-8")
    os.symlink(work / "src" / "a.py", work / "link.py")
    os.symlink(tmp_path, work / "up")
    return work


class Logged:
    def __init__(self) -> None:
        self.findings: list[tuple[Finding, int]] = []

    def finding(self, finding: Finding, turn: int) -> None:
        self.findings.append((finding, turn))


def sink(workdir: Path) -> FindingSink:
    return FindingSink(workdir, Redactor([SECRET]).text, Logged(), lambda: 3)


def args(**over: Any) -> dict[str, Any]:
    return {
        "path": "src/a.py",
        "line": 2,
        "severity": "warning",
        "title": "Two",
        "message": "The second line.",
        **over,
    }


def test_an_accepted_finding_is_relative_to_the_repository_root_and_logged(workdir: Path) -> None:
    found = sink(workdir)
    result = found.accept(args(end_line="3"))
    assert not result.is_error, result.text
    (finding,) = found.findings
    assert (finding.path, finding.line, finding.end_line) == ("w/src/a.py", 2, 3)
    assert isinstance(found.log, Logged) and found.log.findings == [(finding, 3)]


@pytest.mark.parametrize(
    ("over", "error"),
    [
        ({"path": "../../outside.py"}, "outside the working directory"),
        ({"path": str(Path("/etc/passwd"))}, "outside the working directory"),
        ({"path": "link.py"}, "symlink"),
        ({"path": "up/outside.py"}, "symlink"),
        ({"path": "blob.bin"}, "binary"),
        ({"path": "src"}, "not a regular file"),
        ({"path": "nope.py"}, "does not exist"),
        ({"line": 4}, "not a line of the file, which has 3 lines"),
        ({"line": 0}, "not a line"),
        ({"line": True}, "must be a line number"),
        ({"line": "two"}, "must be a line number"),
        ({"line": 3, "end_line": 2}, "before `line`"),
        ({"severity": "critical"}, "must be one of error, warning, note"),
        ({"message": "x" * 1_000_000}, "keep it under 8000"),
        ({"title": ""}, "`title` is required"),
        ({"suggestion": 5}, "must be text"),
    ],
)
def test_a_bad_finding_is_refused_with_what_to_fix(
    workdir: Path, over: dict[str, Any], error: str
) -> None:
    found = sink(workdir)
    result = found.accept(args(**over))
    assert result.is_error and error in result.text
    assert found.findings == []


def test_a_title_becomes_one_line_and_a_secret_is_masked(workdir: Path) -> None:
    found = sink(workdir)
    found.accept(args(title="A\n::error::x\r\nB", message=f"uses {SECRET}", suggestion=SECRET))
    (finding,) = found.findings
    assert finding.title == "A ::error::x B"
    assert SECRET not in finding.message and "***" in finding.message
    assert finding.suggestion == "***"


def test_ten_thousand_findings_keep_the_first_ones_and_the_rest_are_refused(
    tmp_path: Path,
) -> None:
    (tmp_path / "big.py").write_text("".join(f"x{n}\n" for n in range(10_000)), encoding="utf-8")
    found = sink(tmp_path)
    results = [found.accept(args(path="big.py", line=n + 1)) for n in range(10_000)]
    assert len(found.findings) == FindingLimits.per_task
    refused = [r for r in results if r.is_error]
    assert len(refused) == 10_000 - FindingLimits.per_task
    assert "Finish with attempt_completion" in refused[-1].text


def test_the_same_finding_twice_is_recorded_once_and_the_same_text_elsewhere_is_not(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.py").write_text("same\nsame\n", encoding="utf-8")
    found = sink(tmp_path)
    assert not found.accept(args(path="a.py", line=1)).is_error
    assert not found.accept(args(path="a.py", line=2)).is_error


def test_the_same_finding_twice_is_recorded_once(workdir: Path) -> None:
    found = sink(workdir)
    found.accept(args())
    again = found.accept(args(message="Said again."))
    assert again.is_error and "finding 1 again" in again.text
    assert len(found.findings) == 1


def test_the_fingerprint_follows_the_lines_text_not_their_number(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a\nbug()\n", encoding="utf-8")
    first = sink(tmp_path)
    first.accept(args(path="a.py", line=2))
    (tmp_path / "a.py").write_text("new\na\nbug()\n", encoding="utf-8")
    moved = sink(tmp_path)
    moved.accept(args(path="a.py", line=3))
    assert first.findings[0].fingerprint == moved.findings[0].fingerprint


def test_the_gate_fails_at_or_above_its_severity_and_names_the_worst_first() -> None:
    note = Finding("a.py", 1, 1, "note", "N", "n")
    error = Finding("b.py", 2, 2, "error", "E", "e")
    assert findings_gate([note], "warning") is None
    assert findings_gate([note, error], "never") is None
    reason = findings_gate([note, error], "note")
    assert reason is not None and reason.index("b.py:2: E") < reason.index("a.py:1: N")


class Hub:
    def __init__(self) -> None:
        self.tools = [ToolSpec("read_file", "", server="workspace")]
        self.allowed_tools = self.tools

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(f"hub ran {name}")


def test_the_executor_serves_report_finding_and_passes_every_other_call_on(
    workdir: Path,
) -> None:
    executor = sink(workdir).wrap(Hub(), None)
    assert [t.name for t in executor.allowed_tools] == ["read_file", REPORT_FINDING]
    assert [t.name for t in executor.tools] == ["read_file", REPORT_FINDING]
    other = anyio.run(executor.call, "read_file", {})
    assert other.text == "hub ran read_file"
    accepted = anyio.run(executor.call, REPORT_FINDING, args())
    assert accepted.text.startswith("Finding 1 recorded (warning, w/src/a.py:2)")


def _task(workdir: Path, **spec: Any) -> Task:
    return Task("t", workdir / "t.yaml", 1, TaskSpec(prompt="p", **spec), workdir, (), {})


def test_a_task_without_findings_has_a_sink_that_is_off(workdir: Path) -> None:
    off = FindingSink.of(_task(workdir), str, lambda: 0)
    hub = Hub()
    assert off.wrap(hub, Logged()) is hub
    assert off.tools(hub.tools) == hub.tools
    assert off.result() is None and off.gate("note") is None
    refused = off.accept(args())
    assert refused == ToolResult(f"Error: no tool named {REPORT_FINDING!r} in this task.", True)
    assert off.findings == []


def test_a_resumed_task_keeps_and_logs_its_parents_findings_and_gate(workdir: Path) -> None:
    earlier = Finding("w/src/a.py", 1, 1, "error", "Old", "o", None, "fp")

    class Resume:
        findings = (earlier,)

    task = _task(workdir, findings=FindingsSpec(fail_on="error"))
    resumed = FindingSink.of(task, str, lambda: 7, Resume())
    log = Logged()
    resumed.wrap(Hub(), log)
    assert log.findings == [(earlier, 7)]
    assert resumed.result() == (earlier,)
    assert resumed.gate(None) is not None and resumed.gate("never") is None


def test_the_config_asks_every_task_for_findings_and_keeps_a_tasks_own(workdir: Path) -> None:
    from runner.run.guard import with_config_findings

    plain, own = _task(workdir), _task(workdir, findings=FindingsSpec(fail_on="note"))
    assert with_config_findings([plain], False) == [plain]
    asked, kept = with_config_findings([plain, own], True)
    assert asked.spec.findings == FindingsSpec() and kept is own


@pytest.mark.parametrize("count", range(1, 13))
def test_the_gate_names_the_worst_findings_and_counts_the_ones_it_leaves_out(
    count: int,
) -> None:
    found = [Finding(f"n{n}.py", n, n, "note", f"N{n}", "n") for n in range(count - 1)]
    found.append(Finding("e.py", 9, 9, "error", "E", "e"))
    reason = findings_gate(found, "note")
    assert reason is not None and reason.startswith(f"{count} finding(s) at or above note: ")
    listed = reason.split(": ", 1)[1].split("; and ")[0].split("; ")
    assert listed[0] == "error e.py:9: E"
    more = int(reason.split("; and ")[1].removesuffix(" more")) if "; and " in reason else 0
    assert len(listed) + more == count and len(listed) >= 1
    assert ("; and " in reason) == (more > 0) == (len(listed) < count)
    assert listed[1:] == [f"note n{n}.py:{n}: N{n}" for n in range(len(listed) - 1)]


def test_the_tool_offered_asks_for_the_finding_by_schema(workdir: Path) -> None:
    (spec,) = sink(workdir).tools([])
    assert spec.name == REPORT_FINDING
    jsonschema.validate(args(end_line=3, suggestion="2"), spec.input_schema)
    for missing in ("path", "line", "severity", "title", "message"):
        call = {key: value for key, value in args().items() if key != missing}
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(call, spec.input_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(args(severity="critical"), spec.input_schema)


def test_a_tasks_own_sink_checks_masks_and_logs_each_finding_at_its_turn(workdir: Path) -> None:
    task = _task(workdir, findings=FindingsSpec(fail_on="warning"))
    found = FindingSink.of(task, Redactor([SECRET]).text, lambda: 5)
    log = Logged()
    executor = found.wrap(Hub(), log)
    result = anyio.run(executor.call, REPORT_FINDING, args(message=f"leaks {SECRET}"))
    assert result.text.startswith("Finding 1 recorded (warning, w/src/a.py:2)")
    (finding,) = found.result() or ()
    assert finding.message == "leaks ***" and log.findings == [(finding, 5)]
    assert found.gate(None) == "1 finding(s) at or above warning: warning w/src/a.py:2: Two"
