"""A 429 seen by one task holds back the other tasks of the run (issue 19, the shared limiter).

Two tasks at `--jobs 2` against a server that takes one request at a time: their first requests
meet at the server, one is answered (slowly), the other gets a 429 with `retry-after: 1`. With
the shared limiter no request of either task reaches the server before the instant the 429
named; without it, the answered task's next request comes as soon as its reply is in. The
assertion is an order of events on one clock (the 429's instant plus its retry-after, then the
next arrival), not a duration.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import Done, Scenario, kill, start
from tests.fakes.model_server import turns_then_done
from tests.fakes.rate_limited import RateLimitedServer

RETRY_AFTER_S = 1.0
SUITE = {
    "defaults": {
        "workdir": "w",
        "limits": {"max_turns": 6},
        # Read-only, so the two tasks may share their workdir under --jobs 2.
        "tools": {"deny": ["write_to_file", "replace_in_file", "execute_command"]},
    },
    "tasks": [
        {"name": "alpha", "prompt": "Task alpha\nRead notes.txt."},
        {"name": "beta", "prompt": "Task beta\nRead notes.txt."},
    ],
}


def run_pair(root: Path, *, shared: bool) -> tuple[Done, RateLimitedServer]:
    server = RateLimitedServer(
        script=turns_then_done(1),
        max_concurrent=1,
        retry_after=f"{RETRY_AFTER_S:g}",
        latency_s=0.3,
        burst=2,
    ).start()
    scenario = Scenario(
        task=SUITE,
        files={"notes.txt": "notes\n"},
        env={
            "AGENT_RUNNER_RETRY__RETRY_AFTER_CAP_S": "5",
            "AGENT_RUNNER_RETRY__SHARED_LIMITER": "true" if shared else "false",
        },
        args=["run", "t.yaml", "--model", "openai:gpt-4.1", "--out", "OUT", "--jobs", "2"],
    )
    started = start(scenario, root, server=server)
    try:
        return started.wait(), server
    finally:
        kill(started.process)
        server.stop()


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "alone"])
def test_a_429_on_one_task_holds_the_other_tasks_next_request_until_retry_after(
    tmp_path: Path, shared: bool
) -> None:
    done, server = run_pair(tmp_path, shared=shared)
    assert done.code == 0, done.explain()
    arrivals = server.arrivals
    limited = [a for a in arrivals if a.limited]
    assert len(limited) == 1, arrivals
    (first_429,) = limited
    assert first_429.sent_429_at is not None
    resume_at = first_429.sent_429_at + RETRY_AFTER_S
    after = [a for a in arrivals if a.t > first_429.sent_429_at]
    # Both tasks sent more requests after the 429: the rate-limited one its retry, the other
    # its next turn.
    assert {a.task for a in after} == {"Task alpha", "Task beta"}
    other = next(a for a in after if a.task != first_429.task)
    if shared:
        assert all(a.t >= resume_at for a in after), (resume_at, after)
    else:
        assert other.t < resume_at, (resume_at, after)  # the behaviour the limiter replaces
