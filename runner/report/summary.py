"""The JSON run summary, the run's exit code, and what every report shares (DESIGN section 9).

The other reports build on this module: `runner.report.junit` (JUnit XML and `report merge`),
`runner.report.console` (task lines and the final table) and `runner.report.github` (step summary,
annotations, outputs, masks). Nothing here reads the environment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner.atomic import write_text_atomic
from runner.errors import ConfigError, ExitCode, worst_exit_code
from runner.outcome import RunSummary, TaskOutcome, Totals, finding_counts
from runner.redact import Redactor
from runner.report.dedupe import Dedupe, Source, distinct_paths, select
from runner.report.repeats import recombine_summary, run_exit_code, verdict_json, verdicts

__all__ = [
    "EXIT_CODE_MEANINGS",
    "SUMMARY_VERSION",
    "display_path",
    "exit_code_of",
    "format_cost",
    "format_duration",
    "format_tokens",
    "merge_fleet",
    "merge_summaries",
    "one_line",
    "summary_json",
    "summary_text",
    "write_summary_json",
]

SUMMARY_VERSION = 1
"""Version of the `summary.json` format; bumped when a field changes meaning or goes away."""

EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "every selected task passed",
    ExitCode.FAILED: "at least one task failed",
    ExitCode.USAGE: "usage or configuration error; nothing ran",
    ExitCode.INTERNAL: "internal error (a bug)",
    ExitCode.INFRASTRUCTURE: "infrastructure error (provider, MCP server or artifacts folder)",
    ExitCode.BUDGET: "a limit stopped a task before it completed",
    ExitCode.SIGINT: "interrupted by SIGINT",
    ExitCode.SIGTERM: "interrupted by SIGTERM",
}
"""One phrase per exit code, as the DESIGN's table words it."""

_TOTALS_FIELDS = (
    "turns",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_usd",
    "tool_calls",
    "duration_s",
    "system_tokens",
    "tools_tokens",
    "messages_tokens",
)


def exit_code_of(outcomes: list[TaskOutcome], min_pass_rate: float = 1.0) -> ExitCode:
    """The run's single exit code: the worst of the tasks' own codes (3, 2, 4, 1, 5, 0), a
    repeated task's being its verdict's (`runner.report.repeats`)."""
    return run_exit_code(outcomes, min_pass_rate)


def display_path(path: Path) -> str:
    """`path` relative to the working directory where it lies below it, in POSIX form."""
    if path.is_absolute():
        try:
            return path.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return path.as_posix()
    return path.as_posix()


def format_cost(usd: float) -> str:
    """`$0.0123`: four decimals, since one task often costs less than a cent."""
    return f"${usd:.4f}"


def format_tokens(tokens: int) -> str:
    """`12,345`."""
    return f"{tokens:,}"


def format_duration(seconds: float) -> str:
    """`4.2s`, `3m05s`, `1h02m`."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def one_line(text: str, limit: int = 200) -> str:
    """`text` on one line (whitespace runs collapsed), cut to `limit` characters with `…`."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _totals_json(totals: Totals) -> dict[str, Any]:
    data: dict[str, Any] = {name: getattr(totals, name) for name in _TOTALS_FIELDS}
    data["tokens"] = totals.tokens
    return data


def _task_json(outcome: TaskOutcome) -> dict[str, Any]:
    return {
        "name": outcome.name,
        "file": display_path(outcome.task_file),
        "status": outcome.status,
        "kind": outcome.kind,
        "reason": outcome.reason,
        "result": outcome.result,
        "exit_code": int(outcome.exit_code),
        "model": outcome.model,
        "turns": outcome.totals.turns,
        "tokens": outcome.totals.tokens,
        "cache_read_tokens": outcome.totals.cache_read_tokens,
        "cache_write_tokens": outcome.totals.cache_write_tokens,
        "input_tokens": outcome.totals.input_tokens,
        "output_tokens": outcome.totals.output_tokens,
        # What the requests carried, by part, estimated (DESIGN 28).
        "request_tokens": {
            "system_tokens": outcome.totals.system_tokens,
            "tools_tokens": outcome.totals.tools_tokens,
            "messages_tokens": outcome.totals.messages_tokens,
        },
        "tool_calls": outcome.totals.tool_calls,
        "cost_usd": outcome.totals.cost_usd,
        "duration_s": outcome.totals.duration_s,
        "session_log": display_path(outcome.session_log) if outcome.session_log else None,
        "session_id": outcome.session_id,
        "check_output": outcome.check_output or None,
        "structured_result": outcome.structured_result,
        "child_sessions": list(outcome.child_sessions),
        "sandbox": outcome.sandbox.as_json() if outcome.sandbox else None,
        "patch": display_path(outcome.patch) if outcome.patch else None,
        "worktree": str(outcome.worktree) if outcome.worktree else None,
        # A sample of a repeated task: its identity is (name, file, sample) (DESIGN 22).
        **({"sample": outcome.sample, "of": outcome.of} if outcome.of else {}),
        # DESIGN 26: which auth each MCP server used; never a token.
        **({"mcp_auth": [dict(record) for record in outcome.mcp_auth]} if outcome.mcp_auth else {}),
        **_findings_json(outcome),
        # `success.rubric` (DESIGN 27): the last grading, each criterion with its votes.
        **({"grade": outcome.grade.as_json()} if outcome.grade is not None else {}),
    }


def _findings_json(outcome: TaskOutcome) -> dict[str, Any]:
    """`findings` and `finding_counts` (by severity) of a `findings:` task (DESIGN 21)."""
    if outcome.findings is None:
        return {}
    return {
        "findings": [finding.as_json() for finding in outcome.findings],
        "finding_counts": finding_counts(outcome.findings),
    }


def summary_json(summary: RunSummary) -> dict[str, Any]:
    """The machine-readable summary of a run (not yet redacted: `write_summary_json` redacts)."""
    return {
        "version": SUMMARY_VERSION,
        "run_id": summary.run_id,
        "runner_version": summary.runner_version,
        "model": summary.model,
        "exit_code": int(summary.exit_code),
        "passed": summary.passed,
        "failed": summary.failed,
        "skipped": summary.skipped,
        "totals": _totals_json(summary.totals),
        "out_dir": display_path(summary.out_dir),
        "junit": display_path(summary.junit_path) if summary.junit_path else None,
        "tasks": [_task_json(o) for o in summary.outcomes],
        **_repeats_json(summary),
        **({"fleet": summary.fleet} if summary.fleet is not None else {}),
    }


def _repeats_json(summary: RunSummary) -> dict[str, Any]:
    """`min_pass_rate` and a `repeats` entry per repeated task; nothing when no task repeats."""
    found = verdicts(summary.outcomes, summary.min_pass_rate)
    if not found:
        return {}
    return {"min_pass_rate": summary.min_pass_rate, "repeats": [verdict_json(v) for v in found]}


def summary_text(summary: RunSummary, redactor: Redactor) -> str:
    """The redacted summary as indented JSON text, as `--output json` prints it."""
    return json.dumps(redactor.data(summary_json(summary)), indent=2, ensure_ascii=False) + "\n"


def write_summary_json(summary: RunSummary, path: Path, redactor: Redactor) -> None:
    """Write the redacted summary to `path` (normally `<out>/summary.json`), atomically."""
    write_text_atomic(path, summary_text(summary, redactor))


def _load_summary(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: summary file not found (pass the shards' summary.json)"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read summary file: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not a JSON summary: {exc}") from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("tasks"), list)
        or not isinstance(data.get("totals"), dict)
        or not isinstance(data.get("exit_code"), int)
    ):
        raise ConfigError(f"{path}: not an agent-runner summary (no tasks, totals or exit_code)")
    if not all(isinstance(task, dict) for task in data["tasks"]):
        raise ConfigError(f"{path}: not an agent-runner summary (a task is not an object)")
    numbers = data["totals"].values()
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in numbers):
        raise ConfigError(f"{path}: not an agent-runner summary (a total is not a number)")
    return data


def _common(values: list[Any]) -> Any:
    """The value all shards agree on, else the distinct values joined with commas."""
    distinct = list(dict.fromkeys(str(v) for v in values if v not in (None, "")))
    return distinct[0] if len(distinct) == 1 else ",".join(distinct)


def _names(shard: dict[str, Any]) -> list[str]:
    return [str(task.get("name")) for task in shard["tasks"]]


def _selected(inputs: list[Path], dedupe: Dedupe) -> tuple[list[dict[str, Any]], list[str]]:
    """The inputs' summaries, less the copies of tasks `dedupe` leaves out (their numbers taken
    off their summary's totals), and the warnings about duplicates."""
    paths, warnings = distinct_paths(inputs, "summary file")
    shards = [_load_summary(path) for path in paths]
    sources = [
        Source(path, str(shard.get("run_id") or ""), frozenset(_names(shard)))
        for path, shard in zip(paths, shards, strict=True)
    ]
    selection = select(sources, dedupe, "summary file")
    for index, names in selection.dropped.items():
        shard = shards[index]
        gone = [t for t in shard["tasks"] if str(t.get("name")) in names]
        shard["tasks"] = [t for t in shard["tasks"] if str(t.get("name")) not in names]
        totals = shard["totals"]
        for name in (*_TOTALS_FIELDS, "tokens"):
            # A task entry carries its own numbers (older runners wrote fewer of them).
            taken = sum(t[name] for t in gone if isinstance(t.get(name), int | float))
            totals[name] = totals.get(name, 0) - taken
        shard["exit_code"] = _worst([_exit_code(t.get("exit_code", 0)) for t in shard["tasks"]])
    return shards, warnings + selection.warnings


def merge_summaries(
    inputs: list[Path], out: Path, junit: Path | None = None, dedupe: Dedupe = "none"
) -> list[str]:
    """Join the `summary.json` files of shards into one: tasks concatenated, totals summed,
    the worst exit code kept; `junit` is the merged JUnit file it belongs with. The copies of
    a task found in several files that `dedupe` leaves out count nowhere. Returns warnings
    about duplicates; raises ConfigError naming a missing or malformed input."""
    if not inputs:
        raise ConfigError("report merge: no summary files given")
    shards, warnings = _selected(inputs, dedupe)
    tasks = [task for shard in shards for task in shard["tasks"]]
    totals: dict[str, Any] = {}
    for name in (*_TOTALS_FIELDS, "tokens"):
        totals[name] = sum(shard["totals"].get(name, 0) for shard in shards)
    # Sums of floats pick up noise (0.1 + 0.2); round to the precision a run writes them with.
    totals["cost_usd"] = round(totals["cost_usd"], 6)
    totals["duration_s"] = round(totals["duration_s"], 3)
    passed = sum(1 for t in tasks if t.get("status") == "passed")
    skipped = sum(1 for t in tasks if t.get("status") == "skipped")
    merged = {
        "version": SUMMARY_VERSION,
        "run_id": _common([s.get("run_id") for s in shards]),
        "run_ids": [s.get("run_id") for s in shards],
        "runner_version": _common([s.get("runner_version") for s in shards]),
        "model": _common([s.get("model") for s in shards]),
        "exit_code": int(_worst([_exit_code(s["exit_code"]) for s in shards])),
        "passed": passed,
        "failed": len(tasks) - passed - skipped,
        "skipped": skipped,
        "totals": totals,
        "out_dir": _common([s.get("out_dir") for s in shards]),
        "junit": display_path(junit) if junit is not None else None,
        "tasks": tasks,
    }
    recombine_summary(merged, shards)  # samples of one task across shards: one verdict
    fleet = merge_fleet(shards)
    if fleet is not None:
        merged["fleet"] = fleet
    write_text_atomic(out, json.dumps(merged, indent=2, ensure_ascii=False) + "\n")
    return warnings


def merge_fleet(shards: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The fleet's figures once, not once per shard (DESIGN 25): each shard wrote the whole
    fleet's figures as they stood when it finished, so the latest (most calls) stands for the
    run; the shards' own figures are listed under `shards`."""
    entries = [s["fleet"] for s in shards if isinstance(s.get("fleet"), dict)]
    if not entries:
        return None
    figures = [e["fleet"] for e in entries if isinstance(e.get("fleet"), dict)]
    latest = max(figures, key=lambda f: (f.get("calls", 0), f.get("spent_usd", 0)), default=None)
    first = entries[0]
    return {
        "run": _common([e.get("run") for e in entries]),
        "store": _common([e.get("store") for e in entries]),
        "mode": _common([e.get("mode") for e in entries]),
        "on_error": first.get("on_error"),
        "max_cost_usd": first.get("max_cost_usd"),
        "fleet": latest,
        "shards": [e.get("shard") for e in entries],
        "warnings": [w for e in entries for w in e.get("warnings", [])],
    }


def _exit_code(value: int) -> ExitCode:
    try:
        return ExitCode(value)
    except ValueError:
        # A code this runner does not know can only come from a newer or broken shard.
        return ExitCode.INTERNAL


def _worst(codes: list[ExitCode]) -> ExitCode:
    worst = worst_exit_code(codes)
    # worst_exit_code leaves out 2, which happens before anything runs; a shard that ended so
    # still means the merged run is not OK.
    if worst == ExitCode.OK and ExitCode.USAGE in codes:
        return ExitCode.USAGE
    return worst
