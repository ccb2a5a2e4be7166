"""A task's limits and what it has used (DESIGN section 7), below both the loop and compaction.

`Budget.check` raises `LimitExceeded` when a limit leaves no room for another model call; the
session ends such a task as budget_exceeded. `RunBudget` is the cost cap of the whole run, and
holds the fleet's governor when shards share one (DESIGN 25): `fleet_reserve` before a call,
`fleet_settle` after it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from runner.fleet import FleetCapReached, FleetGovernor
from runner.llm import Usage
from runner.prompt import RequestTokens

__all__ = ["MIN_REPLY_TOKENS", "Budget", "LimitExceeded", "LimitKind", "RunBudget"]

MIN_REPLY_TOKENS = 16
"""The least reply worth a request: with less left under a token limit, the task stops."""

LimitKind = Literal["turns", "tokens", "cost", "time", "run_cost"]


class LimitExceeded(Exception):
    """A budget stopped the task; `kind` says which."""

    final_report = True
    """False when the task's result is in already (a limit a rubric's grader reached): no final
    report is asked for."""

    def __init__(self, kind: LimitKind, detail: str) -> None:
        super().__init__(detail)
        self.kind: LimitKind = kind


@dataclass
class RunBudget:
    """The cost cap of a whole run, shared by its concurrent tasks (one event loop: no lock)."""

    max_cost_usd: float | None = None
    spent_usd: float = 0.0
    reserved_usd: float = 0.0
    """The estimates of the model calls under way (see `Budget.reservation`)."""
    governor: FleetGovernor | None = None
    """The fleet's governor (`--governor-url`): every shard's calls against one cap."""


@dataclass
class Budget:
    """One task's limits and what it has used so far; kept across success-check retries."""

    max_turns: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    run: RunBudget = field(default_factory=RunBudget)
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    tool_calls: int = 0
    denied_calls: int = 0
    """Tool calls a policy refused (counted in `tool_calls` too)."""
    reserve_output_tokens: int = 0
    """Output tokens a model call is assumed to use while it runs (the `max_output_tokens`)."""
    requested: RequestTokens = field(default_factory=RequestTokens)
    """The measured requests' tokens by part, summed (DESIGN 28)."""
    reserved_usd: float = 0.0
    """The estimates of this session's model calls under way, and of its sub-agents' (held
    against `max_cost_usd` as the run's are against its cap; see `reservation`)."""

    def check(self) -> None:
        """Raise LimitExceeded when a limit leaves no room for another model call."""
        if self.max_turns is not None and self.turns >= self.max_turns:
            raise LimitExceeded("turns", f"turn limit reached ({self.turns}/{self.max_turns})")
        if self.max_tokens is not None and self.usage.total >= self.max_tokens:
            raise LimitExceeded(
                "tokens", f"token limit reached ({self.usage.total}/{self.max_tokens})"
            )
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            raise LimitExceeded(
                "cost", f"cost limit reached (${self.cost_usd:.4f}/${self.max_cost_usd:.2f})"
            )
        cap = self.run.max_cost_usd
        if cap is not None and self.run.spent_usd >= cap:
            raise LimitExceeded(
                "run_cost", f"run cost cap reached (${self.run.spent_usd:.4f}/${cap:.2f})"
            )

    def reply_room(self, prompt_tokens: int) -> int | None:
        """The output tokens the next request may ask for under the token limits (this task's
        and, for a sub-agent, its parents'): what is left after what was used and the request's
        prompt (estimated). None when no token limit applies.

        Raises:
            LimitExceeded: the prompt leaves less than `MIN_REPLY_TOKENS` under a limit. The
                first request of a session is never refused (a task gets one reply, asked for
                with at least `MIN_REPLY_TOKENS`).
        """
        room: int | None = None
        for budget in self.cost_holders():
            if budget.max_tokens is None:
                continue
            left = budget.max_tokens - budget.usage.total - prompt_tokens
            if left < MIN_REPLY_TOKENS and self.turns > 0:
                whose = "the parent's token limit" if budget is not self else "token limit"
                raise LimitExceeded(
                    "tokens",
                    f"{whose} reached: the next request's prompt (about {prompt_tokens} tokens)"
                    f" would pass it ({budget.usage.total}/{budget.max_tokens} used)",
                )
            room = left if room is None else min(room, left)
        return None if room is None else max(room, MIN_REPLY_TOKENS)

    @contextmanager
    def reservation(self, estimate_usd: float) -> Iterator[None]:
        """Hold `estimate_usd` of the run's cost cap, and of the task's `max_cost_usd` (for a
        sub-agent: of its own and every parent's), while a model call is under way.

        Concurrent tasks (and concurrent sub-agents of one task) see each other's calls before
        they are paid: a call starts only while what is spent and held stays under each cap.
        The caller charges the real cost right after (no await in between), so a cap is passed
        by at most the last call admitted, plus what calls cost beyond their estimate
        (docs/limits.md).

        Raises:
            LimitExceeded: the run's cap, or a task's cost limit, is already spent or held.
        """
        cap = self.run.max_cost_usd
        held = self.run.spent_usd + self.run.reserved_usd
        if cap is not None and held >= cap:
            raise LimitExceeded(
                "run_cost",
                f"run cost cap reached (${self.run.spent_usd:.4f} spent and "
                f"${self.run.reserved_usd:.4f} held by calls under way, of ${cap:.2f})",
            )
        holders = list(self.cost_holders())
        for budget in holders:
            budget.refuse_when_held(budget is not self)
        self.run.reserved_usd += estimate_usd
        for budget in holders:
            budget.reserved_usd += estimate_usd
        try:
            yield
        finally:
            self.run.reserved_usd -= estimate_usd
            for budget in holders:
                budget.reserved_usd -= estimate_usd

    async def fleet_reserve(self, estimate_usd: float) -> str | None:
        """Hold `estimate_usd` of the fleet's cap (None: no governor).

        Raises:
            LimitExceeded: the fleet's cap has no room for this call (`run_cost`).
            StoreDown: the governor's store is down and `on_error` is `fail`.
        """
        governor = self.run.governor
        if governor is None:
            return None
        try:
            return await governor.reserve(estimate_usd)
        except FleetCapReached as refused:
            raise LimitExceeded("run_cost", str(refused)) from None

    async def fleet_settle(self, ticket: str | None, cost_usd: float) -> None:
        """Replace the reservation `ticket` by the call's real cost."""
        if ticket is not None and self.run.governor is not None:
            await self.run.governor.settle(ticket, cost_usd)

    def cost_holders(self) -> Iterator[Budget]:
        """The budgets whose `max_cost_usd` a model call of this session counts against: its
        own (a sub-agent's budget adds its parents')."""
        yield self

    def refuse_when_held(self, parent: bool) -> None:
        """LimitExceeded when what this budget spent and holds leaves nothing of its cost limit:
        concurrent sub-agents see each other's calls before they are paid."""
        cap = self.max_cost_usd
        if cap is None or self.cost_usd + self.reserved_usd < cap:
            return
        whose = "the parent's cost limit" if parent else "cost limit"
        raise LimitExceeded(
            "cost",
            f"{whose} reached (${self.cost_usd:.4f} spent and ${self.reserved_usd:.4f} held "
            f"by calls under way, of ${cap:.2f})",
        )

    def charge(self, usage: Usage, cost_usd: float) -> None:
        self.usage = self.usage + usage
        self.cost_usd += cost_usd
        self.run.spent_usd += cost_usd
