"""The grader's verdict, parsed strictly, and the votes counted (DESIGN 27).

A verdict is one JSON object, `{"criteria": [{"criterion": N, "pass": BOOL, "reason": TEXT}]}`,
with exactly one entry per criterion and nothing else: no other key, no `"true"` for `true`,
no missing or repeated criterion, no prose around it (one ```json fence is tolerated, as models
add it). Anything else is malformed; the caller asks once more, then counts the vote as failed.
A criterion passes when most of its votes pass it; the rubric passes when every criterion does
(`pass: all`) or at least the given share of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

__all__ = [
    "NO_VERDICT",
    "REASON_LIMIT",
    "CriterionVote",
    "CriterionTally",
    "VerdictError",
    "parse_verdict",
    "rubric_passes",
    "tally",
]

REASON_LIMIT = 1_000
"""Characters of a reason kept; a longer one is cut (the verdict stays valid)."""
NO_VERDICT = "the grader gave no valid verdict (asked twice)"
"""The reason of a vote whose verdict stayed malformed."""

_FENCE = re.compile(r"```(?:json)?\s*\n(.*)\n\s*```", re.DOTALL)


class VerdictError(ValueError):
    """A malformed verdict; the message says what is wrong, for the grader's second try."""


@dataclass(frozen=True)
class CriterionVote:
    """One vote on one criterion."""

    passed: bool
    reason: str


@dataclass(frozen=True)
class CriterionTally:
    """One criterion over all the votes."""

    criterion: str
    passed: bool
    """Most votes pass it."""
    votes: tuple[bool, ...]
    """Each vote's pass or fail, in the order they were cast (a malformed one: fail)."""
    reasons: tuple[str, ...]
    """Each vote's reason, in the same order."""


def parse_verdict(text: str, count: int) -> list[CriterionVote]:
    """The verdict in `text` on `count` criteria, in criterion order; VerdictError otherwise."""
    stripped = text.strip()
    fenced = _FENCE.fullmatch(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        data: Any = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise VerdictError(f"it is not one JSON object ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or set(data) != {"criteria"}:
        raise VerdictError('the answer must be an object whose only key is "criteria"')
    entries = data["criteria"]
    if not isinstance(entries, list):
        raise VerdictError('"criteria" must be a list')
    votes: dict[int, CriterionVote] = {}
    for position, entry in enumerate(entries, 1):
        number, vote = _entry(entry, position, count)
        if number in votes:
            raise VerdictError(f"criterion {number} is graded twice")
        votes[number] = vote
    missing = [str(n) for n in range(1, count + 1) if n not in votes]
    if missing:
        raise VerdictError(f"criteria {', '.join(missing)} are not graded")
    return [votes[n] for n in range(1, count + 1)]


def _entry(entry: Any, position: int, count: int) -> tuple[int, CriterionVote]:
    where = f"entry {position}"
    if not isinstance(entry, dict) or set(entry) != {"criterion", "pass", "reason"}:
        raise VerdictError(f'{where} must have exactly the keys "criterion", "pass", "reason"')
    number = entry["criterion"]
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= count:
        raise VerdictError(f'{where}: "criterion" must be a number from 1 to {count}')
    if not isinstance(entry["pass"], bool):
        raise VerdictError(f'{where}: "pass" must be true or false')
    reason = entry["reason"]
    if not isinstance(reason, str) or not reason.strip():
        raise VerdictError(f'{where}: "reason" must be a non-empty string')
    reason = " ".join(reason.split())
    if len(reason) > REASON_LIMIT:
        reason = reason[: REASON_LIMIT - 1] + "…"
    return number, CriterionVote(entry["pass"], reason)


def tally(
    criteria: Sequence[str], ballots: Sequence[Sequence[CriterionVote] | None]
) -> list[CriterionTally]:
    """Each criterion over the `ballots` (one per vote; None: a vote with no valid verdict,
    which fails every criterion). A criterion passes when more than half its votes pass it."""
    tallies = []
    for index, criterion in enumerate(criteria):
        votes = [b[index] if b is not None else CriterionVote(False, NO_VERDICT) for b in ballots]
        passes = sum(1 for vote in votes if vote.passed)
        tallies.append(
            CriterionTally(
                criterion,
                passes * 2 > len(votes),
                tuple(vote.passed for vote in votes),
                tuple(vote.reason for vote in votes),
            )
        )
    return tallies


def rubric_passes(tallies: Sequence[CriterionTally], rule: str | float) -> bool:
    """`rule` `all`: every criterion passed; a fraction: at least that share of them, compared
    exactly as the decimal written (3 of 5 meets 0.6 whatever the float rounding, and 2 of 3
    meets 0.6666666: a share is never rounded up past what was written)."""
    passed = sum(1 for t in tallies if t.passed)
    if rule == "all":
        return passed == len(tallies)
    share = Fraction(repr(float(rule)))
    return passed * share.denominator >= share.numerator * len(tallies)
