"""The artifacts folder is checked before any task starts, with a hint for containers."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import ConfigError, ExitCode
from runner.run.plan import outdir
from runner.run.plan.outdir import check_out_dir


def test_a_writable_out_folder_is_created_and_left_empty(tmp_path: Path) -> None:
    check_out_dir(tmp_path / "a" / "b", tmp_path / "reports" / "junit.xml")
    assert list((tmp_path / "a" / "b").iterdir()) == []
    assert (tmp_path / "reports").is_dir()


def test_an_out_folder_under_a_file_names_the_flag_and_the_cause(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        check_out_dir(tmp_path / "f.txt" / "out")
    assert raised.value.exit_code == ExitCode.USAGE
    assert "--out" in str(raised.value) and "Not a directory" in str(raised.value)
    assert "--user" not in str(raised.value)


def test_a_refused_folder_in_a_container_hints_at_the_user_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / ".dockerenv"
    marker.write_text("", encoding="utf-8")
    monkeypatch.setattr(outdir, "CONTAINER_MARKERS", (marker,))
    with pytest.raises(ConfigError, match=r'--user "\$\(id -u\):\$\(id -g\)"'):
        check_out_dir(Path("/sys/agent-runner-out"))


def test_a_refused_junit_folder_names_the_junit_flag(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--junit /sys/x/junit\.xml"):
        check_out_dir(tmp_path / "out", Path("/sys/x/junit.xml"))
