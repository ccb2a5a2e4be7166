"""JUnit XML: one report per run, and `report merge` for the reports of shards (DESIGN section 9).

The report validates against `shared/junit/jenkins-junit-4.xsd` once the testcase `file`
attribute is set aside: GitHub's JUnit reporters read `file`, though no schema allows it.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.dom import minidom

from junit_xml import TestCase, TestSuite, to_xml_report_string

from runner.atomic import write_text_atomic
from runner.errors import ConfigError
from runner.outcome import RunSummary, TaskOutcome, finding_counts
from runner.redact import Redactor
from runner.report.dedupe import Dedupe, Source, distinct_paths, select
from runner.report.junit_repeats import recombine_junit
from runner.report.repeats import verdict_properties, verdicts
from runner.report.summary import display_path, format_cost, one_line

__all__ = [
    "junit_run_id",
    "junit_text",
    "merge_junit",
    "run_properties",
    "task_facts",
    "write_junit",
]

_SURROGATE_REF = re.compile(r"&#(5[5-7][0-9]{3});")
"""A character reference that may be to a surrogate (55296 to 57343; `_surrogate_escape` checks)."""
_SUITE_TIME = re.compile(r'(<testsuites?\b[^>]*?\btime=")([0-9.eE+-]+)(")')
"""The time of the root and of each suite (text inside elements has its `<` escaped)."""
Loaded = tuple[Path, ET.Element]
"""A testsuite and the file it came from."""
_MESSAGE_LIMIT = 500
"""Characters of the reason kept in a failure's `message` attribute; the element's text has it
whole."""


def run_properties(summary: RunSummary) -> dict[str, str]:
    """Run-level facts, as `<properties>` of every testsuite (no schema allows them on the root)."""
    totals = summary.totals
    return {
        "runner_version": summary.runner_version,
        "run_id": summary.run_id,
        "model": summary.model,
        "exit_code": str(int(summary.exit_code)),
        "tasks": str(summary.tasks),
        "passed": str(summary.passed),
        "failed": str(summary.failed),
        "skipped": str(summary.skipped),
        "turns": str(totals.turns),
        "tokens": str(totals.tokens),
        "input_tokens": str(totals.input_tokens),
        "output_tokens": str(totals.output_tokens),
        "cache_read_tokens": str(totals.cache_read_tokens),
        "cache_write_tokens": str(totals.cache_write_tokens),
        "cost_usd": f"{totals.cost_usd:.6f}",
        "duration_s": f"{totals.duration_s:.3f}",
        **_finding_properties(summary),
    }


def _finding_properties(summary: RunSummary) -> dict[str, str]:
    """`findings_error`, `findings_warning`, `findings_note` when a task asked for findings."""
    if all(o.findings is None for o in summary.outcomes):
        return {}
    counts = finding_counts(f for o in summary.outcomes for f in (o.findings or ()))
    return {f"findings_{level}": str(n) for level, n in counts.items()}


def task_facts(outcome: TaskOutcome) -> list[str]:
    """The task's facts as `key: value` lines, for system-out."""
    totals = outcome.totals
    facts = [
        f"status: {outcome.status}",
        *([f"kind: {outcome.kind}"] if outcome.kind else []),
        f"model: {outcome.model}",
        f"turns: {totals.turns}",
        f"tokens: {totals.tokens} (input {totals.input_tokens}, output {totals.output_tokens}, "
        f"cache read {totals.cache_read_tokens}, cache write {totals.cache_write_tokens})",
        f"cost: {format_cost(totals.cost_usd)}",
        f"duration_s: {totals.duration_s:.3f}",
        f"exit_code: {int(outcome.exit_code)}",
    ]
    if outcome.session_log is not None:
        facts.append(f"session_log: {display_path(outcome.session_log)}")
    if outcome.session_id:
        facts.append(f"session_id: {outcome.session_id}")
    if outcome.child_sessions:
        facts.append(f"child_sessions: {', '.join(outcome.child_sessions)}")
    if outcome.sandbox is not None:
        facts.append(outcome.sandbox.line())
    if outcome.patch is not None:
        facts.append(f"patch: {display_path(outcome.patch)}")
    if outcome.worktree is not None:
        facts.append(f"worktree: {outcome.worktree}")
    if outcome.grade is not None:
        grade = outcome.grade
        passed = len(grade.criteria) - len(grade.failed)
        facts.append(
            f"rubric: {'passed' if grade.passed else 'failed'}, {passed} of {len(grade.criteria)} "
            f"criteria (grader {grade.grader}, {grade.votes} vote(s), grader cost "
            f"{format_cost(grade.total_cost_usd)})"
        )
    if outcome.findings is not None:
        counts = finding_counts(outcome.findings)
        facts.append("findings: " + ", ".join(f"{n} {level}" for level, n in counts.items()))
    return facts


def _message(outcome: TaskOutcome) -> str:
    reason = one_line(outcome.reason, _MESSAGE_LIMIT)
    if outcome.status == "budget_exceeded":
        limit = outcome.kind or "a"
        head = f"{limit} limit exceeded"
        return f"{head}: {reason}" if reason else head
    return reason or outcome.status.replace("_", " ")


def _failure_body(outcome: TaskOutcome) -> str:
    """The reason, then the end of a failed check's output (the cause is usually in there), or
    each criterion a rubric failed with its votes' reasons."""
    grade = outcome.grade
    if outcome.kind == "rubric" and grade is not None:
        lines = [outcome.reason, "", f"failed criteria (grader {grade.grader}):"]
        for criterion in grade.failed:
            passes = f"{sum(criterion.votes)} of {len(criterion.votes)} vote(s) passed it"
            lines.append(f"- {criterion.criterion} ({passes})")
            failing = [r for r, v in zip(criterion.reasons, criterion.votes, strict=True) if not v]
            lines += [f"  - {reason}" for reason in dict.fromkeys(failing)]
        return "\n".join(lines)
    if not outcome.check_output:
        return outcome.reason
    return f"{outcome.reason}\n\ncheck output (last part):\n{outcome.check_output}"


def _test_case(outcome: TaskOutcome, redactor: Redactor) -> TestCase:
    text = redactor.text
    file = display_path(outcome.task_file)
    stdout = "\n".join(task_facts(outcome)) + "\n"
    if outcome.result:
        stdout = f"{outcome.result}\n\n{stdout}"
    case = TestCase(
        name=text(outcome.label),  # a sample: `task [i/K]`
        classname=text(outcome.task_file.stem),
        elapsed_sec=round(outcome.totals.duration_s, 3),
        stdout=text(stdout),
        status=outcome.status,
        file=text(file),
    )
    message = text(_message(outcome))
    output = text(_failure_body(outcome)) or None
    if outcome.status == "failed":
        case.add_failure_info(message=message, output=output, failure_type=outcome.kind or "failed")
    elif outcome.status == "budget_exceeded":
        case.add_failure_info(message=message, output=output, failure_type="budget_exceeded")
    elif outcome.status == "skipped":
        case.add_skipped_info(message=message, output=output)
    elif outcome.status in ("error", "interrupted"):
        kind = outcome.kind or outcome.status
        case.add_error_info(message=message, output=output, error_type=kind)
    return case


def junit_text(summary: RunSummary, redactor: Redactor) -> str:
    """The JUnit XML document of a run, redacted."""
    by_file: dict[str, list[TaskOutcome]] = {}
    for outcome in summary.outcomes:
        by_file.setdefault(display_path(outcome.task_file), []).append(outcome)
    properties = {k: redactor.text(v) for k, v in run_properties(summary).items()}
    suites = [
        TestSuite(
            name=redactor.text(name),
            test_cases=[_test_case(o, redactor) for o in outcomes],
            properties={**properties, **_verdict_properties(outcomes, summary, redactor)},
        )
        for name, outcomes in by_file.items()
    ]
    text: str = to_xml_report_string(suites, prettyprint=False, encoding="utf-8")
    # A lone surrogate (JSON lets a model send "\\ud83d" alone) left the serializer as `&#55357;`,
    # a reference to no XML character, and the pretty-printer refused the whole document. It is
    # written as its escape `\\ud83d`, as in the session log and the other reports.
    text = _SURROGATE_REF.sub(_surrogate_escape, text)
    text = minidom.parseString(text.encode("utf-8")).toprettyxml(encoding="utf-8").decode("utf-8")
    # junit_xml writes the summed times as Python prints floats (0.8999999999999999).
    return _SUITE_TIME.sub(lambda m: f"{m[1]}{_seconds(float(m[2]))}{m[3]}", text)


def _surrogate_escape(reference: re.Match[str]) -> str:
    code = int(reference[1])
    return f"\\u{code:04x}" if 0xD800 <= code <= 0xDFFF else reference[0]


def _verdict_properties(
    outcomes: list[TaskOutcome], summary: RunSummary, redactor: Redactor
) -> dict[str, str]:
    """The verdicts of the suite's repeated tasks (DESIGN 22), as `repeat.<task>.*` properties."""
    found: dict[str, str] = {}
    for verdict in verdicts(outcomes, summary.min_pass_rate):
        found.update(verdict_properties(verdict))
    return {redactor.text(k): redactor.text(v) for k, v in found.items()}


def write_junit(summary: RunSummary, path: Path, redactor: Redactor) -> None:
    """Write the run's JUnit XML to `path`, redacted and atomically.

    A `<testsuite>` per task file (named by its path relative to the working directory), a
    `<testcase>` per task; failed and budget-stopped tasks get `<failure>`, errored and
    interrupted ones `<error>`.
    """
    write_text_atomic(path, junit_text(summary, redactor))


def _load_suites(path: Path) -> list[ET.Element]:
    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError:
        raise ConfigError(f"{path}: JUnit file not found (pass the shards' JUnit files)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read JUnit file: {exc.strerror}") from None
    except ET.ParseError as exc:
        raise ConfigError(f"{path}: not well-formed JUnit XML: {exc}") from None
    if root.tag == "testsuite":
        return [root]
    if root.tag == "testsuites":
        return root.findall("testsuite")
    raise ConfigError(f"{path}: root element is <{root.tag}>, expected <testsuites> or <testsuite>")


def _number(path: Path, element: ET.Element, attribute: str, *, whole: bool) -> float:
    """A count or time attribute (absent or empty is 0); anything else is a ConfigError."""
    value = (element.get(attribute) or "").strip()
    if not value:
        return 0
    try:
        number = int(value) if whole else float(value)
    except ValueError:
        number = -1
    if not 0 <= number < math.inf:
        name = element.get("name")
        where = f"<{element.tag} name={name!r}>" if name is not None else f"<{element.tag}>"
        kind = "a whole number" if whole else "a number of seconds"
        raise ConfigError(f"{path}: {where} has {attribute}={value!r}, expected {kind}")
    return number


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _run_id(suites: list[ET.Element]) -> str:
    for suite in suites:
        for prop in suite.iter("property"):
            if prop.get("name") == "run_id":
                return prop.get("value") or ""
    return ""


def junit_run_id(path: Path) -> str:
    """The run id a JUnit file's testsuites name ("" when none does)."""
    return _run_id(_load_suites(path))


def _drop_cases(path: Path, suite: ET.Element, names: frozenset[str]) -> bool:
    """Leave the testcases named `names` out of `suite` and recount its own counts and time;
    False when none is left."""
    for case in [c for c in suite.findall("testcase") if c.get("name") in names]:
        suite.remove(case)
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    if suite.get("skipped") is not None:
        suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    suite.set("time", _seconds(sum(_number(path, c, "time", whole=False) for c in cases)))
    return bool(cases)


def _selected_suites(inputs: list[Path], dedupe: Dedupe) -> tuple[list[Loaded], list[str]]:
    """Every input's testsuites, less the copies of tasks `dedupe` leaves out, and the warnings
    about duplicates."""
    paths, warnings = distinct_paths(inputs, "JUnit file")
    loaded = [(path, _load_suites(path)) for path in paths]
    sources = [
        Source(
            path,
            _run_id(suites),
            frozenset(c.get("name") or "" for s in suites for c in s.iter("testcase")),
        )
        for path, suites in loaded
    ]
    selection = select(sources, dedupe, "JUnit file")
    kept: list[Loaded] = []
    for index, (path, suites) in enumerate(loaded):
        names = selection.dropped.get(index, frozenset())
        kept += [(path, s) for s in suites if not names or _drop_cases(path, s, names)]
    return kept, warnings + selection.warnings


def merge_junit(inputs: list[Path], out: Path, dedupe: Dedupe = "none") -> list[str]:
    """Join the JUnit files of shards into one `<testsuites>` whose counts and time are
    recomputed from its testcases. Each shard's testsuites are kept whole, with their own
    properties, except for the copies of a task found in several files that `dedupe` leaves
    out. Returns warnings about duplicates; raises ConfigError naming a missing or malformed
    input."""
    if not inputs:
        raise ConfigError("report merge: no JUnit files given")
    suites, warnings = _selected_suites(inputs, dedupe)
    root = ET.Element("testsuites")
    tests = failures = errors = disabled = 0
    time = 0.0
    for path, suite in suites:
        cases = suite.findall("testcase")
        tests += len(cases)
        failures += sum(1 for c in cases if c.find("failure") is not None)
        errors += sum(1 for c in cases if c.find("error") is not None)
        disabled += int(_number(path, suite, "disabled", whole=True))
        case_time = sum(_number(path, c, "time", whole=False) for c in cases)
        suite_time = _number(path, suite, "time", whole=False) if suite.get("time") else case_time
        if suite.get("time"):
            suite.set("time", _seconds(suite_time))  # a shard written before the rounding
        time += suite_time
        root.append(suite)
    recombine_junit(root)  # samples of one task across shards: one verdict (DESIGN 22)
    root.set("disabled", str(disabled))
    root.set("errors", str(errors))
    root.set("failures", str(failures))
    root.set("tests", str(tests))
    root.set("time", _seconds(time))
    ET.indent(root, space="\t")
    body = ET.tostring(root, encoding="unicode")
    write_text_atomic(out, f'<?xml version="1.0" encoding="utf-8"?>\n{body}\n')
    return warnings
