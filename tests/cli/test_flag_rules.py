"""Every closed choice of every command's flags, pinned value by value (DESIGN 2, 20): each
documented value is taken, and a value outside the set is a usage error (exit 2) that lists
the choices. Each flag that run and resume share is on both."""

from __future__ import annotations

import pytest

from runner.cli import build_parser

CHOICES = {
    "--log-level": ["debug", "info", "warning", "error"],
    "--output": ["text", "json"],
    "--sandbox": ["auto", "required", "off"],
    "--sandbox-backend": ["auto", "bwrap", "landlock", "none"],
    "--tool-mode": ["xml", "native", "auto"],
    "--fail-on": ["error", "warning", "note", "never"],
}
"""The flags `run` and `resume` share, and their values."""
RUN_ONLY = {"--isolation": ["none", "worktree"]}
LIST = {
    "--tool-mode": ["xml", "native", "auto"],
    "--sandbox": ["auto", "required", "off"],
    "--isolation": ["none", "worktree"],
    "--output": ["text", "json"],
    "--log-level": ["debug", "info", "warning", "error"],
}
OTHERS = {
    ("log", "export", "x.jsonl", "--format"): ["json", "markdown", "html"],
    ("report", "merge", "x.xml", "-o", "o.xml", "--dedupe"): ["none", "latest"],
}


def _cases() -> list[tuple[tuple[str, ...], str, str]]:
    found = []
    for command in (("run", "t.yaml"), ("resume", "x.jsonl")):
        for flag, values in CHOICES.items():
            found += [((*command, flag), flag, value) for value in values]
    for flag, values in RUN_ONLY.items():
        found += [(("run", "t.yaml", flag), flag, value) for value in values]
    for flag, values in LIST.items():
        found += [(("list", "t.yaml", flag), flag, value) for value in values]
    for words, values in OTHERS.items():
        found += [(words, words[-1], value) for value in values]
    return found


@pytest.mark.parametrize(("words", "flag", "value"), _cases())
def test_every_documented_value_of_a_closed_flag_is_taken(
    words: tuple[str, ...], flag: str, value: str
) -> None:
    args = build_parser().parse_args([*words, value])
    assert getattr(args, flag.lstrip("-").replace("-", "_")) == value


@pytest.mark.parametrize(("words", "flag", "value"), _cases()[::4])
def test_a_value_outside_a_closed_flags_set_is_a_usage_error(
    words: tuple[str, ...], flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args([*words, value + "x"])
    assert stopped.value.code == 2
    assert f"invalid choice: '{value}x'" in capsys.readouterr().err
