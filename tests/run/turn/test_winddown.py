"""When the wind-down notice is due, and when the last request may be made (DESIGN 12)."""

from __future__ import annotations

import time

import pytest

from runner.llm import Usage
from runner.run.turn.budget import Budget, LimitExceeded, RunBudget
from runner.run.turn.winddown import WindDown


@pytest.mark.parametrize(
    ("max_turns", "silent_until", "told_at"), [(10, 8, 9), (50, 44, 45), (2, 0, 1), (1, 0, 1)]
)
def test_the_turn_notice_comes_at_90_percent_or_before_the_last_turn(
    max_turns: int, silent_until: int, told_at: int
) -> None:
    budget = Budget(max_turns=max_turns)
    wind_down = WindDown(budget)
    budget.turns = silent_until
    assert wind_down.notice() is None
    budget.turns = told_at
    text = wind_down.notice()
    assert text is not None and f"of your {max_turns} turns left" in text
    assert wind_down.notice() is None, "the notice is given once"


def test_tokens_and_cost_are_told_at_90_percent() -> None:
    budget = Budget(max_turns=None, max_tokens=1000, max_cost_usd=1.0)
    wind_down = WindDown(budget)
    budget.turns = 1
    budget.charge(Usage(800, 99), 0.5)
    assert wind_down.notice() is None
    budget.charge(Usage(1, 0), 0.0)
    text = wind_down.notice()
    assert text is not None and "900 of your 1000 tokens used" in text


def test_the_time_limit_is_told_at_90_percent() -> None:
    budget = Budget(max_turns=None)
    budget.turns = 1
    assert WindDown(budget, timeout_s=100.0, started=0.0).notice() is not None
    assert WindDown(budget, timeout_s=100.0, started=time.monotonic()).notice() is None


def test_no_last_request_past_the_run_cap() -> None:
    run = RunBudget(max_cost_usd=1.0, spent_usd=0.5)
    wind_down = WindDown(Budget(run=run))
    assert wind_down.final_report_allowed(LimitExceeded("turns", "x"))
    assert not wind_down.final_report_allowed(LimitExceeded("run_cost", "x"))
    run.spent_usd = 1.0
    assert not wind_down.final_report_allowed(LimitExceeded("cost", "x"))
