"""Whether a completion passes: requirements, stop hooks, the expected result, the success check,
the rubric.

The order is the cheapest and most final first: an unmet `success.require` fails the task for good
(no retry), a stop hook's refusal, an `expect` or check failure and a failed rubric (the costliest,
last: DESIGN 27) go back to the agent, within `success.retries` (DESIGN 12 and 14).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from runner.llm import LLM
from runner.run.guard import HookRunner, command_env, stop_feedback
from runner.run.session.checks import expect_problem, feedback_for_check, output_tail, run_check
from runner.run.session.requirements import GitState, git_state, requirement_problem
from runner.run.session.rubric import Grading, grade_result
from runner.run.turn import Budget
from runner.sessionlog import SessionLogWriter
from runner.settings import Settings
from runner.task import Task

__all__ = ["Verdict", "agent_failure_reason", "judge_completion", "judging_start"]

_AGENT_REASON_LIMIT = 300
"""Characters of the agent's own reason kept in the one-line reason of the reports."""


def agent_failure_reason(result: str, mask: Callable[[str], str]) -> str:
    """`the agent reported failure: <its reason>`, masked and on one line: the console, the step
    summary and JUnit's `message` say why, not only that it failed."""
    flat = " ".join(mask(result).split())
    if len(flat) > _AGENT_REASON_LIMIT:
        flat = flat[: _AGENT_REASON_LIMIT - 1] + "…"
    return f"the agent reported failure: {flat}" if flat else "the agent reported failure"


@dataclass(frozen=True)
class Verdict:
    """Why a completion was not accepted."""

    kind: str
    """`requirement`, `stop_hook`, `expect`, `check` or `rubric`: the JUnit failure type."""
    reason: str
    """One line for the reports."""
    feedback: str
    """What the agent is told when it gets another attempt ("" for a requirement: it does not)."""
    check_output: str = ""
    """The end of a failed check's output (unmasked: the caller masks what it reports)."""


async def judging_start(
    task: Task,
    settings: Settings,
    models: dict[str, LLM],
    log: SessionLogWriter,
    budget: Budget,
    env: Mapping[str, str],
    mask: Callable[[str], str],
) -> tuple[GitState | None, Grading | None]:
    """What judging needs from the task's start: the workdir's git baseline (for
    `require.changed_files`, and the change a rubric's grader sees), and the rubric's grading."""
    success = task.spec.success
    before = None
    if success.require.changed_files or success.rubric is not None:
        before = await git_state(task.workdir, env)
    if success.rubric is None:
        return before, None
    return before, Grading(task, success.rubric, settings, models, log, budget, env, mask, before)


async def judge_completion(
    task: Task,
    result: str,
    *,
    env: Mapping[str, str],
    log: SessionLogWriter,
    budget: Budget,
    hooks: HookRunner | None,
    git_before: GitState | None,
    attempt: int,
    attempts_left: int,
    mask: Callable[[str], str],
    grading: Grading | None = None,
) -> Verdict | None:
    """None when the completion `result` passes; else the first reason it does not. `mask`
    masks secrets in what goes back to the agent; `grading`: the task's rubric, graded last."""
    success = task.spec.success
    after = (
        await git_state(task.workdir, env, git_before) if success.require.changed_files else None
    )
    unmet = requirement_problem(success.require, budget, git_before, after)
    if unmet is not None:
        return Verdict("requirement", unmet, "")
    refusal = await hooks.stop(result) if hooks else None
    if refusal is not None:
        reason = f"a stop hook refused the completion: {refusal}"
        return Verdict("stop_hook", reason, stop_feedback(refusal, attempts_left))
    problem = expect_problem(result, success.expect)
    if problem is not None:
        feedback = (
            f"Your attempt_completion result was not accepted: {problem}. "
            "Fix it and call attempt_completion again."
        )
        return Verdict("expect", problem, feedback)
    check_output = None
    if success.check:
        ran = await run_check(
            success.check, task.workdir, success.check_timeout, command_env(task, env)
        )
        log.check(success.check, ran.exit_code, ran.output, attempt)
        if ran.exit_code != 0:
            reason = f"success check `{success.check}` exited with {ran.exit_code}"
            feedback = feedback_for_check(success.check, ran, attempts_left, mask)
            return Verdict("check", reason, feedback, output_tail(ran.output).rstrip())
        check_output = ran.output
    if grading is None:
        return None
    graded = await grade_result(grading, result, check_output, attempt, attempts_left)
    return None if graded.passed else Verdict("rubric", graded.reason, graded.feedback)
