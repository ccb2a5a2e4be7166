"""A sub-agent's budget (runner.run.session.child.ChildBudget): charged to its parents, bounded
by them."""

from __future__ import annotations

import pytest

from runner.llm import Usage
from runner.run.session.child import ChildBudget
from runner.run.turn.budget import Budget, LimitExceeded, RunBudget


def test_a_childs_spend_is_charged_to_every_parent_and_to_the_run_once() -> None:
    run = RunBudget(max_cost_usd=10.0)
    task = Budget(max_turns=5, run=run)
    child = ChildBudget(max_turns=3, run=run, parent=task)
    grandchild = ChildBudget(max_turns=3, run=run, parent=child)
    grandchild.turns = 1
    grandchild.charge(Usage(100, 20), 0.5)
    assert task.usage.total == child.usage.total == grandchild.usage.total == 120
    assert task.cost_usd == child.cost_usd == 0.5
    assert run.spent_usd == 0.5
    assert task.turns == child.turns == 0  # turns are per session


def test_a_child_stops_when_its_parent_has_no_tokens_left() -> None:
    task = Budget(max_tokens=1000)
    child = ChildBudget(max_tokens=5000, parent=task)
    child.check()
    task.charge(Usage(990, 0), 0.0)  # e.g. a sibling child's spend, already charged upward
    child.charge(Usage(20, 0), 0.0)
    with pytest.raises(LimitExceeded) as caught:
        child.check()
    assert caught.value.kind == "tokens" and "the parent's token limit" in str(caught.value)


def test_a_child_stops_when_its_grandparent_has_no_money_left() -> None:
    task = Budget(max_cost_usd=1.0)
    child = ChildBudget(parent=task)
    grandchild = ChildBudget(parent=child)
    grandchild.charge(Usage(1, 1), 1.0)
    with pytest.raises(LimitExceeded) as caught:
        child.check()
    assert caught.value.kind == "cost"
    with pytest.raises(LimitExceeded):
        grandchild.check()


def test_the_childs_own_turn_limit_holds() -> None:
    child = ChildBudget(max_turns=2, parent=Budget(max_turns=100))
    child.turns = 2
    with pytest.raises(LimitExceeded) as caught:
        child.check()
    assert caught.value.kind == "turns"
