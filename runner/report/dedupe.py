"""What `report merge` keeps when its inputs overlap: the same file given twice, or a task found
in several inputs (a re-run shard's second attempt beside its first).

Each kind of input (JUnit, summary.json; later others) describes its files as `Source`s, and
`select` says which tasks to leave out of which file. A file given twice is read once, always.
A task in several inputs is a warning and is counted once per input (`--dedupe none`), or only
its newest copy is kept (`--dedupe latest`): the copy from the run that started last (run ids
begin with the UTC start time), the later input on the command line when that ties.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = ["DEDUPE_CHOICES", "Dedupe", "Selection", "Source", "distinct_paths", "select"]

Dedupe = Literal["none", "latest"]
DEDUPE_CHOICES: tuple[Dedupe, ...] = ("none", "latest")
_SHOWN = 5
"""Task names and files a warning lists before it says how many more there are."""


@dataclass(frozen=True)
class Source:
    """One input file of `report merge`, as far as duplicates go."""

    path: Path
    """The file as given."""
    run_id: str
    """Id of the run that wrote it ("" when unknown): the newer run sorts later."""
    tasks: frozenset[str]
    """Names of the tasks it holds."""


@dataclass(frozen=True)
class Selection:
    """What to leave out, and what to tell the operator."""

    dropped: dict[int, frozenset[str]] = field(default_factory=dict)
    """By the source's index: names of the tasks whose copy in that file is left out."""
    warnings: list[str] = field(default_factory=list)
    """Lines for stderr, each starting with `warning:` or `note:`."""


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def distinct_paths(paths: Sequence[Path], kind: str) -> tuple[list[Path], list[str]]:
    """`paths` with a file given again (the same file by its resolved path) left out, and a
    warning for each one left out."""
    seen: set[Path] = set()
    kept: list[Path] = []
    warnings: list[str] = []
    for path in paths:
        key = path.resolve()
        if key in seen:
            warnings.append(f"warning: {path}: {kind} given twice; merged once")
            continue
        seen.add(key)
        kept.append(path)
    return kept, warnings


def select(sources: Sequence[Source], dedupe: Dedupe, kind: str) -> Selection:
    """Which copies of tasks found in several sources to leave out under `dedupe`."""
    holders: dict[str, list[int]] = {}
    for index, source in enumerate(sources):
        for name in source.tasks:
            holders.setdefault(name, []).append(index)
    repeated = sorted(name for name, where in holders.items() if len(where) > 1)
    if not repeated:
        return Selection()
    files = sorted({str(sources[i].path) for name in repeated for i in holders[name]})
    if dedupe == "none":
        return Selection(
            warnings=[
                f"warning: {len(repeated)} task(s) are in more than one {kind} (a re-run "
                f"shard?), and each copy is counted: {_listed(repeated)} (in "
                f"{_listed(files)}); `--dedupe latest` keeps only the newest copy"
            ]
        )
    dropped: dict[int, set[str]] = {}
    for name in repeated:
        newest = max(holders[name], key=lambda i: (sources[i].run_id, i))
        for index in holders[name]:
            if index != newest:
                dropped.setdefault(index, set()).add(name)
    left_out = sum(len(names) for names in dropped.values())
    return Selection(
        dropped={index: frozenset(names) for index, names in dropped.items()},
        warnings=[
            f"note: {len(repeated)} task(s) are in more than one {kind}; kept the newest copy "
            f"of each and left out {left_out} older one(s): {_listed(repeated)}"
        ],
    )
