"""A rubric's grading in-process (runner.run.session.rubric.grade_result, DESIGN 27).

The grader is a scripted model put where the session makes it (the run's extra models); the log
is a real session log on disk, read back; the change is a real git repository's. The CLI story
(a fake model server, JUnit, the step summary) is tests/e2e/test_rubric.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from runner.errors import ProviderError
from runner.llm import LLM, Message, Reply, RetryEvent, Usage, cost_usd
from runner.outcome import CriterionGrade, Grade
from runner.prompt import REQUEST_OPENING, verdict_retry
from runner.prompt.rubric import NO_VERDICT
from runner.redact import Redactor
from runner.run.session import rubric as rubric_module
from runner.run.session.header import session_header
from runner.run.session.requirements import GitState, git_state
from runner.run.session.rubric import GraderLimit, Grading, failure_reason, grade_result
from runner.run.turn import Budget, RunBudget
from runner.sessionlog import SessionLogWriter, read_session
from runner.settings import ModelInfo, Settings
from runner.task import Task, load_tasks
from tests.conftest import git

pytestmark = pytest.mark.anyio

SECRET = "sk-rubric-secret-0123456789"
GRADER = "openai:grader-model"
INFO = ModelInfo(input_usd_per_mtok=1000.0, output_usd_per_mtok=4000.0)
"""Dear enough that every call costs something visible: 100 in, 20 out = $0.18."""
CALL_COST = cost_usd(Usage(100, 20), INFO)

Step = str | BaseException | Callable[[Callable[[RetryEvent], None] | None], str]


def verdict(*passes: bool, reasons: Sequence[str] = ()) -> str:
    entries = [
        {"criterion": i, "pass": ok, "reason": reasons[i - 1] if reasons else f"reason {i}"}
        for i, ok in enumerate(passes, 1)
    ]
    return json.dumps({"criteria": entries})


class Grader:
    """A scripted grader: each call takes the next step; every request is recorded."""

    provider = "openai"
    model = "grader-model"

    def __init__(self, *steps: Step, info: ModelInfo | None = INFO) -> None:
        self.steps = list(steps)
        self.info = info
        self.requests: list[tuple[str, list[Message]]] = []

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[RetryEvent], None] | None = None,
        tools: Any = None,
    ) -> Reply:
        self.requests.append((system, list(messages)))
        step = self.steps.pop(0)
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            step = step(on_retry)
        return Reply(step, Usage(100, 20), "end_turn", 0.1, 0, self.model)

    async def aclose(self) -> None:
        pass


class Governor:
    """The fleet's governor as the budget sees it: every reservation and settlement recorded."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.max_cost_usd: float | None = 100.0
        self.reserved: list[float] = []
        self.settled: list[tuple[str, float]] = []

    async def reserve(self, estimate_usd: float) -> str:
        from runner.fleet import FleetCapReached

        if self.refuse:
            raise FleetCapReached("the fleet's cost cap is reached ($100.00)")
        self.reserved.append(estimate_usd)
        return f"ticket-{len(self.reserved)}"

    async def settle(self, ticket: str, cost_usd: float) -> None:
        self.settled.append((ticket, cost_usd))


def task_file(tmp_path: Path, **rubric: Any) -> Task:
    spec = {
        "name": "summary",
        "prompt": f"Summarise calc.py (key {SECRET}).",
        "secrets": ["RUBRIC_SECRET"],
        "success": {
            "rubric": {
                "criteria": ["Names every function", f"Does not leak {SECRET}"],
                "grader": GRADER,
                **rubric,
            }
        },
    }
    file = tmp_path / "task.yaml"
    file.write_text(json.dumps(spec), encoding="utf-8")
    (task,) = load_tasks([file], env={"RUBRIC_SECRET": SECRET})
    return task


class Session:
    """One task's grading: its grader, log and budget, as the session hands them over."""

    def __init__(
        self,
        tmp_path: Path,
        scripted: Grader,
        *,
        budget: Budget | None = None,
        git_before: GitState | None = None,
        task: Task | None = None,
        **rubric: Any,
    ) -> None:
        self.task = task or task_file(tmp_path, **rubric)
        self.grader = scripted
        self.out = tmp_path / "out"
        redactor = Redactor(self.task.secrets)
        header = session_header(self.task, scripted, "run-1", None, None, "", [], Settings())
        self.log = SessionLogWriter.create(self.out, header, redactor)
        assert self.task.spec.success.rubric is not None
        self.grading = Grading(
            self.task,
            self.task.spec.success.rubric,
            Settings(),
            {f"{self.task.spec.success.rubric.grader} (grader)": scripted},  # type: ignore[dict-item]
            self.log,
            budget or Budget(),
            dict(os.environ),
            redactor.text,
            git_before,
        )

    async def grade(
        self,
        result: str = "It has add() and sub().",
        check_output: str | None = None,
        attempt: int = 1,
        attempts_left: int = 2,
    ) -> Any:
        return await grade_result(self.grading, result, check_output, attempt, attempts_left)

    def events(self, kind: str) -> list[dict[str, Any]]:
        self.log.close()
        record = read_session(self.log.path)
        return [e for e in record.events if e["type"] == kind]

    def users(self, call: int) -> list[str]:
        return [m.content for m in self.grader.requests[call][1]]


# --- the request --------------------------------------------------------------------------


async def test_every_vote_gets_the_graders_request_with_every_piece_masked(tmp_path: Path) -> None:
    grader = Grader(verdict(True, True), verdict(True, True), verdict(True, True))
    session = Session(tmp_path, grader, votes=3)
    result = f"add() and sub(); the key is {SECRET}"
    graded = await session.grade(result, check_output=f"2 passed ({SECRET})")
    assert graded.passed and (graded.reason, graded.feedback) == ("", "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        graded.passed = False
    assert len(grader.requests) == 3
    for system, messages in grader.requests:
        assert system.startswith("You are a strict grader")
        (user,) = messages
        assert user.role == "user" and user.content.startswith(REQUEST_OPENING)
        assert SECRET not in user.content and SECRET not in system
        assert '1. "Names every function"' in user.content
        assert '2. "Does not leak ***"' in user.content
        assert '<data name="task">\nSummarise calc.py (key ***).\n</data>' in user.content
        assert '<data name="result">\nadd() and sub(); the key is ***\n</data>' in user.content
        assert '<data name="check_output">\n2 passed (***)\n</data>' in user.content


async def test_without_a_check_the_grader_sees_no_check_output(tmp_path: Path) -> None:
    session = Session(tmp_path, Grader(verdict(True, True), verdict(True, True)))
    await session.grade(check_output=None)
    assert '<data name="check_output">' not in session.users(0)[0]
    await session.grade(check_output="")
    assert '<data name="check_output">\n(no output)\n</data>' in session.users(1)[0]


# --- the change ---------------------------------------------------------------------------


async def test_without_a_git_baseline_the_grader_is_told_why_there_is_no_change(
    tmp_path: Path,
) -> None:
    grader = Grader(verdict(True, True), verdict(True, True), verdict(True, True))
    session = Session(tmp_path, grader)
    await session.grade()
    assert "(the change cannot be shown: no git baseline)" in session.users(0)[0]
    session.grading.git_before = GitState(error=f"{tmp_path} is not in a git work tree")
    await session.grade()
    assert (
        f"(the change cannot be shown: {tmp_path} is not in a git work tree)" in session.users(1)[0]
    )
    session.grading.git_before = GitState()  # no error, and no folder recorded either
    await session.grade()
    assert "(the change cannot be shown: no git baseline)" in session.users(2)[0]


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    return repo


def _in_repo(tmp_path: Path, repo: Path, **isolated: str) -> Task:
    return dataclasses.replace(task_file(tmp_path), workdir=repo, isolated=isolated)


async def test_the_grader_sees_the_change_since_the_start_masked(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    before = await git_state(repo, os.environ)
    (repo / "calc.py").write_text(
        f"def add(a, b):\n    return a + b\n\n\ndef sub(a, b):  # {SECRET}\n    return a - b\n",
        encoding="utf-8",
    )
    (repo / "new.txt").write_text("a new file\n", encoding="utf-8")
    grader = Grader(verdict(True, True))
    session = Session(tmp_path, grader, git_before=before, task=_in_repo(tmp_path, repo))
    await session.grade()
    user = session.users(0)[0]
    assert '<data name="change">\ndiff --git a/calc.py b/calc.py' in user
    assert "+def sub(a, b):  # ***" in user and SECRET not in user
    assert "+a new file" in user


async def test_a_worktree_tasks_change_is_taken_from_its_snapshot(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    snapshot = git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text("def add(a, b):\n    return b + a\n", encoding="utf-8")
    git(repo, "commit", "-qam", "two")
    before = await git_state(repo, os.environ)  # HEAD is "two"; the snapshot is "one"
    task = _in_repo(tmp_path, repo, workdir=str(repo), snapshot=snapshot)
    session = Session(tmp_path, Grader(verdict(True, True)), git_before=before, task=task)
    await session.grade()
    assert "+    return b + a" in session.users(0)[0]


async def test_a_change_that_cannot_be_read_is_said_so_and_warned_about(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    before = await git_state(repo, os.environ)
    shutil.rmtree(repo / ".git")  # the recorded git folder is gone
    session = Session(
        tmp_path, Grader(verdict(True, True)), git_before=before, task=_in_repo(tmp_path, repo)
    )
    await session.grade()
    user = session.users(0)[0]
    assert '<data name="change">\n(the change could not be read: ' in user
    (warning,) = session.events("warning")
    assert warning["message"].startswith("the rubric's grader gets no change: ")


# --- the verdict and the votes ------------------------------------------------------------


async def test_a_failed_grading_says_which_criteria_failed_in_one_line_and_to_the_agent(
    tmp_path: Path,
) -> None:
    grader = Grader(
        verdict(True, False, reasons=["names them", "leaks the key"]),
        verdict(False, False, reasons=["misses sub", "leaks the key"]),
        verdict(True, True, reasons=["names them", "fine"]),
    )
    session = Session(tmp_path, grader, votes=3)
    graded = await session.grade(attempt=2, attempts_left=1)
    assert not graded.passed
    assert graded.reason == (
        'rubric: 1 of 2 criteria failed (pass: all): "Does not leak ***" (leaks the key)'
    )
    assert graded.feedback == (
        "Your attempt_completion result was graded against the task's rubric and did not pass "
        "(1 of 2 criteria passed; pass: all). What the grader found missing:\n"
        "\n"
        '- Criterion 2, "Does not leak ***": failed (1 of 3 vote(s) passed it)\n'
        "  - leaks the key\n"
        "\n"
        "Improve the work so that it meets these criteria, then call attempt_completion again "
        "(1 attempt(s) left)."
    )
    (event,) = session.events("grade")
    assert event["passed"] is False and event["attempt"] == 2 and event["votes"] == 3
    assert event["pass"] == "all" and event["grader"] == GRADER
    assert event["invalid_votes"] == 0
    first, second = event["criteria"]
    assert first == {
        "criterion": "Names every function",
        "passed": True,
        "votes": [True, False, True],
        "reasons": ["names them", "misses sub", "names them"],
    }
    assert second["passed"] is False and second["votes"] == [False, False, True]


async def test_every_failing_reason_reaches_the_agent_once_and_passing_criteria_stay_out(
    tmp_path: Path,
) -> None:
    grader = Grader(
        verdict(False, True, reasons=["misses sub", "ok"]),
        verdict(False, True, reasons=["misses mul", "ok"]),
        verdict(False, True, reasons=["misses sub", "ok"]),
    )
    session = Session(tmp_path, grader, votes=3, **{"pass": 0.5})
    graded = await session.grade()
    assert graded.passed  # one of two meets 0.5
    grader.steps = [
        verdict(False, False, reasons=["misses sub", f"prints {SECRET}"]),
        verdict(False, False, reasons=["misses mul", "x"]),
        verdict(False, True, reasons=["misses sub", "ok"]),
    ]
    graded = await session.grade(attempts_left=3)
    assert graded.reason == (
        'rubric: 2 of 2 criteria failed (pass: 0.5): "Names every function" (misses sub); '
        '"Does not leak ***" (prints ***)'
    )
    assert "  - misses sub\n  - misses mul\n" in graded.feedback
    assert graded.feedback.count("misses sub") == 1
    assert "- Criterion 1," in graded.feedback and "- Criterion 2," in graded.feedback
    assert "(0 of 3 vote(s) passed it)" in graded.feedback
    assert "(1 of 3 vote(s) passed it)" in graded.feedback
    assert "(0 of 2 criteria passed; pass: 0.5)" in graded.feedback
    assert "  - ok" not in graded.feedback and SECRET not in graded.feedback
    assert "(3 attempt(s) left)" in graded.feedback
    _, second = session.events("grade")
    assert second["criteria"][1]["reasons"] == ["prints ***", "x", "ok"]


async def test_a_malformed_verdict_is_asked_for_once_more_saying_what_was_wrong(
    tmp_path: Path,
) -> None:
    grader = Grader("All criteria pass.", verdict(True, True))
    session = Session(tmp_path, grader)
    graded = await session.grade()
    assert graded.passed
    assert len(grader.requests) == 2
    first, again = session.users(0), session.users(1)
    assert len(first) == 1
    assert again[:2] == [first[0], "All criteria pass."]
    assert [m.role for m in grader.requests[1][1]] == ["user", "assistant", "user"]
    assert again[2] == verdict_retry("it is not one JSON object (Expecting value at line 1)", 2)
    (event,) = session.events("grade")
    assert event["invalid_votes"] == 0
    assert session.events("warning") == []


async def test_a_verdict_malformed_twice_fails_that_vote_on_every_criterion_and_is_warned(
    tmp_path: Path,
) -> None:
    grader = Grader("no", '{"criteria": []}', verdict(True, True), "still not", "[]")
    session = Session(tmp_path, grader, votes=3)
    graded = await session.grade()
    assert len(grader.requests) == 5
    assert not graded.passed  # two of three votes failed each criterion
    assert f"({NO_VERDICT})" in graded.reason
    (event,) = session.events("grade")
    assert event["invalid_votes"] == 2
    assert event["criteria"][0]["votes"] == [False, True, False]
    assert event["criteria"][0]["reasons"] == [NO_VERDICT, "reason 1", NO_VERDICT]
    warnings = [w["message"] for w in session.events("warning")]
    assert warnings == [
        "the rubric's grader gave no valid verdict: criteria 1, 2 are not graded",
        "the rubric's grader gave no valid verdict: the answer must be an object whose only key "
        'is "criteria"',
    ]


# --- cost ---------------------------------------------------------------------------------


async def test_every_grader_call_is_charged_to_the_task_and_the_run_and_reported(
    tmp_path: Path,
) -> None:
    run = RunBudget()
    budget = Budget(run=run)
    grader = Grader("not json", verdict(True, False), verdict(True, True))
    session = Session(tmp_path, grader, budget=budget)
    await session.grade()
    assert budget.usage == Usage(200, 40)
    assert budget.cost_usd == pytest.approx(2 * CALL_COST)
    assert run.spent_usd == pytest.approx(2 * CALL_COST)
    assert session.grading.spent_usd == pytest.approx(2 * CALL_COST)
    await session.grade(attempt=2)
    first, second = session.events("grade")
    assert first["cost_usd"] == pytest.approx(2 * CALL_COST)
    assert first["total_cost_usd"] == pytest.approx(2 * CALL_COST)
    assert second["cost_usd"] == pytest.approx(CALL_COST)
    assert second["total_cost_usd"] == pytest.approx(3 * CALL_COST)
    assert session.grading.last is not None and session.grading.last.attempt == 2
    assert budget.turns == 0  # a grader call is no turn of the agent


@pytest.mark.parametrize(
    ("budget", "rubric", "kind", "why"),
    [
        (lambda: Budget(max_cost_usd=1.0, cost_usd=1.0), {}, "cost", "cost limit reached"),
        (
            lambda: Budget(run=RunBudget(max_cost_usd=2.0, spent_usd=2.0)),
            {},
            "run_cost",
            "run cost cap reached ($2.0000/$2.00)",
        ),
        (Budget, {"max_cost_usd": 0.5}, "cost", "rubric.max_cost_usd reached"),
    ],
)
async def test_no_grader_call_starts_once_a_cost_cap_is_spent(
    tmp_path: Path,
    budget: Callable[[], Budget],
    rubric: dict[str, Any],
    kind: str,
    why: str,
) -> None:
    grader = Grader(verdict(True, True))
    session = Session(tmp_path, grader, budget=budget(), **rubric)
    if "max_cost_usd" in rubric:
        session.grading.spent_usd = 0.5
    with pytest.raises(GraderLimit) as raised:
        await session.grade()
    assert raised.value.kind == kind
    assert why in str(raised.value)
    assert "the rubric's grader cost $" in str(raised.value)
    assert raised.value.final_report is False
    assert grader.requests == []
    assert session.events("grade") == []


async def test_a_cap_is_not_reached_while_something_of_it_is_left(tmp_path: Path) -> None:
    budget = Budget(max_cost_usd=1.0, cost_usd=0.99, run=RunBudget(max_cost_usd=5.0, spent_usd=4.9))
    grader = Grader(verdict(True, True))
    session = Session(tmp_path, grader, budget=budget, max_cost_usd=0.2)
    session.grading.spent_usd = 0.01
    with pytest.raises(GraderLimit) as raised:  # the call itself passes the task's limit
        await session.grade()
    assert len(grader.requests) == 1
    assert raised.value.kind == "cost"
    assert "cost limit reached ($1.1700/$1.00)" in str(raised.value)


async def test_a_grading_that_reaches_a_cap_is_logged_then_ends_the_task(tmp_path: Path) -> None:
    grader = Grader(verdict(True, True), verdict(True, True), verdict(True, True))
    session = Session(tmp_path, grader, votes=3, max_cost_usd=2 * CALL_COST)
    with pytest.raises(GraderLimit) as raised:
        await session.grade()
    assert len(grader.requests) == 2  # the third call never starts
    assert "rubric.max_cost_usd reached" in str(raised.value)
    grader2 = Grader(verdict(True, True))
    (tmp_path / "b").mkdir()
    once = Session(tmp_path / "b", grader2, max_cost_usd=CALL_COST)
    with pytest.raises(GraderLimit, match=r"rubric.max_cost_usd reached \(\$0.1800/\$0.18\)"):
        await once.grade()
    (event,) = once.events("grade")  # the grading is in: only then does the task end
    assert event["passed"] is True


async def test_each_call_is_held_against_the_fleets_cap_and_settled_at_its_cost(
    tmp_path: Path,
) -> None:
    governor = Governor()
    budget = Budget(run=RunBudget(governor=governor), reserve_output_tokens=1000)  # type: ignore[arg-type]
    grader = Grader(verdict(True, True), ProviderError("HTTP 500 from the grader"))
    session = Session(tmp_path, grader, budget=budget, votes=3)
    with pytest.raises(ProviderError):
        await session.grade()
    system, messages = grader.requests[0]
    prompt = (len(system) + sum(len(m.content) for m in messages)) // 4
    assert governor.reserved == [
        pytest.approx(cost_usd(Usage(prompt, 1000), INFO)),
        pytest.approx(cost_usd(Usage(prompt, 1000), INFO)),
    ]
    # the failed call is settled too, at nothing
    assert governor.settled == [("ticket-1", pytest.approx(CALL_COST)), ("ticket-2", 0.0)]


async def test_a_grader_call_the_fleets_cap_refuses_is_never_sent(tmp_path: Path) -> None:
    budget = Budget(run=RunBudget(governor=Governor(refuse=True)))  # type: ignore[arg-type]
    grader = Grader(verdict(True, True))
    session = Session(tmp_path, grader, budget=budget)
    with pytest.raises(GraderLimit) as raised:
        await session.grade()
    assert raised.value.kind == "run_cost"
    assert str(raised.value) == (
        "the fleet's cost cap is reached ($100.00); the rubric's grader was not called"
    )
    assert raised.value.final_report is False
    assert grader.requests == []


# --- the grader's provider ----------------------------------------------------------------


async def test_an_unreachable_grader_is_an_infrastructure_error_naming_it(tmp_path: Path) -> None:
    cause = ProviderError("connection refused")
    session = Session(tmp_path, Grader(cause))
    with pytest.raises(ProviderError) as raised:
        await session.grade()
    assert str(raised.value) == f"the rubric's grader {GRADER}: connection refused"
    assert raised.value.__cause__ is cause
    assert session.grading.spent_usd == 0.0 and session.grading.budget.cost_usd == 0.0


async def test_a_graders_retries_are_logged_as_the_graders_at_the_agents_turn(
    tmp_path: Path,
) -> None:
    def flaky(on_retry: Callable[[RetryEvent], None] | None) -> str:
        assert on_retry is not None
        on_retry(RetryEvent(1, "HTTP 429 rate limited", 429, 2.5))
        return verdict(True, True)

    session = Session(tmp_path, Grader(flaky), budget=Budget(turns=4))
    await session.grade()
    (retry,) = session.events("retry")
    assert retry["turn"] == 4 and retry["attempt"] == 1 and retry["status"] == 429
    assert retry["reason"] == "the rubric's grader: HTTP 429 rate limited"
    assert retry["wait_s"] == 2.5
    (event,) = session.events("grade")
    assert event["turn"] == 4


@pytest.mark.parametrize(
    ("grader", "temperature"),
    [
        ("openai:gpt-4.1-mini", 0.0),
        ("anthropic:claude-sonnet-4", 0.0),
        ("openai:o3-mini", 0.7),
        ("openai:o1", 0.7),
        ("openai:gpt-5-mini", 0.7),
        ("openai:ft:gpt-4o:org", 0.0),
        ("openai:o4-mini:2025", 0.7),
        ("openai:my-o1", 0.0),
    ],
)
async def test_the_grader_is_made_once_per_run_at_temperature_zero_where_its_model_takes_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grader: str, temperature: float
) -> None:
    made: list[tuple[str, Settings]] = []
    scripted = Grader(*[verdict(True, True)] * 4)

    def create_llm(spec: str, settings: Settings) -> LLM:
        made.append((spec, settings))
        return scripted  # type: ignore[return-value]

    monkeypatch.setattr(rubric_module, "create_llm", create_llm)
    session = Session(tmp_path, scripted, grader=grader)
    session.grading.models.clear()
    session.grading.settings = Settings(temperature=0.7)
    await session.grade()
    await session.grade(attempt=2)
    (spec, settings) = made[0]
    assert len(made) == 1 and spec == grader
    assert settings.temperature == temperature
    assert session.grading.models == {f"{grader} (grader)": scripted}
    assert session.grading.settings.temperature == 0.7  # the run's own settings are left alone


def test_a_failed_criterion_without_a_failing_vote_says_no_reason_was_given() -> None:
    grade = Grade(
        grader=GRADER,
        passed=False,
        criteria=(
            CriterionGrade("kept", True, (True,), ("fine",)),
            CriterionGrade("odd", False, (), ()),
        ),
        votes=1,
        pass_rule=1.0,
        attempt=1,
    )
    assert failure_reason(grade) == (
        'rubric: 1 of 2 criteria failed (pass: 1.0): "odd" (no reason given)'
    )


async def test_a_baseline_git_could_not_take_is_named_and_no_diff_is_tried(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    before = await git_state(repo, os.environ)
    (repo / "calc.py").write_text("changed\n", encoding="utf-8")
    broken = dataclasses.replace(before, error="git could not read the index")
    task = _in_repo(tmp_path, repo)
    session = Session(tmp_path, Grader(verdict(True, True)), git_before=broken, task=task)
    await session.grade()
    user = session.users(0)[0]
    assert (
        '<data name="change">\n(the change cannot be shown: git could not read the index)' in user
    )
    assert "+changed" not in user
