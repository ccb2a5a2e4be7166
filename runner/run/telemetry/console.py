"""The console of a run: task lines, the final table, the result text, always masked.

`Console` prints where the run's stdout is free (stderr under `--output json`, `--events -` and
`run -p`, whose stdout holds a JSON document, the event stream or the result text);
`report_finished` prints a task's end line (on GitHub Actions folded with its transcript).
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import TextIO

from runner.errors import RunnerError
from runner.outcome import RunSummary, TaskOutcome
from runner.redact import Redactor
from runner.report import (
    check_output_block,
    group_end,
    group_start,
    result_text,
    rubric_block,
    task_finished_line,
)

__all__ = ["Console", "append_step_summary", "print_result", "report_finished"]


def print_result(summary: RunSummary, redactor: Redactor) -> None:
    """`run -p`: the result text on stdout, after the reports, ending in a newline."""
    text = result_text(summary, redactor)
    if text:
        print(text if text.endswith("\n") else text + "\n", end="", flush=True)


def append_step_summary(path: Path, text: str) -> None:
    """Add `text` to the step summary when it stays under GitHub's 1 MiB."""
    if text and (path.stat().st_size if path.exists() else 0) + len(text.encode()) < 1 << 20:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text)


class Console:
    """Console lines, always redacted; `quiet` keeps only the final summary."""

    def __init__(self, redactor: Redactor, stream: TextIO, quiet: bool) -> None:
        self._redactor = redactor
        self._stream = stream
        self._quiet = quiet

    def line(self, text: str) -> None:
        if not self._quiet:
            print(self._redactor.text(text), file=self._stream, flush=True)

    def always(self, text: str) -> None:
        print(self._redactor.text(text), file=self._stream, flush=True)

    def commands(self, lines: list[str]) -> None:
        """Several workflow commands, one a line."""
        for line in lines:
            self.command(line)

    def command(self, text: str) -> None:
        """A GitHub workflow command, as built (an `::add-mask::` line holds the secret it masks).

        It goes where the console goes: stderr under `--output json`, whose stdout is one JSON
        document; the Actions runner reads workflow commands from both streams of a step."""
        print(text, file=self._stream, flush=True)

    def diagnostic(self, text: str) -> None:
        print(self._redactor.text(text), file=sys.stderr, flush=True)


def report_finished(
    outcome: TaskOutcome, console: Console, redactor: Redactor, github: bool, verbose: bool
) -> None:
    line = task_finished_line(outcome, redactor=redactor)
    line += "\n" + check_output_block(outcome, redactor=redactor) if outcome.check_output else ""
    line += "\n" + rubric_block(outcome, redactor=redactor) if outcome.kind == "rubric" else ""
    transcript = _transcript(outcome) if (github or verbose) else ""
    if not github:
        # `-q` keeps why a task did not pass: the final table has no reasons.
        (console.line if outcome.status == "passed" else console.always)(line)
        if transcript:
            console.line(transcript)
        return
    # On GitHub Actions the transcript is folded in a group under the task's result line.
    console.line(group_start(f"{outcome.name}: {outcome.status}"))
    # A line the model or a check wrote that starts with `::` must not run as a workflow command
    # (an `::error` of its own making): commands stay off until an unguessable token.
    token = uuid.uuid4().hex
    console.line(f"::stop-commands::{token}\n{line}\n{transcript or f'result: {outcome.result}'}")
    console.line(f"::{token}::")
    console.line(group_end())


def _transcript(outcome: TaskOutcome) -> str:
    if outcome.session_log is None:
        return ""
    from runner.sessionlog import show_text

    try:
        return show_text(outcome.session_log).rstrip()
    except RunnerError as error:  # an unreadable log must not hide the run's reports
        return f"(transcript unavailable: {error})"
