"""Sub-agents at once under the task's cost limit, through the CLI (DESIGN 13; issue 35).

Four children start in one reply; each call of theirs would cost about what is held for it (the
output at its maximum). The children's replies are held until all four have asked, or a few
seconds: without the reservation against the parent's limit, all four calls ran and the task
spent twice its limit.
"""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import Scenario, call, complete, run_one
from tests.fakes.model_server import reply

CAP_USD = 0.1
OUTPUT_TOKENS = 8000
"""A child's reply: at gpt-4.1's $8 per million output tokens, $0.064, under the $0.0655 held
for its 8,192 output tokens at most."""


def test_four_children_at_once_stay_within_the_parents_cost_limit(tmp_path: Path) -> None:
    parent = "\n".join(call("sub_agent", agent="worker", task=f"C-TASK {n}") for n in range(4))
    scenario = Scenario(
        task={
            "prompt": "P-TASK: ask the workers.",
            "limits": {"max_cost_usd": CAP_USD},
            "agents": {"worker": {"description": "Works.", "prompt": "You work."}},
        },
        routes={
            "P-TASK": [reply(parent), complete("asked")],
            "C-TASK": [
                complete("worked", output_tokens=OUTPUT_TOKENS, hold_until=5, hold_timeout_s=3)
                for _ in range(4)
            ],
        },
    )
    done = run_one(scenario, tmp_path)
    children = [r for r in done.logs() if r.header.get("parent_session_id")]
    stopped = [r for r in children if r.end and r.end.get("status") == "budget_exceeded"]
    held = [r for r in children if "held by calls under way" in str((r.end or {}).get("reason"))]
    assert len(children) == 4, done.explain()
    assert len(stopped) == len(held) == 2, [r.end for r in children]
    # Spent: the two calls admitted; passed by at most the last call admitted (docs/limits.md).
    assert done.task()["cost_usd"] <= CAP_USD + 0.07, done.task()
