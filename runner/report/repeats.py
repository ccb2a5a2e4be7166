"""Repeated tasks (DESIGN 22): a task's K samples become one verdict with a pass rate, pass@k,
pass^k and the spread of turns, tokens, cost and time.

pass@k is the unbiased estimator of the HumanEval paper (Chen et al., 2021): the chance that at
least one of k samples drawn without replacement from the n run passes, `1 - C(n-c, k) / C(n, k)`
with c the passes. pass^k (τ-bench) is the chance that all k drawn pass, `C(c, k) / C(n, k)`.
Both are exact fractions of whole numbers, computed with `math.comb`.

A sample's identity is (task name, task file, sample index); a task run once is its own verdict,
so every report can go through `verdicts`. Nothing here reads files or the environment.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from runner.errors import ConfigError, ExitCode, worst_exit_code
from runner.outcome import (
    RunSummary,
    Status,
    TaskOutcome,
    Totals,
    meets_rate,
    passes_rate,
    sample_groups,
)

__all__ = [
    "Spread",
    "Verdict",
    "pass_at_k",
    "pass_hat_k",
    "recombine_summary",
    "run_exit_code",
    "sample_key",
    "verdict_json",
    "verdict_lost",
    "verdict_of",
    "verdict_properties",
    "verdicts",
]

_SIGNALS = (ExitCode.SIGINT, ExitCode.SIGTERM)
MAX_REPEAT = 1000
"""The most samples a task may have (`repeat`, `--repeat`); a merged summary that claims more
is refused, since pass@k is worked out for every k."""
_STATUSES = ("passed", "failed", "budget_exceeded", "error", "interrupted")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of `k` of the `n` samples passes, `c` of them having passed."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that all `k` of `k` samples drawn from the `n` pass (pass^k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    return math.comb(c, k) / math.comb(n, k)


@dataclass(frozen=True)
class Spread:
    """Mean, least and most of one measure over a task's samples."""

    mean: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            return cls(0.0, 0.0, 0.0)
        return cls(sum(values) / len(values), min(values), max(values))

    def as_json(self, digits: int) -> dict[str, float]:
        return {
            "mean": round(self.mean, digits),
            "min": round(self.min, digits),
            "max": round(self.max, digits),
        }


@dataclass(frozen=True)
class Verdict:
    """One task over its samples: the verdict the exit code, JUnit and summaries follow."""

    name: str
    file: str
    """The task file as the outcomes name it."""
    samples: int
    """K: the samples the task was to run (`repeat`); those missing count as not passed."""
    ran: int
    """Samples with an outcome (K unless the run was cut short or a shard is missing)."""
    passes: int
    min_pass_rate: float
    passed: bool
    """The pass rate is at least `min_pass_rate`."""
    exit_code: ExitCode
    """OK when passed (a signal's code when a sample was interrupted); else the worst code of
    the samples that did not pass."""
    turns: Spread
    tokens: Spread
    cost_usd: Spread
    duration_s: Spread
    session_ids: tuple[str, ...] = ()
    """The samples' sessions, in sample order: how the samples' logs are linked."""

    @property
    def pass_rate(self) -> float:
        return self.passes / self.samples if self.samples else 0.0

    @property
    def pass_at(self) -> list[float]:
        """pass@k for k = 1..K."""
        return [pass_at_k(self.samples, self.passes, k) for k in range(1, self.samples + 1)]

    @property
    def pass_hat(self) -> list[float]:
        """pass^k for k = 1..K."""
        return [pass_hat_k(self.samples, self.passes, k) for k in range(1, self.samples + 1)]


def verdicts(outcomes: list[TaskOutcome], min_pass_rate: float = 1.0) -> list[Verdict]:
    """The verdict of each repeated task (outcomes with `of`), in the order tasks first appear."""
    return [
        verdict_of(name, file, group, min_pass_rate)
        for (name, file), group in sample_groups(outcomes).items()
    ]


def verdict_of(name: str, file: str, samples: list[TaskOutcome], min_pass_rate: float) -> Verdict:
    """The verdict of one task from the outcomes of its samples (one per index)."""
    of = max(o.of for o in samples)
    passes = sum(1 for o in samples if o.status == "passed")
    met = meets_rate(samples, min_pass_rate)
    if met:
        signals = [o.exit_code for o in samples if o.exit_code in _SIGNALS]
        code = worst_exit_code(signals) if signals else ExitCode.OK
    else:
        code = worst_exit_code([o.exit_code for o in samples if o.status != "passed"])
        code = ExitCode.FAILED if code == ExitCode.OK else code  # samples that never ran
    return Verdict(
        name=name,
        file=file,
        samples=of,
        ran=len(samples),
        passes=passes,
        min_pass_rate=min_pass_rate,
        passed=met,
        exit_code=code,
        turns=Spread.of([o.totals.turns for o in samples]),
        tokens=Spread.of([o.totals.tokens for o in samples]),
        cost_usd=Spread.of([o.totals.cost_usd for o in samples]),
        duration_s=Spread.of([o.totals.duration_s for o in samples]),
        session_ids=tuple(o.session_id for o in samples if o.session_id),
    )


def verdict_lost(outcome: TaskOutcome, done: Iterable[TaskOutcome], min_pass_rate: float) -> bool:
    """Whether `outcome`, which did not pass, decides that its task fails: always for a task run
    once; for a sample, when its task's samples that did not pass in `done` (it among them)
    leave too few to reach the rate (what `--fail-fast` stops at)."""
    if not outcome.of:
        return True
    task = (outcome.name, outcome.task_file)  # a task is its name in its file (sample_groups)
    same = {
        o.sample for o in done if o.of and (o.name, o.task_file) == task and o.status != "passed"
    }
    failures = len(same | {outcome.sample})
    return not passes_rate(outcome.of - failures, outcome.of, min_pass_rate)


def run_exit_code(outcomes: list[TaskOutcome], min_pass_rate: float = 1.0) -> ExitCode:
    """The run's exit code over the tasks' verdicts: a task run once by its own code, a
    repeated task by its verdict; the worst wins as `worst_exit_code` orders them."""
    codes = [o.exit_code for o in outcomes if not o.of]
    codes += [v.exit_code for v in verdicts(outcomes, min_pass_rate)]
    return worst_exit_code(codes)


def verdict_json(verdict: Verdict) -> dict[str, Any]:
    """A verdict as summary.json's `repeats` entry (pass@k and pass^k keyed by k)."""
    return {
        "name": verdict.name,
        "file": verdict.file,
        "status": "passed" if verdict.passed else "failed",
        "exit_code": int(verdict.exit_code),
        "samples": verdict.samples,
        "ran": verdict.ran,
        "passes": verdict.passes,
        "pass_rate": round(verdict.pass_rate, 6),
        "min_pass_rate": verdict.min_pass_rate,
        "pass_at_k": {str(k): round(p, 6) for k, p in enumerate(verdict.pass_at, 1)},
        "pass_hat_k": {str(k): round(p, 6) for k, p in enumerate(verdict.pass_hat, 1)},
        "turns": verdict.turns.as_json(3),
        "tokens": verdict.tokens.as_json(3),
        "cost_usd": verdict.cost_usd.as_json(6),
        "duration_s": verdict.duration_s.as_json(3),
        "session_ids": list(verdict.session_ids),
    }


def sample_key(entry: Mapping[str, Any]) -> tuple[str, str, int]:
    """The identity of a summary.json task entry: (name, file, sample), sample 0 for a task run
    once. `report merge` must key on all three: samples of one task are not duplicates."""
    sample = entry.get("sample")
    return str(entry.get("name", "")), str(entry.get("file", "")), int(sample or 0)


def verdict_properties(verdict: Verdict) -> dict[str, str]:
    """The verdict as JUnit `<properties>` of its task's testsuite, each named `repeat.<task>.`
    and a measure (`passes`, `pass_rate`, `pass@2`, `pass^2`, `turns.mean`, ...)."""
    head = f"repeat.{verdict.name}."
    props = {
        "status": "passed" if verdict.passed else "failed",
        "samples": str(verdict.samples),
        "passes": str(verdict.passes),
        "pass_rate": f"{verdict.pass_rate:.6f}",
        "min_pass_rate": f"{verdict.min_pass_rate:g}",
    }
    props.update({f"pass@{k}": f"{p:.6f}" for k, p in enumerate(verdict.pass_at, 1)})
    props.update({f"pass^{k}": f"{p:.6f}" for k, p in enumerate(verdict.pass_hat, 1)})
    for measure, spread, digits in (
        ("turns", verdict.turns, 3),
        ("tokens", verdict.tokens, 3),
        ("cost_usd", verdict.cost_usd, 6),
        ("duration_s", verdict.duration_s, 3),
    ):
        for stat, value in spread.as_json(digits).items():
            props[f"{measure}.{stat}"] = f"{value:g}" if digits == 3 else f"{value:.{digits}f}"
    return {head + key: value for key, value in props.items()}


def recombine_summary(merged: dict[str, Any], shards: Sequence[Mapping[str, Any]]) -> None:
    """`report merge`: the samples of each repeated task, from every shard, make one verdict.

    `repeats`, `passed`, `failed` and `exit_code` of `merged` (whose `tasks` are the shards'
    entries joined) are worked out again over all the samples; a shard's code that its own
    entries do not explain (an unwritable report, a usage error) still counts. Nothing changes
    when no entry is a sample."""
    tasks = merged["tasks"]
    if not any(t.get("of") for t in tasks):
        return
    rates = [s["min_pass_rate"] for s in shards if isinstance(s.get("min_pass_rate"), int | float)]
    rate = float(max(rates, default=1.0))
    outcomes = [_entry_outcome(t) for t in tasks]
    extra = []
    for shard in shards:
        own = [_entry_outcome(t) for t in shard["tasks"]]
        code = _code(shard["exit_code"])
        if code != run_exit_code(own, rate):
            extra.append(code)
    summary = RunSummary("", "", "", outcomes, ExitCode.OK, Path(), min_pass_rate=rate)
    codes = [run_exit_code(outcomes, rate), *extra]
    worst = worst_exit_code(codes)
    if worst == ExitCode.OK and ExitCode.USAGE in codes:
        worst = ExitCode.USAGE
    merged["exit_code"] = int(worst)
    merged["passed"], merged["failed"] = summary.passed, summary.failed
    merged["min_pass_rate"] = rate
    merged["repeats"] = [verdict_json(v) for v in verdicts(outcomes, rate)]


def _code(value: Any) -> ExitCode:
    try:
        return ExitCode(int(value))
    except (TypeError, ValueError):
        return ExitCode.INTERNAL  # a code this runner does not know: a newer or broken shard


def _number(entry: Mapping[str, Any], key: str) -> float:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        return 0.0
    return float(value)


def _index(entry: Mapping[str, Any], key: str) -> int:
    """A sample index or count as written: 0 when absent, -1 when not a whole number."""
    value = entry.get(key)
    if value is None:
        return 0
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _entry_outcome(entry: Mapping[str, Any]) -> TaskOutcome:
    """A summary.json task entry as far as a verdict needs it (the entry is untrusted input)."""
    of, sample = _index(entry, "of"), _index(entry, "sample")
    # A repeated task's sample is 1..K; a task run once has none (0). Anything else (a sample
    # past its count, 0 or negative, not a whole number) would count passes over K.
    if not 0 <= of <= MAX_REPEAT or not (1 <= sample <= of if of else sample == 0):
        shown = [str(entry.get(key))[:20] for key in ("sample", "of")]
        raise ConfigError(
            f"report merge: task {str(entry.get('name'))[:100]!r} claims sample {shown[0]} of "
            f"{shown[1]}; a sample is a whole number from 1 to its task's count, and a summary "
            f"has at most {MAX_REPEAT} samples of a task"
        )
    status = entry.get("status")
    tokens = int(_number(entry, "tokens"))

    return TaskOutcome(
        name=str(entry.get("name", "")),
        task_file=Path(str(entry.get("file", ""))),
        status=cast(Status, status) if status in _STATUSES else "error",
        exit_code=_code(entry.get("exit_code")),
        totals=Totals(
            turns=int(_number(entry, "turns")),
            input_tokens=tokens,
            cost_usd=_number(entry, "cost_usd"),
            duration_s=_number(entry, "duration_s"),
        ),
        session_id=str(entry.get("session_id") or ""),
        sample=sample,
        of=of,
    )
