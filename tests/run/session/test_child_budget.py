"""A sub-agent's budget (runner.run.session.child.ChildBudget): charged to its parents, bounded
by them."""

from __future__ import annotations

import contextlib

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


def test_concurrent_children_hold_their_calls_against_the_parents_cost_limit() -> None:
    """Four sub-agents at once: each call's estimate is held against the parent's limit while
    it runs, so the fourth cannot start before the others are paid (it overshot by 63 %)."""
    run = RunBudget(max_cost_usd=100.0)
    task = Budget(max_cost_usd=1.0, run=run)
    children = [ChildBudget(run=run, parent=task) for _ in range(4)]
    with contextlib.ExitStack() as calls:
        for child in children[:3]:
            calls.enter_context(child.reservation(0.375))
        assert task.reserved_usd == 1.125
        with pytest.raises(LimitExceeded) as caught:
            calls.enter_context(children[3].reservation(0.375))
        assert caught.value.kind == "cost" and "the parent's cost limit" in str(caught.value)
        assert "held by calls under way" in str(caught.value)
    assert task.reserved_usd == 0 and run.reserved_usd == 0
    with children[3].reservation(0.375):  # the others are done: it may start now
        assert task.reserved_usd == 0.375


def test_a_grandchilds_call_is_held_against_every_ancestor() -> None:
    task = Budget(max_cost_usd=1.0)
    child = ChildBudget(parent=task, max_cost_usd=5.0)
    grandchild = ChildBudget(parent=child)
    with grandchild.reservation(0.25):
        assert (task.reserved_usd, child.reserved_usd, grandchild.reserved_usd) == (
            0.25,
            0.25,
            0.25,
        )
    assert task.reserved_usd == child.reserved_usd == 0


def test_a_parent_exactly_at_its_limit_has_nothing_left_for_a_child() -> None:
    """A limit is reached when spent equals it, for the parent as for the task itself."""
    task = Budget(max_tokens=1000, max_cost_usd=1.0)
    child = ChildBudget(parent=task)
    task.charge(Usage(999, 0), 0.5)
    child.check()  # one token and half the money left
    task.charge(Usage(1, 0), 0.0)
    with pytest.raises(LimitExceeded) as caught:
        child.check()
    assert caught.value.kind == "tokens"
    assert str(caught.value) == "the parent's token limit reached (1000/1000)"
    money = Budget(max_cost_usd=1.0)
    money.charge(Usage(0, 0), 1.0)
    with pytest.raises(LimitExceeded) as caught:
        ChildBudget(parent=money).check()
    assert str(caught.value) == "the parent's cost limit reached ($1.0000/$1.00)"


def test_a_childs_spend_adds_to_what_its_parents_spent_before() -> None:
    task = Budget()
    task.charge(Usage(10, 5), 0.25)
    child = ChildBudget(parent=task)
    ChildBudget(parent=child).charge(Usage(100, 20), 0.5)
    assert (task.usage, task.cost_usd) == (Usage(110, 25), 0.75)
    assert (child.usage, child.cost_usd) == (Usage(100, 20), 0.5)
