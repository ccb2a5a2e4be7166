"""JUnit fields and `report merge` arithmetic no other test pinned (issue 21): the budget message,
truncation, system-out lines, the cost's precision, masking of names and properties, and merge
sums of `disabled` and suite `time`, with malformed numbers refused by name."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from runner.errors import ConfigError, ExitCode
from runner.redact import Redactor
from runner.report.junit import junit_text, merge_junit, run_properties, task_facts
from tests.report.samples import outcome, summary_of

SECRET = "hunter2-secret-value"


def case_of(text: str, name: str) -> ET.Element:
    root = ET.fromstring(text.encode("utf-8"))
    [case] = [c for c in root.iter("testcase") if c.get("name") == name]
    return case


def test_the_budget_message_names_the_limit_and_keeps_the_reason() -> None:
    stopped = outcome("big", "budget_exceeded", kind="tokens", reason="used 2000 of 1000")
    failure = case_of(junit_text(summary_of([stopped]), Redactor()), "big").find("failure")
    assert failure is not None
    assert failure.get("message") == "tokens limit exceeded: used 2000 of 1000"
    assert failure.get("type") == "budget_exceeded"
    assert failure.text == "used 2000 of 1000"


def test_a_budget_stop_without_kind_or_reason_still_says_a_limit() -> None:
    stopped = outcome("big", "budget_exceeded")
    failure = case_of(junit_text(summary_of([stopped]), Redactor()), "big").find("failure")
    assert failure is not None and failure.get("message") == "a limit exceeded"


def test_a_failure_without_reason_is_named_by_its_status() -> None:
    text = junit_text(summary_of([outcome("x", "interrupted"), outcome("y", "failed")]), Redactor())
    error = case_of(text, "x").find("error")
    failure = case_of(text, "y").find("failure")
    assert error is not None and error.get("message") == "interrupted"
    assert error.get("type") == "interrupted"
    assert failure is not None and failure.get("message") == "failed"
    assert failure.get("type") == "failed"


def test_a_long_reason_is_cut_in_the_message_and_whole_in_the_text() -> None:
    reason = "x" * 600 + "\nsecond line"
    failed = outcome("long", "failed", kind="check", reason=reason)
    failure = case_of(junit_text(summary_of([failed]), Redactor()), "long").find("failure")
    assert failure is not None
    message = failure.get("message") or ""
    assert len(message) <= 500 and message.startswith("x" * 400)
    assert "\n" not in message
    assert failure.text == reason


def test_system_out_keeps_result_kind_and_session_id_lines() -> None:
    failed = outcome("lint", "failed", kind="check", reason="r", result="I fixed most of it.")
    out = case_of(junit_text(summary_of([failed]), Redactor()), "lint").findtext("system-out")
    assert out is not None
    lines = out.splitlines()
    assert lines[0] == "I fixed most of it." and lines[1] == ""
    assert "kind: check" in lines and "session_id: sess-lint" in lines
    assert "session_log: agent-runs/sessions/lint.jsonl" in lines
    assert "status: failed" in lines and "exit_code: 0" in lines
    assert "tokens: 1234 (input 1000, output 234, cache read 0, cache write 0)" in lines


def test_cache_tokens_are_facts_and_properties_and_count_in_tokens() -> None:
    cached = outcome("cached", "passed")
    totals = replace(cached.totals, cache_read_tokens=5000, cache_write_tokens=700)
    cached = replace(cached, totals=totals)
    assert "tokens: 6934 (input 1000, output 234, cache read 5000, cache write 700)" in task_facts(
        cached
    )
    properties = run_properties(summary_of([cached]))
    assert (properties["cache_read_tokens"], properties["cache_write_tokens"]) == ("5000", "700")
    assert properties["tokens"] == "6934"


def test_facts_leave_out_what_a_task_does_not_have() -> None:
    bare = replace(outcome("bare", "passed"), kind="", session_id="", session_log=None)
    facts = task_facts(bare)
    assert not any(f.startswith(("kind:", "session_id:", "session_log:")) for f in facts)
    out = case_of(junit_text(summary_of([bare]), Redactor()), "bare").findtext("system-out")
    assert out is not None and out.startswith("status: passed")


def test_the_cost_property_keeps_micro_dollars_and_the_time_milliseconds() -> None:
    cheap = outcome("cheap", "passed", cost=0.0000125, duration=1.23456)
    properties = run_properties(summary_of([cheap]))
    assert properties["cost_usd"] == "0.000013"
    assert properties["duration_s"] == "1.235"
    assert properties["exit_code"] == str(int(ExitCode.SIGINT))
    assert (properties["tasks"], properties["passed"], properties["failed"]) == ("1", "1", "0")
    assert (properties["tokens"], properties["turns"]) == ("1234", "3")


def test_names_classnames_suite_names_and_properties_are_masked() -> None:
    leaky = outcome(f"deploy-{SECRET}", "passed", task_file=f"tasks/{SECRET}.yaml")
    summary = replace(summary_of([leaky], run_id=f"run-{SECRET}"), model=f"model-{SECRET}")
    text = junit_text(summary, Redactor([SECRET]))
    assert SECRET not in text
    root = ET.fromstring(text.encode("utf-8"))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "tasks/***.yaml"
    case = suite.find("testcase")
    assert case is not None
    assert (case.get("name"), case.get("classname"), case.get("file")) == (
        "deploy-***",
        "***",
        "tasks/***.yaml",
    )
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["run_id"] == "run-***" and properties["model"] == "model-***"


def test_suite_and_root_times_have_no_float_noise() -> None:
    outcomes = [outcome("a", "passed", duration=0.3), outcome("b", "passed", duration=0.6)]
    text = junit_text(summary_of(outcomes), Redactor())
    root = ET.fromstring(text.encode("utf-8"))
    assert root.get("time") == "0.900"
    suite = root.find("testsuite")
    assert suite is not None and suite.get("time") == "0.900"
    assert "0.8999" not in text


def test_a_result_that_looks_like_a_time_attribute_is_left_alone() -> None:
    odd = outcome("odd", "passed", result='<testsuite time="0.1000000001">', duration=0.3)
    out = case_of(junit_text(summary_of([odd]), Redactor()), "odd").findtext("system-out")
    assert out is not None and out.startswith('<testsuite time="0.1000000001">')


def write(path: Path, body: str) -> Path:
    path.write_text(f'<?xml version="1.0" encoding="utf-8"?>\n{body}\n', encoding="utf-8")
    return path


def test_merge_sums_disabled_and_suite_times(tmp_path: Path) -> None:
    a = write(
        tmp_path / "a.xml",
        '<testsuites><testsuite name="s1" disabled="2" time="0.1">'
        '<testcase name="t1" time="5"><error message="e"/></testcase></testsuite>'
        '<testsuite name="s2" disabled="1" time="0.2"><testcase name="t2"/></testsuite>'
        "</testsuites>",
    )
    b = write(
        tmp_path / "b.xml",
        '<testsuite name="s3"><testcase name="t3" time="0.25"/>'
        '<testcase name="t4" time="0.5"><failure message="m"/></testcase>'
        '<testcase name="t5"><error message="e"/></testcase></testsuite>',
    )
    out = tmp_path / "merged.xml"
    merge_junit([a, b], out)
    root = ET.parse(out).getroot()
    assert root.get("disabled") == "3"
    # Suite times where given (0.1 + 0.2), the cases' times where not (0.25 + 0.5).
    assert root.get("time") == "1.050"
    counts = (root.get("tests"), root.get("failures"), root.get("errors"))
    assert counts == ("5", "1", "2")
    assert [s.get("time") for s in root.findall("testsuite")] == ["0.100", "0.200", None]


@pytest.mark.parametrize(
    ("suite", "expected"),
    [
        ('<testsuite name="s" disabled="two"/>', "<testsuite name='s'> has disabled='two'"),
        ('<testsuite name="s" disabled="-1"/>', "disabled='-1', expected a whole number"),
        ('<testsuite name="s" disabled="1.5"/>', "disabled='1.5'"),
        ('<testsuite name="s" time="soon"/>', "time='soon', expected a number of seconds"),
        ('<testsuite name="s" time="nan"/>', "time='nan'"),
        ('<testsuite name="s" time="inf"/>', "time='inf'"),
        ('<testsuite name="s"><testcase time="1,5"/></testsuite>', "<testcase> has time='1,5'"),
    ],
)
def test_merge_refuses_a_malformed_number_naming_file_and_element(
    tmp_path: Path, suite: str, expected: str
) -> None:
    bad = write(tmp_path / "bad.xml", suite)
    with pytest.raises(ConfigError) as caught:
        merge_junit([bad], tmp_path / "out.xml")
    assert str(caught.value).startswith(f"{bad}: ")
    assert expected in str(caught.value)
    assert not (tmp_path / "out.xml").exists()


def test_merge_takes_empty_counts_as_zero(tmp_path: Path) -> None:
    ok = write(
        tmp_path / "ok.xml", '<testsuite name="s" disabled="" time=" "><testcase/></testsuite>'
    )
    merge_junit([ok], tmp_path / "out.xml")
    root = ET.parse(tmp_path / "out.xml").getroot()
    assert (root.get("disabled"), root.get("time"), root.get("tests")) == ("0", "0.000", "1")


def test_merge_with_no_inputs_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no JUnit files given"):
        merge_junit([], tmp_path / "out.xml")


def test_the_report_is_indented_one_element_a_line() -> None:
    text = junit_text(summary_of([outcome("a", "passed")]), Redactor())
    lines = text.splitlines()
    assert lines[1].startswith("<testsuites ")
    assert any(line.startswith("\t<testsuite ") for line in lines)
    assert any(line.startswith("\t\t<testcase ") for line in lines)
    assert all(line.strip() for line in lines), "no blank line between elements"


def test_a_testcase_time_is_rounded_to_milliseconds() -> None:
    timed = outcome("t", "passed", duration=1.23456)
    assert case_of(junit_text(summary_of([timed]), Redactor()), "t").get("time") == "1.235000"


def test_merge_of_an_unreadable_input_names_it(tmp_path: Path) -> None:
    folder = tmp_path / "shard.xml"
    folder.mkdir()
    with pytest.raises(ConfigError, match=r"shard\.xml: cannot read JUnit file: Is a directory"):
        merge_junit([folder], tmp_path / "out.xml")


def test_the_merged_report_is_indented_with_tabs(tmp_path: Path) -> None:
    a = write(tmp_path / "a.xml", '<testsuite name="s"><testcase name="t"/></testsuite>')
    merge_junit([a], tmp_path / "out.xml")
    lines = (tmp_path / "out.xml").read_text(encoding="utf-8").splitlines()
    assert lines[0] == '<?xml version="1.0" encoding="utf-8"?>'
    assert lines[2:4] == ['\t<testsuite name="s">', '\t\t<testcase name="t" />']


def test_system_out_names_the_child_sessions() -> None:
    parent = replace(outcome("lead", "passed"), child_sessions=("sess-a", "sess-b"))
    out = case_of(junit_text(summary_of([parent]), Redactor()), "lead").findtext("system-out")
    assert out is not None and "child_sessions: sess-a, sess-b" in out.splitlines()


def test_a_failed_checks_output_follows_the_reason_in_the_failure_body() -> None:
    failed = replace(
        outcome("check", "failed", kind="check", reason="success check `pytest` exited with 1"),
        check_output="E   assert 1 == 2",
    )
    failure = case_of(junit_text(summary_of([failed]), Redactor()), "check").find("failure")
    assert failure is not None
    assert failure.text == (
        "success check `pytest` exited with 1\n\ncheck output (last part):\nE   assert 1 == 2"
    )


def test_system_out_names_the_patch_and_a_kept_worktree(tmp_path: Path) -> None:
    kept = replace(
        outcome("iso", "passed"), patch=Path("out/patches/iso.patch"), worktree=tmp_path / "wt"
    )
    lines = case_of(junit_text(summary_of([kept]), Redactor()), "iso").findtext("system-out")
    assert lines is not None
    assert "patch: out/patches/iso.patch" in lines.splitlines()
    assert f"worktree: {tmp_path / 'wt'}" in lines.splitlines()
    plain = case_of(junit_text(summary_of([outcome("p", "passed")]), Redactor()), "p")
    assert "patch:" not in (plain.findtext("system-out") or "")
    assert "worktree:" not in (plain.findtext("system-out") or "")


def test_a_skipped_task_is_skipped_with_its_reason() -> None:
    """A CI counts a testcase with no `<skipped>` as passed."""
    later = outcome("later", "skipped", reason="needs `build`, which failed")
    text = junit_text(summary_of([later]), Redactor())
    skipped = case_of(text, "later").find("skipped")
    assert skipped is not None
    assert skipped.get("message") == skipped.text == "needs `build`, which failed"
    suite = ET.fromstring(text.encode("utf-8")).find("testsuite")
    assert suite is not None and suite.get("skipped") == "1"


def test_an_errored_task_keeps_its_whole_reason_in_the_error_text() -> None:
    broken = outcome("call", "error", kind="provider", reason="429 from the provider\nretry later")
    error = case_of(junit_text(summary_of([broken]), Redactor()), "call").find("error")
    assert error is not None
    assert error.get("message") == "429 from the provider retry later"
    assert error.text == "429 from the provider\nretry later"


def test_a_lone_surrogate_is_written_as_its_escape_and_its_neighbours_as_they_are() -> None:
    """JSON lets a model send half a surrogate pair; no XML character can hold it. U+D7FF and
    U+E000, just outside the surrogates, are characters."""
    odd = outcome("odd", "passed", result="a\ud7ff\ud800\ud83d\udfff\ue000z")
    out = case_of(junit_text(summary_of([odd]), Redactor()), "odd").findtext("system-out")
    assert out is not None and out.startswith("a\ud7ff\\ud800\\ud83d\\udfff\ue000z\n")


def test_a_noncharacter_in_the_output_is_left_out_of_the_report() -> None:
    """U+FFFF is no XML character either; the rest of the output is kept."""
    odd = outcome("odd", "passed", result="before\uffffafter")
    out = case_of(junit_text(summary_of([odd]), Redactor()), "odd").findtext("system-out")
    assert out is not None and out.startswith("beforeafter\n")


def test_a_repeated_tasks_verdict_is_a_property_of_its_suite() -> None:
    samples = [
        replace(outcome("flaky", "passed"), sample=1, of=2),
        replace(outcome("flaky", "failed", reason="r"), sample=2, of=2),
    ]
    suite = ET.fromstring(junit_text(summary_of(samples), Redactor()).encode("utf-8"))[0]
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["repeat.flaky.samples"] == "2"
    assert properties["repeat.flaky.passes"] == "1"
    assert properties["repeat.flaky.status"] == "failed"
