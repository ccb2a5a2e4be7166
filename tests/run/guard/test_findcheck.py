"""Each `report_finding` call is checked against the file it names (DESIGN 21): the bounds of its
texts, lines and file, where its path is relative to, and what its fingerprint follows."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from runner.outcome import Finding
from runner.run.guard.findcheck import (
    _BINARY_PROBE,
    FindingLimits,
    check_finding,
    repository_root,
)


def args(**over: Any) -> dict[str, Any]:
    return {
        "path": "a.py",
        "line": 1,
        "severity": "note",
        "title": "T",
        "message": "M",
        **over,
    }


def check(workdir: Path, **over: Any) -> Finding | str:
    return check_finding(args(**over), workdir, repository_root(workdir))


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("one\ntwo\nthree\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("name", "limit"),
    [
        ("title", FindingLimits.title),
        ("message", FindingLimits.message),
        ("suggestion", FindingLimits.suggestion),
    ],
)
def test_a_text_may_reach_its_limit_but_not_pass_it(workdir: Path, name: str, limit: int) -> None:
    assert isinstance(check(workdir, **{name: "x" * limit}), Finding)
    refused = check(workdir, **{name: "x" * (limit + 1)})
    assert refused == f"Error: `{name}` has {limit + 1} characters; keep it under {limit}."


@pytest.mark.parametrize(
    ("over", "error"),
    [
        ({"title": " \n\t"}, "`title` is required"),
        ({"title": None}, "`title` is required"),
        ({"message": "  \n"}, "`message` is required"),
        ({"message": 5}, "`message` is required"),
        ({"path": ""}, "`path` is required"),
        ({"path": "  "}, "`path` is required"),
        ({"path": "a.py\0"}, "`path` is required"),
        ({"path": 3}, "`path` is required"),
        ({"path": "."}, "outside the working directory"),
        ({"line": "1" * 5000}, "`line` must be a line number"),
        ({"line": 2.0}, "`line` must be a line number"),
        ({"end_line": "x"}, "`end_line` must be a line number"),
        ({"end_line": 4}, "`end_line` 4 is not a line of the file, which has 3 lines"),
    ],
)
def test_a_missing_or_malformed_part_is_refused_with_what_to_fix(
    workdir: Path, over: dict[str, Any], error: str
) -> None:
    refused = check(workdir, **over)
    assert isinstance(refused, str) and error in refused


def test_a_message_is_kept_without_its_surrounding_blank_lines_and_no_suggestion_is_none(
    workdir: Path,
) -> None:
    finding = check(workdir, message="\n  Why it is wrong.\n\n", line=" 2 ", end_line="3")
    assert isinstance(finding, Finding)
    assert (finding.message, finding.suggestion) == ("Why it is wrong.", None)
    assert (finding.line, finding.end_line) == (2, 3)


def test_a_path_may_reach_its_limit_but_not_pass_it(workdir: Path) -> None:
    at_limit = check(workdir, path="d/" * (FindingLimits.path // 2))
    assert isinstance(at_limit, str) and "does not exist" in at_limit
    over = check(workdir, path="d/" * (FindingLimits.path // 2) + "a")
    assert over == f"Error: `path` is longer than {FindingLimits.path} characters."


def test_a_finding_may_span_its_limit_of_lines_but_not_more(tmp_path: Path) -> None:
    count = FindingLimits.lines + 1
    (tmp_path / "a.py").write_text("x\n" * count, encoding="utf-8")
    spans = check(tmp_path, line=2, end_line=count)
    assert isinstance(spans, Finding) and (spans.line, spans.end_line) == (2, count)
    too_long = check(tmp_path, line=1, end_line=count)
    assert too_long == f"Error: a finding spans at most {FindingLimits.lines} lines; narrow it."


def test_a_file_may_reach_its_size_limit_but_not_pass_it(tmp_path: Path) -> None:
    line = b"x" * 99 + b"\n"
    (tmp_path / "a.py").write_bytes(line * (FindingLimits.file_bytes // len(line)))
    assert (tmp_path / "a.py").stat().st_size == FindingLimits.file_bytes
    assert isinstance(check(tmp_path), Finding)
    with (tmp_path / "a.py").open("ab") as grown:
        grown.write(b"y")
    refused = check(tmp_path)
    assert isinstance(refused, str) and f"over {FindingLimits.file_bytes} bytes" in refused


def test_a_nul_byte_makes_a_file_binary_only_within_the_probe(tmp_path: Path) -> None:
    text = b"x" * (_BINARY_PROBE - 1)
    (tmp_path / "a.py").write_bytes(text + b"\0\nmore\n")
    refused = check(tmp_path)
    assert isinstance(refused, str) and "is a binary file" in refused
    (tmp_path / "a.py").write_bytes(text + b"x\0\nmore\n")
    assert isinstance(check(tmp_path, line=2), Finding)


def test_a_file_that_is_not_utf8_takes_a_finding(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes("caf\u00e9 = 1\nx = 2\n".encode("latin-1"))
    finding = check(tmp_path, line=2)
    assert isinstance(finding, Finding) and finding.line == 2


def test_the_last_line_counts_with_or_without_its_newline(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\ntwo", encoding="utf-8")
    assert isinstance(check(tmp_path, line=2), Finding)
    assert "which has 2 lines" in str(check(tmp_path, line=3))
    (tmp_path / "a.py").write_text("", encoding="utf-8")
    assert "which has 0 lines" in str(check(tmp_path, line=1))


def test_paths_are_relative_to_the_work_tree_a_git_file_marks_too(tmp_path: Path) -> None:
    work = tmp_path / "tree" / "sub"
    work.mkdir(parents=True)
    (work / "a.py").write_text("x\n", encoding="utf-8")
    alone = check(work)
    assert isinstance(alone, Finding) and alone.path == "a.py"
    (tmp_path / "tree" / ".git").write_text("gitdir: /elsewhere\n", encoding="utf-8")
    assert repository_root(work) == (tmp_path / "tree").resolve()
    in_tree = check(work)
    assert isinstance(in_tree, Finding) and in_tree.path == "sub/a.py"


def test_a_workdir_reached_through_a_symlink_still_names_paths_from_the_repository_root(
    tmp_path: Path,
) -> None:
    real = tmp_path / "repo" / "w"
    real.mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    (real / "a.py").write_text("x\n", encoding="utf-8")
    os.symlink(tmp_path / "repo", tmp_path / "link")
    via_link = tmp_path / "link" / "w"
    finding = check_finding(args(), via_link, repository_root(via_link))
    assert isinstance(finding, Finding) and finding.path == "w/a.py"


def test_the_fingerprint_follows_the_text_of_the_findings_lines_only(tmp_path: Path) -> None:
    def fingerprint(text: str, **over: Any) -> str:
        (tmp_path / "a.py").write_text(text, encoding="utf-8")
        finding = check(tmp_path, line=2, end_line=3, **over)
        assert isinstance(finding, Finding)
        return finding.fingerprint

    first = fingerprint("a\nb\nc\nd\n")
    assert fingerprint("A\nb\nc\nD\n") == first
    assert fingerprint("a\n  b \nc\t\nd\n") == first
    assert fingerprint("a\nb\nc\nd\n", title="t") == first
    assert fingerprint("a\nB\nc\nd\n") != first
    assert fingerprint("a\nb\nC\nd\n") != first
    assert fingerprint("a\nb\nc\nd\n", title="U") != first


def test_a_fingerprint_is_the_same_from_release_to_release(workdir: Path) -> None:
    # Code scanning matches a run's alerts to the last run's by it: a changed recipe would close
    # every open alert and open it again as new.
    finding = check(workdir, line=2, end_line=3, severity="error", title="Off by one")
    assert isinstance(finding, Finding)
    assert finding.fingerprint == "8fc7db27fbf2357015f166f0d046c2fb"


def test_a_file_that_cannot_be_read_is_refused_with_the_systems_reason() -> None:
    # A file of mode 000 still reads for root; a process's memory file is a regular file whose
    # first page never reads (EIO), whoever runs the tests.
    proc = Path(f"/proc/{os.getpid()}")
    refused = check_finding(args(path="mem"), proc, repository_root(proc))
    assert refused == f"Error: 'mem' cannot be read ({os.strerror(errno.EIO)})."


def test_a_lone_surrogate_in_any_text_is_kept_as_its_escape(workdir: Path) -> None:
    """JSON lets a model send half a surrogate pair; no report could write it as UTF-8."""
    lone = "\ud83d"
    found = check(workdir, title=f"T{lone}", message=f"M{lone}", suggestion=f"S{lone}")
    assert isinstance(found, Finding)
    assert (found.title, found.message, found.suggestion) == ("T\\ud83d", "M\\ud83d", "S\\ud83d")
    assert found.fingerprint == check(workdir, title="T\\ud83d").fingerprint  # type: ignore[union-attr]


def test_a_path_with_a_lone_surrogate_names_no_file(workdir: Path) -> None:
    assert check(workdir, path="a\ud83d.py") == (
        "Error: 'a\\ud83d.py' does not exist in the working directory; check the path."
    )


def test_a_file_name_that_is_not_utf8_is_reported_with_its_bytes_escaped(workdir: Path) -> None:
    """Such a file can take a finding; the reports (and the fingerprint) get a UTF-8 name."""
    (workdir / os.fsdecode(b"b\xff.py")).write_text("one\n", encoding="utf-8")
    found = check(workdir, path=os.fsdecode(b"b\xff.py"))
    assert isinstance(found, Finding)
    assert found.path == "b\\udcff.py"
    found.path.encode("utf-8")
