"""scripts/mutation's operators of issue 47, on a small module: each kind is made where it
applies, makes valid Python that differs as described, and is marked as new (`--only-new`);
a hand-made sample's mutant is the module with its one text replaced."""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mutation"

SOURCE = """
import asyncio
from dataclasses import dataclass

TIMEOUT_S = 30.0
KINDS = frozenset({"a", "b"})
LETTERS = frozenset("xy")


@dataclass
class Verdict:
    samples: int
    ran: int

    def rate(self, passes: int) -> float:
        return passes / self.samples


async def fetch(queue, ready, done):
    try:
        await asyncio.wait_for(queue.get(), 5.0)
    finally:
        queue.close()
    for key in ("one", "two"):
        print(key)
    try:
        pass
    except (OSError, ValueError):
        pass
    if ready and not done:
        return run(timeout=10)
    return ready - done
"""


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("mutation_tool", str(SCRIPT))
    spec = importlib.util.spec_from_loader("mutation_tool", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutation_tool"] = module  # dataclasses look their module up
    loader.exec_module(module)
    return module


def _new(tool: ModuleType) -> dict[str, list[str]]:
    """The new operators' mutants: operator -> the mutated sources."""
    found: dict[str, list[str]] = {}
    for mutant in tool.mutants(SOURCE):
        if mutant.new:
            ast.parse(mutant.source)
            found.setdefault(mutant.operator, []).append(mutant.source)
    return found


def test_a_member_of_each_constant_set_is_dropped(tool: ModuleType) -> None:
    found = _new(tool)
    assert "KINDS = frozenset({'b'})" in found["drop member 'a'"][0]
    assert "LETTERS = frozenset('y')" in found["drop member 'x'"][0]
    assert "for key in ('two',):" in found["drop member 'one'"][0]
    assert "except (ValueError,):" in found["drop member OSError"][0]


def test_each_operand_of_a_boolean_condition_is_dropped(tool: ModuleType) -> None:
    found = _new(tool)
    assert "if not done:" in found["drop and-operand 1"][0]
    assert "if ready:" in found["drop and-operand 2"][0]


def test_a_timeout_is_made_ten_times_longer(tool: ModuleType) -> None:
    found = _new(tool)
    assert "TIMEOUT_S = 300.0" in found["timeout 30.0 -> 300.0"][0]
    assert "asyncio.wait_for(queue.get(), 50.0)" in found["timeout 5.0 -> 50.0"][0]
    assert "run(timeout=100)" in found["timeout 10 -> 100"][0]


def test_a_finally_and_an_await_are_dropped(tool: ModuleType) -> None:
    found = _new(tool)
    (dropped,) = found["drop finally"]
    assert "finally" not in dropped and "queue.close()" not in dropped  # the cleanup is gone
    assert any("    asyncio.wait_for(queue.get(), 5.0)" in s for s in found["drop await"])


def test_an_estimators_terms_are_swapped_and_a_field_read_for_another(tool: ModuleType) -> None:
    found = _new(tool)
    assert any("return self.samples / passes" in s for s in found["swap operands of /"])
    assert "return done - ready" in found["swap operands of -"][0]
    assert "return passes / self.ran" in found["name self.samples -> self.ran"][0]


def test_the_first_operators_are_not_marked_new(tool: ModuleType) -> None:
    old = {m.operator for m in tool.mutants(SOURCE) if not m.new}
    assert {"drop not", "and -> or", "delete statement"} <= old
    assert not any(op.startswith(("drop member", "timeout ", "drop finally")) for op in old)


def test_a_sample_mutant_replaces_its_text_once_and_names_its_line(
    tool: ModuleType, tmp_path: Path
) -> None:
    module = "runner/workspace/sandbox/hosts.py"
    entry = {
        "module": module,
        "what": "443 dropped",
        "old": "DEFAULT_PORTS = (80, 443)",
        "new": "DEFAULT_PORTS = (80,)",
    }
    (mutant,) = tool.sample_mutants(module, [entry])
    assert mutant.operator == "hand: 443 dropped"
    assert mutant.source.splitlines()[mutant.line - 1] == "DEFAULT_PORTS = (80,)"
    with pytest.raises(SystemExit, match="not there exactly once"):
        tool.sample_mutants(module, [{**entry, "old": "no such text"}])
