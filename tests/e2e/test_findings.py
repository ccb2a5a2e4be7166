"""Findings through the CLI (DESIGN 21): a scripted review reports findings with `report_finding`
(XML and native modes, and from a sub-agent), and the run leaves SARIF that validates against the
official schema, annotations on stdout under GitHub Actions, a review body in GitHub's shape, a
findings table in the step summary, and the `--fail-on` gate's exit code; `report merge` joins
the shards' SARIF and reviews with every finding once."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.e2e.conftest import (
    REPO,
    XSD_VALIDATOR,
    Done,
    Scenario,
    call,
    clean_env,
    complete,
    junit_schema_problems,
    log_schema_errors,
    run_all,
    run_one,
)
from tests.fakes.model_server import reply
from tests.fakes.native_wire import call as native_call

SARIF_SCHEMA = json.loads(
    (REPO / "tests" / "report" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8")
)
SECRET = "rv-secret-value-8f3e2a"
CALC = (
    '"""Calc."""\n\n\ndef average(numbers):\n    """Mean."""\n'
    "    return sum(numbers) / (len(numbers) + 1)\n"
)
INJECTED_TITLE = "Off by one\n::error file=x::pwned"


def finding(**params: str) -> str:
    return call("report_finding", **params)


REVIEW = "\n".join(
    [
        "Three findings, and one on a file that is not there.",
        finding(
            path="calc.py",
            line="6",
            severity="error",
            title="Wrong divisor",
            message="Divides by len + 1.",
            suggestion="    return sum(numbers) / len(numbers)",
        ),
        finding(
            path="calc.py",
            line="4",
            end_line="5",
            severity="warning",
            title=INJECTED_TITLE,
            message=f"Token {SECRET} leaks; empty list @octocat.",
        ),
        finding(path="calc.py", line="1", severity="note", title="Docstring", message="Terse."),
        finding(path="../t.yaml", line="1", severity="note", title="Outside", message="No."),
        finding(path="calc.py", line="99", severity="note", title="Past the end", message="No."),
    ]
)


def review_scenario(name: str, *more: str, **task: Any) -> Scenario:
    return Scenario(
        task={"name": name, "findings": True, "secrets": ["REVIEW_TOKEN"], **task},
        steps=[reply(REVIEW), complete("reviewed")],
        files={"calc.py": CALC},
        args=["run", "t.yaml", "--model", "openai:gpt-4.1", "--out", "OUT", *more],
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": "summary.md", "REVIEW_TOKEN": SECRET},
    )


def native_scenario() -> Scenario:
    arguments = {"path": "calc.py", "line": 6, "severity": "warning", "title": "T", "message": "M"}
    return Scenario(
        task={"name": "native-review", "findings": True, "tool_mode": "native"},
        steps=[
            reply("", tool_calls=(native_call("report_finding", arguments),)),
            reply("", tool_calls=(native_call("attempt_completion", {"result": "ok"}),)),
        ],
        files={"calc.py": CALC},
    )


LONE = "\ud83d"
"""Half of a surrogate pair: JSON lets a model send it alone, and it cannot be UTF-8."""


def surrogate_scenario() -> Scenario:
    arguments = {
        "path": "calc.py",
        "line": 6,
        "severity": "warning",
        "title": f"Odd {LONE} title",
        "message": f"Bad {LONE} byte",
        "suggestion": f"    return {LONE}",
    }
    return Scenario(
        task={"name": "surrogate-review", "findings": True, "tool_mode": "native"},
        steps=[
            reply("", tool_calls=(native_call("report_finding", arguments),)),
            reply("", tool_calls=(native_call("attempt_completion", {"result": f"ok {LONE}"}),)),
        ],
        files={"calc.py": CALC},
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": "summary.md"},
    )


def agent_scenario() -> Scenario:
    reader = {"description": "Reviews one file.", "prompt": "You review code."}
    child = finding(path="calc.py", line="6", severity="error", title="Child", message="Bug.")
    return Scenario(
        task={"name": "agent-review", "findings": True, "agents": {"reviewer": reader}},
        steps=[reply(call("sub_agent", agent="reviewer", task="C-TASK review calc.py"))],
        routes={"C-TASK": [reply(child), complete("found one")]},
        default=complete("the reviewer found one"),
        files={"calc.py": CALC},
    )


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(
        {
            "gated": review_scenario("review", "--fail-on", "error"),
            "ungated": review_scenario("review-2", **{"findings": {"fail_on": "never"}}),
            "native": native_scenario(),
            "agent": agent_scenario(),
            "surrogate": surrogate_scenario(),
        },
        module_dir,
    )


def sarif(done: Done) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((done.out / "findings.sarif").read_text(encoding="utf-8"))
    return data


def test_a_review_writes_sarif_that_the_official_schema_accepts(runs: dict[str, Done]) -> None:
    for name, done in runs.items():
        document = sarif(done)
        jsonschema.Draft4Validator(SARIF_SCHEMA).validate(document)
        for record in done.logs():
            assert log_schema_errors(record.path) == [], name
    (run,) = sarif(runs["gated"])["runs"]
    assert run["tool"]["driver"]["name"] == "agent-runner"
    results = run["results"]
    assert [r["level"] for r in results] == ["error", "warning", "note"]
    location = results[0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "calc.py"  # the workdir is no repository
    assert location["region"] == {"startLine": 6, "endLine": 6}
    assert all(r["partialFingerprints"]["agentRunnerFinding/v1"] for r in results)
    ids = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    assert {r["ruleId"] for r in results} == ids


def _task_log(done: Done) -> Path:
    record = next(r for r in done.logs() if r.header.get("parent_session_id") is None)
    return record.path


def test_bad_findings_are_refused_with_errors_the_model_can_act_on(runs: dict[str, Done]) -> None:
    done = runs["ungated"]
    assert done.code == 0, done.explain()
    calls = [e for e in done.events("tool_call") if e["tool"] == "report_finding"]
    errors = [e["result"] for e in calls if e["is_error"]]
    assert len(calls) == 5 and len(errors) == 2
    assert "outside the working directory" in errors[0]
    assert "not a line of the file" in errors[1]
    assert len(done.events("finding")) == 3


def test_the_gate_fails_the_task_and_names_its_top_findings(runs: dict[str, Done]) -> None:
    done = runs["gated"]
    assert done.code == 1, done.explain()
    task = done.task()
    assert task["status"] == "failed" and task["kind"] == "findings"
    assert "Wrong divisor" in task["reason"]
    assert task["finding_counts"] == {"error": 1, "warning": 1, "note": 1}
    failure = done.testcase().find("failure")
    assert failure is not None and failure.get("type") == "findings"
    assert "calc.py:6" in (failure.get("message") or "")
    assert "findings: 1 error, 1 warning, 1 note" in (done.testcase().findtext("system-out") or "")
    properties = {p.get("name"): p.get("value") for p in done.junit().iter("property")}
    assert properties["findings_error"] == "1"
    if XSD_VALIDATOR.is_file():  # ../shared/junit beside the checkout
        assert junit_schema_problems(done.out / "junit.xml") is None


def test_annotations_point_at_the_lines_with_titles_escaped(runs: dict[str, Done]) -> None:
    done = runs["gated"]
    lines = [line for line in done.stdout.splitlines() if "file=calc.py" in line]
    assert lines[0].startswith("::error file=calc.py,line=6,endLine=6,title=Wrong divisor::")
    warning = next(line for line in lines if line.startswith("::warning "))
    assert "line=4,endLine=5" in warning
    assert "title=Off by one %3A%3Aerror file=x%3A%3Apwned::" in warning
    assert any(line.startswith("::notice file=calc.py,line=1") for line in lines)
    assert not any(line.startswith("::error file=x") for line in _commands_on(done.stdout))
    table = (done.root / "summary.md").read_text(encoding="utf-8")
    assert "### Findings: 1 error, 1 warning, 1 note" in table
    assert "Wrong divisor" in table


def _commands_on(stdout: str) -> list[str]:
    """The lines GitHub runs as workflow commands: none between `::stop-commands::T` and `::T::`."""
    lines, stopped = [], None
    for line in stdout.splitlines():
        if stopped is not None:
            stopped = None if line == f"::{stopped}::" else stopped
        elif line.startswith("::stop-commands::"):
            stopped = line.removeprefix("::stop-commands::")
        else:
            lines.append(line)
    return lines


def test_a_secret_in_a_finding_is_masked_everywhere(runs: dict[str, Done]) -> None:
    done = runs["gated"]
    for path in [done.out / "findings.sarif", done.out / "review.json", _task_log(done)]:
        text = path.read_text(encoding="utf-8")
        assert SECRET not in text, path.name
    shown = [line for line in done.stdout.splitlines() if not line.startswith("::add-mask::")]
    assert not any(SECRET in line for line in shown)
    assert "Token *** leaks" in (done.out / "review.json").read_text(encoding="utf-8")


def test_review_json_has_the_shape_of_githubs_create_review_call(runs: dict[str, Done]) -> None:
    review = json.loads((runs["gated"].out / "review.json").read_text(encoding="utf-8"))
    assert review["event"] == "COMMENT" and "1 error" in review["body"]
    first, second, _ = review["comments"]
    assert {k: first[k] for k in ("path", "line", "side")} == {
        "path": "calc.py",
        "line": 6,
        "side": "RIGHT",
    }
    assert "```suggestion\n    return sum(numbers) / len(numbers)\n```" in first["body"]
    assert (second["start_line"], second["line"], second["start_side"]) == (4, 5, "RIGHT")
    assert "@\u200boctocat" in second["body"]  # no mention pings anyone


def test_native_mode_and_sub_agents_report_findings_too(runs: dict[str, Done]) -> None:
    native = runs["native"]
    assert native.code == 0, native.explain()
    assert native.task()["finding_counts"]["warning"] == 1
    agent = runs["agent"]
    assert agent.code == 0, agent.explain()
    (entry,) = agent.task()["findings"]
    assert entry["title"] == "Child" and entry["severity"] == "error"
    (run,) = sarif(agent)["runs"]
    assert run["automationDetails"]["id"] == "agent-runner/agent-review/"


def test_merged_shards_give_one_sarif_with_every_finding_once(
    runs: dict[str, Done], tmp_path: Path
) -> None:
    shards = [runs[name].out / "junit.xml" for name in ("gated", "native", "gated")]
    out = tmp_path / "merged" / "junit.xml"
    out.parent.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "runner", "report", "merge", *map(str, shards), "-o", str(out)],
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    merged = json.loads((out.parent / "findings.sarif").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(merged)
    assert [len(run["results"]) for run in merged["runs"]] == [3, 1]
    review = json.loads((out.parent / "review.json").read_text(encoding="utf-8"))
    assert len(review["comments"]) == 4


def test_the_review_example_replays_with_no_key_and_gates_on_its_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = clean_env(tmp_path, {"GITHUB_ACTIONS": "true"})
    assert not any("API_KEY" in name for name in env)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "runner",
            "run",
            "examples/tasks/review.yaml",
            "--model",
            "replay:examples/sessions/review.jsonl",
            "--fail-on",
            "error",
            "--out",
            str(out),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads((out / "findings.sarif").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(document)
    uris = [
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in document["runs"][0]["results"]
    ]
    assert uris == [
        "examples/projects/calculator/calc.py",
        "examples/projects/calculator/test_calc.py",
    ]
    assert "::error file=examples/projects/calculator/calc.py,line=6,endLine=6" in done.stdout
    review = json.loads((out / "review.json").read_text(encoding="utf-8"))
    assert "```suggestion\n" in review["comments"][0]["body"]


def test_a_resumed_review_reports_its_parents_findings_too(
    runs: dict[str, Done], tmp_path: Path
) -> None:
    shutil.copytree(runs["gated"].out, tmp_path / "run" / "OUT")
    scenario = review_scenario("review", "--fail-on", "error")
    scenario.steps = [complete("nothing more")]
    scenario.args = [
        "resume",
        "OUT",
        "--out",
        "OUT2",
        "--model",
        "openai:gpt-4.1",
        "--fail-on",
        "error",
    ]
    done = run_one(scenario, tmp_path)
    assert done.code == 1, done.explain()
    summary = json.loads((done.root / "OUT2" / "summary.json").read_text(encoding="utf-8"))
    (task,) = summary["tasks"]
    assert task["kind"] == "findings"
    assert task["finding_counts"] == {"error": 1, "warning": 1, "note": 1}
    (run,) = json.loads((done.root / "OUT2" / "findings.sarif").read_text("utf-8"))["runs"]
    assert len(run["results"]) == 3


def test_a_lone_surrogate_in_a_finding_and_a_result_reaches_every_report(
    runs: dict[str, Done],
) -> None:
    """Every report is written instead of the run ending with UnicodeEncodeError after the task
    passed. A finding keeps the lone surrogate as its escape (its texts are checked once, and
    SARIF, GitHub and the fingerprint then see plain UTF-8); a result, written as its JSON escape
    as the session log writes it, reads back as itself."""
    done = runs["surrogate"]
    assert done.code == 0, done.explain()
    assert done.task()["result"] == f"ok {LONE}"
    escaped = "\\ud83d"
    sarif = json.loads((done.out / "findings.sarif").read_text(encoding="utf-8"))
    [result] = sarif["runs"][0]["results"]
    assert result["message"]["text"].startswith(f"Bad {escaped} byte")
    review = json.loads((done.out / "review.json").read_text(encoding="utf-8"))
    assert f"Bad {escaped} byte" in review["comments"][0]["body"]
    assert f"return {escaped}" in review["comments"][0]["body"]
    junit = done.junit()
    assert f"ok {escaped}" in ET.tostring(junit, encoding="unicode")
    assert f"Odd {escaped} title" in (done.root / "summary.md").read_text(encoding="utf-8")
    assert f"title=Odd {escaped} title" in done.stdout  # the annotation
