"""Which tasks a run selects: `--filter` globs, then `--shard K/N` by a hash of each name."""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Sequence

from runner.errors import ConfigError
from runner.task import Task

__all__ = ["parse_shard", "select_tasks", "shard_of"]


def shard_of(name: str, shards: int) -> int:
    """The 1-based shard of a task: a hash of its name, so adding tasks moves no other task."""
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shards + 1


def parse_shard(text: str) -> tuple[int, int]:
    index, sep, total = text.partition("/")
    try:
        k, n = int(index), int(total)
    except ValueError:
        k, n = 0, 0
    if not sep or n < 1 or not 1 <= k <= n:
        raise ConfigError(f"--shard {text!r}: write it as K/N with 1 <= K <= N, e.g. 2/4")
    return k, n


def select_tasks(tasks: list[Task], filters: Sequence[str] | None, shard: str | None) -> list[Task]:
    """Tasks matching any `--filter` glob, then those of the shard."""
    if filters:
        tasks = [t for t in tasks if any(fnmatch.fnmatchcase(t.name, f) for f in filters)]
        if not tasks:
            raise ConfigError(f"--filter {' '.join(filters)}: no task name matches")
    if shard:
        k, n = parse_shard(shard)
        tasks = [t for t in tasks if shard_of(t.name, n) == k]
    return tasks
