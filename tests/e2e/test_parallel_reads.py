"""Parallel read-only calls end to end (DESIGN section 16), through the CLI.

The proof of overlap is the test MCP server's `meet` tool (read-only by its annotations): a call
answers `met` only when every caller of its group was inside at the same time; one that waited
alone (at most `wait_s`) answers `alone`. No timing is measured.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from tests.e2e.conftest import Done, Scenario, call, complete, run_all
from tests.fakes.mcp_test_server import SCRIPT as PROBE_SERVER
from tests.fakes.model_server import reply

LABEL_HOOK = """sed -n 's/.*"label": "\\([a-z]*\\)".*/hooked \\1/p'"""
"""A post_tool hook that prints `hooked LABEL` for the call it ran after."""
PROBE = {"probe": {"type": "stdio", "cmd": sys.executable, "args": [str(PROBE_SERVER)]}}


def meet(group: str, label: str, callers: int, wait_s: float = 10.0) -> str:
    return call("meet", group=group, label=label, callers=str(callers), wait_s=str(wait_s))


def calls(*xml: str) -> Any:
    return reply("Several calls at once.\n" + "\n".join(xml))


SCENARIOS = {
    "three": Scenario(
        task={"extensions": PROBE},
        steps=[calls(meet("g", "a", 3), meet("g", "b", 3), meet("g", "c", 3)), complete()],
    ),
    "barrier": Scenario(
        task={"extensions": PROBE},
        files={"f.txt": "old\n"},
        steps=[
            calls(
                call("read_file", path="f.txt"),
                meet("g1", "a", 2),
                meet("g1", "b", 2),
                call("write_to_file", path="f.txt", content="new\n"),
                call("read_file", path="f.txt"),
                meet("g2", "c", 2),
                meet("g2", "d", 2),
            ),
            complete(),
        ],
    ),
    "hooked": Scenario(
        task={
            "extensions": PROBE,
            "hooks": {"post_tool": [{"match": ["meet"], "run": LABEL_HOOK}]},
        },
        steps=[calls(meet("g", "a", 2, 1.0), meet("g", "b", 2, 1.0)), complete()],
    ),
    "one_at_a_time": Scenario(
        task={"extensions": PROBE},
        env={"AGENT_RUNNER_MAX_PARALLEL_READS": "1"},
        steps=[calls(meet("g", "a", 2, 1.0), meet("g", "b", 2, 1.0)), complete()],
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Done]:
    return run_all(SCENARIOS, tmp_path_factory.mktemp("parallel"))


def results(done: Done) -> list[tuple[str, str]]:
    """(tool, result) of every tool_call event, in log order."""
    return [(e["tool"], e["result"]) for e in done.events("tool_call")]


def feedback(done: Done) -> str:
    """The user message that carried the reply's results back to the model."""
    return str(done.events("message")[2]["content"])


def test_three_read_only_calls_run_at_once_and_come_back_in_order(runs: dict[str, Done]) -> None:
    done = runs["three"]
    assert done.code == 0, done.explain()
    assert results(done) == [
        ("meet", "a: met (3 of 3)"),
        ("meet", "b: met (3 of 3)"),
        ("meet", "c: met (3 of 3)"),
    ]
    text = feedback(done)
    assert text.index("a: met") < text.index("b: met") < text.index("c: met")


def test_a_write_between_reads_keeps_its_place(runs: dict[str, Done]) -> None:
    done = runs["barrier"]
    assert done.code == 0, done.explain()
    got = results(done)
    assert [tool for tool, _ in got] == [
        "read_file",
        "meet",
        "meet",
        "write_to_file",
        "read_file",
        "meet",
        "meet",
    ]
    assert "old" in got[0][1] and "new" in got[4][1]  # the write ran after the first read only
    assert [text for tool, text in got if tool == "meet"] == [
        "a: met (2 of 2)",
        "b: met (2 of 2)",
        "c: met (2 of 2)",
        "d: met (2 of 2)",
    ]
    assert (done.root / "w" / "f.txt").read_text(encoding="utf-8").strip() == "new"


@pytest.mark.parametrize("name", ["hooked", "one_at_a_time"])
def test_hooked_tools_and_a_limit_of_one_run_calls_one_after_another(
    runs: dict[str, Done], name: str
) -> None:
    done = runs[name]
    assert done.code == 0, done.explain()
    got = [text.split("\n")[0] for _, text in results(done)]
    assert got == ["a: alone (1 of 2)", "b: met (2 of 2)"]


def test_hook_runs_are_logged_in_call_order(runs: dict[str, Done]) -> None:
    done = runs["hooked"]
    hooks = done.events("hook")
    assert [(h["event"], h["stdout"].strip()) for h in hooks] == [
        ("post_tool", "hooked a"),
        ("post_tool", "hooked b"),
    ]
    assert ["hooked a" in text for _, text in results(done)] == [True, False]
