"""`report merge` of JUnit files whose testcases are samples of repeated tasks (DESIGN 22).

Shards of a `--repeat` run each hold some samples of a task (`task [i/K]` testcases) and a verdict
over those alone. The merged report works each task's verdict out again over all its samples in
every input: the `repeat.<task>.*` properties of the suites that hold its samples are replaced.
A sample found twice (a re-run shard) counts once, the later input's. The inputs are untrusted:
names are split with plain string operations and the facts read from bounded `key: value` lines.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from runner.errors import ExitCode
from runner.outcome import Status, TaskOutcome, Totals
from runner.report.repeats import MAX_REPEAT, verdict_of, verdict_properties

__all__ = ["recombine_junit", "sample_of"]

_FACT_LIMIT = 200
"""Characters of a system-out line that may hold a fact; longer lines are results, not facts."""


def sample_of(name: str) -> tuple[str, int, int] | None:
    """(task, i, K) from a testcase named `task [i/K]`; None for any other name."""
    task, sep, tail = name.rpartition(" [")
    if not sep or not tail.endswith("]"):
        return None
    index, slash, total = tail[:-1].partition("/")
    if not slash or not index.isdigit() or not total.isdigit() or len(index + total) > 8:
        return None
    i, k = int(index), int(total)
    return (task, i, k) if 1 <= i <= k <= MAX_REPEAT else None


def recombine_junit(root: ET.Element) -> None:
    """Rewrite the `repeat.<task>.*` properties of the merged `<testsuites>` over every sample."""
    groups: dict[tuple[str, str], dict[int, TaskOutcome]] = {}
    holders: dict[tuple[str, str], list[ET.Element]] = {}
    for suite in root.findall("testsuite"):
        file = suite.get("name") or ""
        for case in suite.findall("testcase"):
            found = sample_of(case.get("name") or "")
            if found is None:
                continue
            task, index, of = found
            groups.setdefault((task, file), {})[index] = _outcome(case, task, file, index, of)
            if suite not in holders.setdefault((task, file), []):
                holders[(task, file)].append(suite)
    for (task, file), samples in groups.items():
        rate = _min_pass_rate(holders[(task, file)], task)
        ordered = [samples[i] for i in sorted(samples)]
        props = verdict_properties(verdict_of(task, file, ordered, rate))
        for suite in holders[(task, file)]:
            _replace_properties(suite, f"repeat.{task}.", props)


def _outcome(case: ET.Element, task: str, file: str, index: int, of: int) -> TaskOutcome:
    facts = _facts(case.findtext("system-out") or "")
    status: Status = "passed"
    code = ExitCode.OK
    if case.find("error") is not None:
        status, code = "error", ExitCode.INFRASTRUCTURE
    elif case.find("failure") is not None or case.find("skipped") is not None:
        status, code = "failed", ExitCode.FAILED
    return TaskOutcome(
        name=task,
        task_file=Path(file),
        status=status,
        exit_code=code,
        totals=Totals(
            turns=int(_number(facts.get("turns", ""))),
            input_tokens=int(_number(facts.get("tokens", "").split(" ")[0])),
            cost_usd=_number(facts.get("cost", "").removeprefix("$")),
            duration_s=_number(facts.get("duration_s", "")),
        ),
        session_id=facts.get("session_id", ""),
        sample=index,
        of=of,
    )


def _facts(text: str) -> dict[str, str]:
    """The `key: value` fact lines of a testcase's system-out (the last of each key wins, as
    the facts come after the result)."""
    facts: dict[str, str] = {}
    for line in text.splitlines():
        if len(line) <= _FACT_LIMIT:
            key, sep, value = line.partition(": ")
            if sep and key.isidentifier():
                facts[key] = value.strip()
    return facts


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        return 0.0
    return value if 0 <= value < float("inf") else 0.0


def _min_pass_rate(suites: list[ET.Element], task: str) -> float:
    for suite in suites:
        for prop in suite.iter("property"):
            if prop.get("name") == f"repeat.{task}.min_pass_rate":
                rate = _number(prop.get("value") or "")
                return rate if rate <= 1 else 1.0
    return 1.0


def _replace_properties(suite: ET.Element, prefix: str, props: dict[str, str]) -> None:
    holder = suite.find("properties")
    if holder is None:
        holder = ET.Element("properties")
        suite.insert(0, holder)  # the schema wants properties before the testcases
    for prop in [p for p in holder.findall("property") if (p.get("name") or "").startswith(prefix)]:
        holder.remove(prop)
    for name, value in props.items():
        ET.SubElement(holder, "property", name=name, value=value)
