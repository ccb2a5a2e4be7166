"""GitHub Actions reports: step summary, annotations, log groups, outputs, masks (DESIGN 9, 7b).

Workflow commands are lines on stdout; this module only builds them (and writes the two files
GitHub names in the environment). The caller passes the environment in, so nothing here reads
`os.environ`.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from secrets import token_hex

from runner.errors import ExitCode
from runner.fleet import status_line
from runner.outcome import RunSummary, Status, TaskOutcome
from runner.redact import SUBSTRING_LENGTH, Redactor
from runner.report.repeats import verdicts
from runner.report.summary import (
    EXIT_CODE_MEANINGS,
    display_path,
    format_cost,
    format_duration,
    format_tokens,
    one_line,
)

__all__ = [
    "STEP_SUMMARY_LIMIT",
    "GitHubActions",
    "add_mask_lines",
    "config_error_annotations",
    "error_annotation",
    "escape_data",
    "escape_property",
    "group_end",
    "group_start",
    "step_summary_markdown",
    "write_outputs",
    "write_step_summary",
    "write_usage_error",
]

STEP_SUMMARY_LIMIT = 1024 * 1024
"""GitHub refuses a step summary over 1 MiB, and then shows none of it."""

_MIN_MASK_LENGTH = SUBSTRING_LENGTH
"""GitHub masks substrings: a shorter secret would star out ordinary words across the log (the
runner's own lines still mask it where it stands alone)."""
_REASON_CELL_LIMIT = 200
_ICONS: dict[Status, str] = {
    "passed": "✅",
    "failed": "❌",
    "budget_exceeded": "⏱️",
    "error": "💥",
    "interrupted": "⏹️",
    "skipped": "⏭️",
}
# Rows that did not pass come first, so a cut table still shows every problem it can.
_REPEAT_ROWS = 200
"""Repeated tasks shown in the step summary's table; summary.json has them all."""
_ORDER: dict[Status, int] = {
    "error": 0,
    "failed": 1,
    "budget_exceeded": 2,
    "interrupted": 3,
    "skipped": 4,
    "passed": 5,
}


@dataclass(frozen=True)
class GitHubActions:
    """What the runner needs from a GitHub Actions environment."""

    step_summary: Path | None
    """`$GITHUB_STEP_SUMMARY`: markdown appended here is shown on the run's page."""
    output: Path | None
    """`$GITHUB_OUTPUT`: `name=value` lines appended here become step outputs."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GitHubActions | None:
        """The GitHub Actions context, or None when not running there (`GITHUB_ACTIONS` unset)."""
        if env.get("GITHUB_ACTIONS", "").lower() != "true":
            return None
        summary = env.get("GITHUB_STEP_SUMMARY", "")
        output = env.get("GITHUB_OUTPUT", "")
        return cls(
            step_summary=Path(summary) if summary else None,
            output=Path(output) if output else None,
        )


def escape_data(value: str) -> str:
    """Escape a workflow command's message (`%`, CR, LF), as the Actions toolkit does."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """Escape a workflow command's property value: as data, plus `:` and `,`."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def error_annotation(outcome: TaskOutcome, *, redactor: Redactor) -> str:
    """An `::error` line pointing at the task's file, or "" for a task that passed or never ran."""
    if outcome.status in ("passed", "skipped"):
        return ""
    status = outcome.status.replace("_", " ")
    cause = f" ({outcome.kind})" if outcome.kind else ""
    title = redactor.text(f"{outcome.label}: {status}{cause}")
    message = redactor.text(outcome.reason or f"task {status}")
    file = redactor.text(display_path(outcome.task_file))
    return (
        f"::error file={escape_property(file)},title={escape_property(title)}"
        f"::{escape_data(message)}"
    )


_LOCATED = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+)(?::(?P<col>\d+))?: (?P<message>.+)$")


def config_error_annotations(text: str) -> list[str]:
    """`::error` lines for a configuration error (exit 2): one per `file:line[:col]: message`
    line of `text`, pointing at that place, or one without a place when no line has one.
    The text is the runner's own message, which never echoes a rejected value."""
    lines = []
    for raw in text.splitlines():
        match = _LOCATED.match(raw.strip().removeprefix("agent-runner: "))
        if match is None:
            continue
        where = f"file={escape_property(display_path(Path(match['file'])))},line={match['line']}"
        if match["col"]:
            where += f",col={match['col']}"
        lines.append(f"::error {where},title=configuration error::{escape_data(match['message'])}")
    if not lines and text.strip():
        lines.append(f"::error title=configuration error::{escape_data(text.strip())}")
    return lines


def group_start(title: str) -> str:
    """Opens a collapsible group in the log; every line until `group_end()` goes in it."""
    return f"::group::{escape_data(title)}"


def group_end() -> str:
    """Closes the group `group_start` opened."""
    return "::endgroup::"


def add_mask_lines(secrets: Iterable[str]) -> list[str]:
    """`::add-mask::` lines for the secret values; one per line of a multi-line secret, because
    GitHub masks line by line."""
    lines: list[str] = []
    for secret in secrets:
        for part in secret.splitlines():
            if len(part.strip()) >= _MIN_MASK_LENGTH:
                lines.append(f"::add-mask::{escape_data(part)}")
    return list(dict.fromkeys(lines))


_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
"""A markdown code span: a run of backticks, then text, then a run of the same length."""


def _markdown_text(text: str) -> str:
    """`text` as inline markdown that shows as written: HTML escaped outside code spans only,
    since GitHub shows `&gt;` literally inside a code span (it decodes no entities there)."""
    parts: list[str] = []
    last = 0
    for match in _CODE_SPAN.finditer(text):
        parts.append(html.escape(text[last : match.start()], quote=False))
        parts.append(match.group(0))
        last = match.end()
    parts.append(html.escape(text[last:], quote=False))
    return "".join(parts)


def _cell(text: str, limit: int = _REASON_CELL_LIMIT) -> str:
    # One line, no HTML, no `|`: the text must stay inside its table cell (GitHub's tables take
    # `\|` inside code spans too).
    return _markdown_text(one_line(text, limit)).replace("|", "\\|")


def _code(text: str, limit: int = 80) -> str:
    """`text` as one code span, shown exactly: a fence longer than any backtick run inside."""
    flat = one_line(text, limit)
    runs = [len(run) for run in re.findall(r"`+", flat)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def _check_output_details(outcome: TaskOutcome, redactor: Redactor) -> str:
    """A folded block with the end of a failed check's output, or ""."""
    if not outcome.check_output:
        return ""
    output = redactor.text(outcome.check_output)
    runs = [len(run) for run in re.findall(r"`+", output)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    name = html.escape(redactor.text(outcome.label), quote=False)
    return (
        f"<details><summary>{name}: check output (last part)</summary>\n\n"
        f"{fence}text\n{output}\n{fence}\n\n</details>\n\n"
    )


def _grade_details(outcome: TaskOutcome, redactor: Redactor) -> str:
    """A folded table of a rubric's last grading (DESIGN 27): each criterion, its votes and a
    reason (a failing vote's when it failed), or ""."""
    grade = outcome.grade
    if grade is None:
        return ""
    name = html.escape(redactor.text(outcome.label), quote=False)
    verdict = "passed" if grade.passed else "failed"
    passed = len(grade.criteria) - len(grade.failed)
    rows = ""
    for criterion in grade.criteria:
        votes = "".join("✓" if vote else "✗" for vote in criterion.votes)
        reasons = [r for r, v in zip(criterion.reasons, criterion.votes, strict=True) if v]
        if not criterion.passed:
            reasons = [r for r, v in zip(criterion.reasons, criterion.votes, strict=True) if not v]
        mark = _ICONS["passed" if criterion.passed else "failed"]
        cells = (_cell(redactor.text(criterion.criterion), 200), f"{mark} {votes}")
        rows += f"| {cells[0]} | {cells[1]} | {_cell(redactor.text(reasons[0]), 300)} |\n"
    return (
        f"<details><summary>{name}: rubric {verdict}, {passed} of {len(grade.criteria)} "
        f"criteria (grader {html.escape(redactor.text(grade.grader), quote=False)}, "
        f"{format_cost(grade.total_cost_usd)})</summary>\n\n"
        "| Criterion | Votes | Reason |\n| --- | --- | --- |\n"
        f"{rows}\n</details>\n\n"
    )


def _patches(outcomes: list[TaskOutcome], redactor: Redactor) -> str:
    """The tasks' patches (`isolation: worktree`) as a list, or ""."""
    lines = [
        f"- {_cell(redactor.text(o.label), 120)}: {_code(display_path(o.patch), 300)}\n"
        for o in outcomes
        if o.patch is not None
    ]
    return (
        "Patches (`git apply` them on the commit the run started from):\n\n" + "".join(lines)
        if lines
        else ""
    )


def _repeats(summary: RunSummary, redactor: Redactor) -> str:
    """A table of the repeated tasks' verdicts (DESIGN 22), or ""."""
    rows = []
    for v in verdicts(summary.outcomes, summary.min_pass_rate)[:_REPEAT_ROWS]:
        icon = _ICONS["passed" if v.passed else "failed"]
        ks = sorted({1, min(5, v.samples), v.samples})
        at = ", ".join(f"@{k} {v.pass_at[k - 1]:.2f}" for k in ks)
        hat = ", ".join(f"^{k} {v.pass_hat[k - 1]:.2f}" for k in ks)
        rows.append(
            f"| {_cell(redactor.text(v.name), 120)} | {icon} {v.passes}/{v.samples} | "
            f"{v.pass_rate:.2f} | {at} | {hat} | {v.turns.mean:.1f} | "
            f"{format_cost(v.cost_usd.mean)} | {format_duration(v.duration_s.mean)} |\n"
        )
    if not rows:
        return ""
    return (
        f"Repeated tasks (a task passes at a pass rate of {summary.min_pass_rate:g}):\n\n"
        "| Task | Passes | Rate | pass@k | pass^k | Turns (mean) | Cost (mean) | Time (mean) |\n"
        "| --- | ---: | ---: | --- | --- | ---: | ---: | ---: |\n" + "".join(rows)
    )


def _row(outcome: TaskOutcome, redactor: Redactor) -> str:
    totals = outcome.totals
    status = f"{_ICONS[outcome.status]} {outcome.status.replace('_', ' ')}"
    if outcome.kind:
        status += f" ({_cell(redactor.text(outcome.kind), 40)})"
    reason = "" if outcome.status == "passed" else _cell(redactor.text(outcome.reason))
    cells = (
        _cell(redactor.text(outcome.label), 120),
        status,
        str(totals.turns),
        format_tokens(totals.tokens),
        format_cost(totals.cost_usd),
        format_duration(totals.duration_s),
        reason,
    )
    return "| " + " | ".join(cells) + " |\n"


def _fleet(summary: RunSummary, redactor: Redactor) -> str:
    """The fleet governor's figures and this shard's (DESIGN 25), with its warnings."""
    entry = summary.fleet
    if not entry:
        return ""
    where = f"run {_code(redactor.text(str(entry['run'])))}, store {_code(str(entry['store']))}"
    fleet = entry.get("fleet")
    shown = status_line(fleet) if fleet else "figures unavailable"
    mine = entry["shard"]
    text = (
        f"**Fleet** ({where}): {shown}.\n\nThis shard: {mine['calls']} call(s), "
        f"{mine['refused']} refused, {format_cost(mine['spent_usd'])} spent, {mine['waits']} "
        f"wait(s) ({mine['wait_s']:.1f} s), {mine['rate_limited']} 429(s).\n"
    )
    for warning in entry.get("warnings", []):
        text += f"\n> [!WARNING]\n> {_cell(redactor.text(warning))}\n"
    return text


def step_summary_markdown(summary: RunSummary, redactor: Redactor, limit: int) -> str:
    """The step summary's markdown, at most `limit` bytes in UTF-8: rows that would pass the
    limit are left out, with a note saying how many and where to find them."""
    totals = summary.totals
    code = summary.exit_code
    skipped = f", {summary.skipped} skipped" if summary.skipped else ""
    head = (
        f"### agent-runner: {summary.passed} passed, {summary.failed} not passed{skipped}\n\n"
        f"Run {_code(redactor.text(summary.run_id))}, model "
        f"{_code(redactor.text(summary.model))}, "
        f"exit code {int(code)} ({EXIT_CODE_MEANINGS.get(code, 'unknown')}).\n\n"
        "| Task | Status | Turns | Tokens | Cost | Time | Reason |\n"
        "| --- | --- | ---: | ---: | ---: | ---: | --- |\n"
    )
    foot = (
        f"| **Total ({len(summary.outcomes)})** | | {totals.turns} | "
        f"{format_tokens(totals.tokens)} | {format_cost(totals.cost_usd)} | "
        f"{format_duration(totals.duration_s)} | |\n"
    )
    ordered = sorted(summary.outcomes, key=lambda o: _ORDER[o.status])
    # Room for the longest note this could need.
    note_room = 200
    used = len(head.encode()) + len(foot.encode()) + note_room
    rows: list[str] = []
    for outcome in ordered:
        row = _row(outcome, redactor)
        size = len(row.encode())
        if used + size > limit:
            break
        rows.append(row)
        used += size
    text = head + "".join(rows) + foot
    details = ""
    for outcome in ordered[: len(rows)]:
        block = _check_output_details(outcome, redactor) + _grade_details(outcome, redactor)
        if block and used + len(block.encode()) <= limit:
            details += block
            used += len(block.encode())
    if details:
        text += "\n" + details
    repeats = _repeats(summary, redactor)
    if repeats and used + len(repeats.encode()) <= limit:
        text += "\n" + repeats
        used += len(repeats.encode())
    patches = _patches(ordered[: len(rows)], redactor)
    if patches and used + len(patches.encode()) <= limit:
        text += "\n" + patches
        used += len(patches.encode())
    fleet = _fleet(summary, redactor)
    if fleet and used + len(fleet.encode()) <= limit:
        text += "\n" + fleet
    left_out = len(ordered) - len(rows)
    if left_out:
        text += (
            f"\n{left_out} of {len(ordered)} tasks are not shown (GitHub's 1 MiB limit); "
            "see summary.json and the JUnit report.\n"
        )
    return text + "\n"


def write_step_summary(summary: RunSummary, path: Path, redactor: Redactor) -> None:
    """Append the run's markdown table to `$GITHUB_STEP_SUMMARY`, keeping the file under 1 MiB
    (earlier steps' content in the same file counts)."""
    existing = path.stat().st_size if path.exists() else 0
    room = STEP_SUMMARY_LIMIT - existing
    text = step_summary_markdown(summary, redactor, room)
    if len(text.encode()) > room:
        return
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def _output_line(name: str, value: str) -> str:
    if "\n" not in value and "\r" not in value:
        return f"{name}={value}\n"
    delimiter = f"ghadelimiter_{token_hex(16)}"
    while delimiter in value:
        delimiter = f"ghadelimiter_{token_hex(16)}"
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def _result_output(summary: RunSummary, redactor: Redactor) -> str:
    if len(summary.outcomes) != 1 or summary.outcomes[0].structured_result is None:
        return ""
    value = redactor.data(summary.outcomes[0].structured_result)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def write_outputs(summary: RunSummary, path: Path, redactor: Redactor | None = None) -> None:
    """Append the step outputs to `$GITHUB_OUTPUT`: passed, failed, cost, junit, out,
    `exit-code`, and `result`: a single task's structured result as compact JSON, or ""."""
    values = {
        "passed": str(summary.passed),
        "failed": str(summary.failed),
        "cost": f"{summary.totals.cost_usd:.4f}",
        "junit": display_path(summary.junit_path) if summary.junit_path else "",
        "out": display_path(summary.out_dir),
        "exit-code": str(int(summary.exit_code)),
        "result": _result_output(summary, redactor or Redactor()),
    }
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(_output_line(name, value) for name, value in values.items()))


_USAGE_ERROR_LIMIT = 4000
"""Characters of a configuration error's message kept in the step summary and outputs."""


def write_usage_error(github: GitHubActions, message: str) -> None:
    """For a usage or configuration error (exit code 2, nothing ran): the step outputs a run
    writes (no tasks, `exit-code` 2, `result` a JSON object `{"error": message}`) and a short
    step summary, so a workflow sees why as it sees a run's results. `message` is the runner's
    own, which never echoes a secret value."""
    text = message.strip()[:_USAGE_ERROR_LIMIT]
    code = ExitCode.USAGE
    if github.output is not None:
        values = {
            "passed": "0",
            "failed": "0",
            "cost": format_cost(0.0).removeprefix("$"),
            "exit-code": str(int(code)),
            "result": json.dumps({"error": text}, ensure_ascii=False, separators=(",", ":")),
        }
        with github.output.open("a", encoding="utf-8") as handle:
            handle.write("".join(_output_line(name, value) for name, value in values.items()))
    if github.step_summary is not None:
        runs = [len(run) for run in re.findall(r"`+", text)]
        fence = "`" * max(3, max(runs, default=0) + 1)
        summary = (
            f"### agent-runner: configuration error\n\n"
            f"Exit code {int(code)} ({EXIT_CODE_MEANINGS[code]}).\n\n"
            f"{fence}text\n{text}\n{fence}\n\n"
        )
        existing = github.step_summary.stat().st_size if github.step_summary.exists() else 0
        if existing + len(summary.encode()) <= STEP_SUMMARY_LIMIT:
            with github.step_summary.open("a", encoding="utf-8") as handle:
                handle.write(summary)
