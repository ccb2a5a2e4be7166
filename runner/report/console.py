"""Console lines: one as each task starts and ends, and a final table (DESIGN section 9).

Plain text by default, since CI logs are where these are read; ANSI colour only when the caller
asks for it (`color=True`, decided from the terminal by the caller).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from runner.outcome import RunSummary, Status, TaskOutcome
from runner.redact import Redactor
from runner.report.repeats import verdicts
from runner.report.summary import (
    EXIT_CODE_MEANINGS,
    display_path,
    format_cost,
    format_duration,
    format_tokens,
)

__all__ = [
    "STATUS_LABELS",
    "check_output_block",
    "rubric_block",
    "final_table",
    "task_finished_line",
    "task_started_line",
]

STATUS_LABELS: dict[Status, str] = {
    "passed": "PASS",
    "failed": "FAIL",
    "budget_exceeded": "BUDGET",
    "error": "ERROR",
    "interrupted": "INTERRUPTED",
    "skipped": "SKIP",
}
"""The word a console line starts with, per status."""

_COLORS: dict[Status, str] = {
    "passed": "32",
    "failed": "31",
    "budget_exceeded": "33",
    "error": "35",
    "interrupted": "33",
    "skipped": "90",
}
_LABEL_WIDTH = max(len(label) for label in STATUS_LABELS.values())
_REASON_LIMIT = 160
# A path of three or more parts: on a console line its folders matter least, its name most.
_ASIDE = re.compile(r" ?\((?:[^()'\"]*)\)")
_ADVICE = re.compile(r"(?<=[.;]) [A-Z][^.]*\.?$")
_LONG_PATH = re.compile(r"(?<![\w.~])(?:~|\.{1,2})?(?:/[^\s/'\"()\[\]]+){2,}/([^\s/'\"()\[\]]+)")


def fit_reason(text: str, limit: int = _REASON_LIMIT) -> str:
    """`text` on one line within `limit` characters, keeping the cause of an error.

    A reason too long for the line loses, in turn: the folders of its paths (`…/python3: No
    module named x`), its parenthesised asides, a closing piece of advice, and then its middle:
    what failed (up to the first `: `) and how it ended (the tail, where a server's last stderr
    line is quoted) stay. The whole reason is in the summary, JUnit and the session log.
    """
    flat = " ".join(text.split())
    steps: tuple[Callable[[str], str], ...] = (
        lambda t: _LONG_PATH.sub(lambda match: f"…/{match.group(1)}", t),
        lambda t: " ".join(_ASIDE.sub("", t).split()),
        lambda t: _ADVICE.sub("", t),
    )
    for step in steps:
        if len(flat) <= limit:
            return flat
        flat = step(flat)
    if len(flat) <= limit:
        return flat
    what = flat.split(": ", 1)[0] + ": " if ": " in flat[: limit // 2] else flat[: limit // 3]
    return what + "…" + flat[len(flat) - (limit - len(what) - 1) :]


def _paint(text: str, status: Status, color: bool) -> str:
    return f"\x1b[{_COLORS[status]}m{text}\x1b[0m" if color else text


def task_started_line(name: str, model: str, *, redactor: Redactor) -> str:
    """`START       NAME  (MODEL)`."""
    line = f"{'START':<{_LABEL_WIDTH}}  {name}"
    if model:
        line += f"  ({model})"
    return redactor.text(line)


def task_finished_line(outcome: TaskOutcome, *, redactor: Redactor, color: bool = False) -> str:
    """One line: status, name, turns, tokens, cost, time, and for a task that did not pass, its
    kind and reason."""
    totals = outcome.totals
    label = STATUS_LABELS[outcome.status]
    facts = (
        f"turns={totals.turns} tokens={format_tokens(totals.tokens)} "
        f"cost={format_cost(totals.cost_usd)} time={format_duration(totals.duration_s)}"
    )
    line = f"{outcome.label}  {facts}"
    if outcome.status != "passed":
        why = fit_reason(redactor.text(outcome.reason))
        cause = f"({outcome.kind}) " if outcome.kind else ""
        if cause or why:
            line += f"  {cause}{why}".rstrip()
    if outcome.patch is not None:
        line += f"  patch={display_path(outcome.patch)}"
    if outcome.worktree is not None:
        line += f"  worktree={outcome.worktree}"
    # Redact before colouring, so an escape code never splits a secret and hides it.
    line = redactor.text(line)
    return f"{_paint(f'{label:<{_LABEL_WIDTH}}', outcome.status, color)}  {line}"


def rubric_block(outcome: TaskOutcome, *, redactor: Redactor) -> str:
    """The criteria a failed rubric failed, each with a failing vote's reason, indented under
    the task's line; "" for any other task."""
    grade = outcome.grade
    if outcome.kind != "rubric" or grade is None:
        return ""
    pad = " " * _LABEL_WIDTH
    lines = [f"{pad}  rubric (grader {grade.grader}): {len(grade.failed)} criteria failed"]
    for criterion in grade.failed:
        reason = next(r for r, ok in zip(criterion.reasons, criterion.votes, strict=True) if not ok)
        lines.append(f"{pad}  | {fit_reason(f'{criterion.criterion}: {reason}')}")
    return redactor.text("\n".join(lines))


def check_output_block(outcome: TaskOutcome, *, redactor: Redactor) -> str:
    """The end of a failed check's output, indented under the task's line; "" when none."""
    if not outcome.check_output:
        return ""
    lines = redactor.text(outcome.check_output).splitlines() or [""]
    body = "\n".join(f"{' ' * _LABEL_WIDTH}  | {line}".rstrip() for line in lines)
    return f"{' ' * _LABEL_WIDTH}  check output (last part):\n{body}"


def final_table(summary: RunSummary, *, redactor: Redactor, color: bool = False) -> str:
    """An aligned text table: a row per task and a totals row, then the exit code's meaning."""
    header = ("task", "status", "turns", "tokens", "cost", "time")
    rows: list[tuple[str, ...]] = [
        (
            redactor.text(o.label),
            o.status,
            str(o.totals.turns),
            format_tokens(o.totals.tokens),
            format_cost(o.totals.cost_usd),
            format_duration(o.totals.duration_s),
        )
        for o in summary.outcomes
    ]
    totals = summary.totals
    total_row = (
        f"total ({len(summary.outcomes)})",
        f"{summary.passed} passed, {summary.failed} not"
        + (f", {summary.skipped} skipped" if summary.skipped else ""),
        str(totals.turns),
        format_tokens(totals.tokens),
        format_cost(totals.cost_usd),
        format_duration(totals.duration_s),
    )
    widths = [max(len(row[i]) for row in (header, *rows, total_row)) for i in range(len(header))]
    right = {2, 3, 4, 5}

    def render(row: tuple[str, ...]) -> str:
        cells = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        return "  ".join(cells).rstrip()

    lines = [render(header), "  ".join("-" * w for w in widths)]
    for outcome, row in zip(summary.outcomes, rows, strict=True):
        line = render(row)
        if color:
            # Pad first, then colour only the status cell, so the columns stay aligned.
            start = widths[0] + 2
            status_cell = line[start : start + widths[1]]
            painted = _paint(status_cell, outcome.status, color)
            line = line[:start] + painted + line[start + widths[1] :]
        lines.append(line)
    lines.append("  ".join("-" * w for w in widths))
    lines.append(render(total_row))
    lines.extend(repeat_lines(summary, redactor=redactor))
    code = summary.exit_code
    lines.append(f"exit code {int(code)}: {EXIT_CODE_MEANINGS.get(code, 'unknown')}")
    return "\n".join(lines) + "\n"


def repeat_lines(summary: RunSummary, *, redactor: Redactor) -> list[str]:
    """A line per repeated task (DESIGN 22): its verdict, passes out of K and pass rate, pass@k
    and pass^k for k = 1..K, and the mean [min-max] of turns, tokens, cost and time."""
    found = verdicts(summary.outcomes, summary.min_pass_rate)
    if not found:
        return []
    lines = [f"repeats (a task passes at a pass rate of {summary.min_pass_rate:g} or more):"]
    for v in found:
        status = "passed" if v.passed else "failed"
        # Every k up to 10; beyond, a few (summary.json and JUnit have them all).
        ks = range(1, v.samples + 1) if v.samples <= 10 else sorted({1, 2, 5, 10, v.samples})
        pass_at, pass_hat = v.pass_at, v.pass_hat
        at = " ".join(f"pass@{k}={pass_at[k - 1]:.2f}" for k in ks)
        hat = " ".join(f"pass^{k}={pass_hat[k - 1]:.2f}" for k in ks)
        spreads = (
            f"turns {v.turns.mean:.1f} [{v.turns.min:g}-{v.turns.max:g}]  "
            f"tokens {format_tokens(round(v.tokens.mean))} "
            f"[{format_tokens(int(v.tokens.min))}-{format_tokens(int(v.tokens.max))}]  "
            f"cost {format_cost(v.cost_usd.mean)} "
            f"[{format_cost(v.cost_usd.min)}-{format_cost(v.cost_usd.max)}]  "
            f"time {format_duration(v.duration_s.mean)} "
            f"[{format_duration(v.duration_s.min)}-{format_duration(v.duration_s.max)}]"
        )
        lines.append(
            redactor.text(
                f"  {v.name}  {status}  {v.passes}/{v.samples} passed (rate {v.pass_rate:.2f})"
                f"  {at}  {hat}  {spreads}"
            )
        )
    return lines
