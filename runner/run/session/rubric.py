"""`success.rubric` (DESIGN 27): a grader model judges a completed task's work, by votes.

It runs last, after `require`, `expect` and the check have passed (`judge`). Each vote is one
call of the grader (temperature 0 where the API takes it) with the request of
`runner.prompt.rubric`: the task's prompt, the result, the change and the check's output quoted
as data, secrets masked. A malformed verdict is asked for once more, then the vote fails every
criterion. The grader is made through the provider registry and retried as every model call is;
one that stays unreachable ends the task with exit 4. Its cost is charged to the task's and the
run's budget (and reported apart), and held against the fleet's cap before it is sent, as every
model call is (DESIGN 25); no grader call starts once the task's `max_cost_usd`, the
run's cap or the rubric's own `max_cost_usd` is spent, and a grading that reaches one of them
ends the task as budget_exceeded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from runner.errors import ProviderError
from runner.llm import CHARS_PER_TOKEN, LLM, Message, RetryEvent, Usage, cost_usd, create_llm
from runner.outcome import CriterionGrade, Grade
from runner.prompt import (
    CriterionTally,
    CriterionVote,
    VerdictError,
    grader_request,
    parse_verdict,
    rubric_passes,
    tally,
    verdict_retry,
)
from runner.run.session.requirements import GitState, change_diff
from runner.run.turn import Budget, LimitExceeded
from runner.sessionlog import SessionLogWriter
from runner.settings import Settings
from runner.task import Rubric, Task
from runner.workspace import GitError

__all__ = ["Graded", "GraderLimit", "Grading", "failure_reason", "grade_result"]

_NO_TEMPERATURE = re.compile(r"^(o\d|gpt-5)")
"""OpenAI's reasoning models refuse any temperature but their default."""


class GraderLimit(LimitExceeded):
    """A cost cap reached by the grader: the task ends budget_exceeded, and since its result is
    in, without the final report a limit otherwise asks for."""

    final_report = False


@dataclass
class Grading:
    """What grading a task's results needs from its session, and what it spent so far."""

    task: Task
    rubric: Rubric
    settings: Settings
    models: dict[str, LLM]
    """The run's extra models (closed with it): the grader is made once per run."""
    log: SessionLogWriter
    budget: Budget
    env: Mapping[str, str]
    mask: Callable[[str], str]
    """Masks secrets: nothing secret reaches the grader or the reports."""
    git_before: GitState | None = None
    spent_usd: float = 0.0
    """What the grader cost over the task so far."""
    last: Grade | None = None
    """The last grading, for the task's outcome."""


@dataclass(frozen=True)
class Graded:
    """A grading's outcome as the judge needs it."""

    passed: bool
    reason: str = ""
    """One line for the reports (a failure)."""
    feedback: str = ""
    """The user message that sends a failure back to the agent."""


async def grade_result(
    grading: Grading, result: str, check_output: str | None, attempt: int, attempts_left: int
) -> Graded:
    """Grade `result` by the rubric's votes; log the `grade` event. Raises ProviderError (exit
    4) for a grader that stays unreachable, GraderLimit when a cost cap is reached."""
    rubric, mask = grading.rubric, grading.mask
    llm = _grader(grading)
    change = await _change(grading)
    request = grader_request(
        [mask(criterion) for criterion in rubric.criteria],
        prompt=mask(grading.task.prompt),
        result=mask(result),
        change=None if change is None else mask(change),
        check_output=None if check_output is None else mask(check_output),
    )
    ballots = []
    before = grading.spent_usd
    invalid = 0
    for _ in range(rubric.votes):
        ballot = await _vote(grading, llm, request.system, request.user)
        invalid += ballot is None
        ballots.append(ballot)
    tallies = tally(rubric.criteria, ballots)
    grade = Grade(
        grader=rubric.grader,
        passed=rubric_passes(tallies, rubric.pass_),
        criteria=tuple(_criterion(t, mask) for t in tallies),
        votes=rubric.votes,
        pass_rule=rubric.pass_,
        attempt=attempt,
        cost_usd=grading.spent_usd - before,
        total_cost_usd=grading.spent_usd,
        invalid_votes=invalid,
    )
    grading.last = grade
    grading.log.grade(grade, grading.budget.turns)
    _check_caps(grading)  # the last call may have reached a cap: the task ends there
    if grade.passed:
        return Graded(True)
    return Graded(False, failure_reason(grade), _feedback(grade, attempts_left))


def failure_reason(grade: Grade) -> str:
    """`rubric: 1 of 2 criteria failed (pass: all): "<criterion>" (<a reason>)`, one line."""
    failed = grade.failed
    named = "; ".join(f'"{c.criterion}" ({_failing_reasons(c)[0]})' for c in failed)
    total = len(grade.criteria)
    return f"rubric: {len(failed)} of {total} criteria failed (pass: {grade.pass_rule}): {named}"


def _feedback(grade: Grade, attempts_left: int) -> str:
    lines = [
        "Your attempt_completion result was graded against the task's rubric and did not pass "
        f"({len(grade.criteria) - len(grade.failed)} of {len(grade.criteria)} criteria passed; "
        f"pass: {grade.pass_rule}). What the grader found missing:",
        "",
    ]
    for index, criterion in enumerate(grade.criteria, 1):
        if criterion.passed:
            continue
        yes = sum(criterion.votes)
        lines.append(
            f'- Criterion {index}, "{criterion.criterion}": failed '
            f"({yes} of {len(criterion.votes)} vote(s) passed it)"
        )
        lines.extend(f"  - {reason}" for reason in _failing_reasons(criterion))
    lines += [
        "",
        "Improve the work so that it meets these criteria, then call attempt_completion again "
        f"({attempts_left} attempt(s) left).",
    ]
    return "\n".join(lines)


def _failing_reasons(criterion: CriterionGrade) -> list[str]:
    """The reasons of the votes that failed the criterion, each once."""
    failing = [r for r, ok in zip(criterion.reasons, criterion.votes, strict=True) if not ok]
    return list(dict.fromkeys(failing)) or ["no reason given"]


def _criterion(tallied: CriterionTally, mask: Callable[[str], str]) -> CriterionGrade:
    return CriterionGrade(
        mask(tallied.criterion),
        tallied.passed,
        tallied.votes,
        tuple(mask(reason) for reason in tallied.reasons),
    )


async def _vote(grading: Grading, llm: LLM, system: str, user: str) -> list[CriterionVote] | None:
    """One vote: the verdict, asked for again once when it is malformed; None when it stays so."""
    messages = [Message("user", user)]
    count = len(grading.rubric.criteria)
    for asked in (1, 2):
        reply = await _call(grading, llm, system, messages)
        try:
            return parse_verdict(reply, count)
        except VerdictError as problem:
            if asked == 2:
                grading.log.warning(f"the rubric's grader gave no valid verdict: {problem}")
                return None
            messages += [
                Message("assistant", reply),
                Message("user", verdict_retry(str(problem), count)),
            ]
    return None


async def _call(grading: Grading, llm: LLM, system: str, messages: list[Message]) -> str:
    _check_caps(grading)
    log, budget = grading.log, grading.budget

    def retried(event: RetryEvent) -> None:
        reason = f"the rubric's grader: {event.reason}"
        log.retry(budget.turns, event.attempt, reason, event.status, event.wait_s)

    # Held against the fleet's cap like any model call (DESIGN 25; None: no governor).
    prompt = (len(system) + sum(len(m.content) for m in messages)) // CHARS_PER_TOKEN
    try:
        worst = cost_usd(Usage(prompt, budget.reserve_output_tokens), llm.info)
        ticket = await budget.fleet_reserve(worst)
    except LimitExceeded as refused:  # the grader's result is not in: no final report either
        raise GraderLimit(refused.kind, f"{refused}; the rubric's grader was not called") from None
    cost = 0.0
    try:
        reply = await llm.complete(system, messages, on_retry=retried)
        cost = cost_usd(reply.usage, llm.info)
    except ProviderError as error:
        raise ProviderError(f"the rubric's grader {grading.rubric.grader}: {error}") from error
    finally:
        await budget.fleet_settle(ticket, cost)
    budget.charge(reply.usage, cost)
    grading.spent_usd += cost
    return reply.text


def _check_caps(grading: Grading) -> None:
    """GraderLimit when the task's cost limit, the run's cap or the rubric's is spent."""
    budget, rubric, spent = grading.budget, grading.rubric, grading.spent_usd
    kind: Literal["cost", "run_cost"] = "cost"
    why = ""
    if budget.max_cost_usd is not None and budget.cost_usd >= budget.max_cost_usd:
        why = f"cost limit reached (${budget.cost_usd:.4f}/${budget.max_cost_usd:.2f})"
    elif (cap := budget.run.max_cost_usd) is not None and budget.run.spent_usd >= cap:
        kind, why = "run_cost", f"run cost cap reached (${budget.run.spent_usd:.4f}/${cap:.2f})"
    elif rubric.max_cost_usd is not None and spent >= rubric.max_cost_usd:
        why = f"rubric.max_cost_usd reached (${spent:.4f}/${rubric.max_cost_usd:.2f})"
    if why:
        raise GraderLimit(kind, f"{why}; the rubric's grader cost ${spent:.4f} of it")


def _grader(grading: Grading) -> LLM:
    """The grader, made once per run at temperature 0 (where the model takes one)."""
    spec = grading.rubric.grader
    key = f"{spec} (grader)"
    llm = grading.models.get(key)
    if llm is None:
        settings = grading.settings
        name = spec.split(":", 1)[-1]
        if not _NO_TEMPERATURE.match(name):
            settings = settings.model_copy(update={"temperature": 0.0})
        llm = grading.models[key] = create_llm(spec, settings)
    return llm


async def _change(grading: Grading) -> str | None:
    """The change to show the grader: the worktree's patch or the workdir's diff against HEAD
    at the start; a sentence when there is none to show."""
    before = grading.git_before
    task = grading.task
    if before is None or before.error or before.folder is None:
        why = before.error if before is not None and before.error else "no git baseline"
        return f"(the change cannot be shown: {why})"
    try:
        return await change_diff(
            task.workdir, grading.env, before, task.isolated.get("snapshot", "")
        )
    except GitError as error:
        grading.log.warning(f"the rubric's grader gets no change: {error}")
        return f"(the change could not be read: {error})"
