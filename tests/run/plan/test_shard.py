"""--shard K/N: every task in exactly one shard, stable when tasks are added."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.errors import ConfigError
from runner.run.plan import parse_shard, shard_of

names = st.lists(st.text(min_size=1, max_size=30), min_size=0, max_size=60, unique=True)


@settings(max_examples=100, deadline=None)
@given(names, st.integers(min_value=1, max_value=12))
def test_shards_partition_any_task_set_exactly(tasks, total):
    shards = {k: {t for t in tasks if shard_of(t, total) == k} for k in range(1, total + 1)}
    assert set().union(*shards.values()) == set(tasks)
    assert sum(len(s) for s in shards.values()) == len(tasks)


@settings(max_examples=100, deadline=None)
@given(names, names, st.integers(min_value=1, max_value=12))
def test_adding_tasks_moves_no_existing_task(before, added, total):
    assignment = {t: shard_of(t, total) for t in before}
    for task in [*before, *added]:
        if task in assignment:
            assert shard_of(task, total) == assignment[task]


def test_shards_spread_tasks_roughly_evenly():
    counts = [0, 0, 0, 0]
    for index in range(400):
        counts[shard_of(f"task-{index}", 4) - 1] += 1
    assert min(counts) > 60


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "x/2", "2", "1/-1"])
def test_a_bad_shard_is_a_usage_error(text):
    with pytest.raises(ConfigError, match="K/N"):
        parse_shard(text)
