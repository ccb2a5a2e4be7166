"""DESIGN section 23 through the CLI, against a fake that behaves like llama-cpp-python's server
(0.3.x) as issue 46 met it: no usage in its streams, a reply that stops at `length` when the
window is full, and a running stream cut (`[DONE]`, no finish reason) when a second request
arrives (its `interrupt_requests`, on by default). On main the cut was taken as a context
overflow: the runner learned a window smaller than an exchange the server had just completed,
and two tasks side by side cut each other's streams until the retries ran out (exit 4)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.conftest import NO_WORKSPACE, Done, Scenario, call, complete, kill, start
from tests.fakes.llama_server import LlamaServer
from tests.fakes.model_server import Step, fault, reply

N_CTX = 3500
"""The server's window: less than the 4,096 output tokens an unknown model is asked for, so a
long reply stops at the window (whatever the size of the lean system prompt)."""
SUMMARY_MARK = "You compress the history"
RAMBLE = "RAMBLE: let me think about this problem at length. " * 2000
MODEL = "openai:local-model"


def _task_of(body: Any) -> str:
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    first = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
    found = re.search(r"TASK-(\w+)", first)
    return found.group(1) if found else "?"


def _assistant_turns(body: Any) -> int:
    return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")


def ramble_then_verdict(body: Any) -> Step:
    """Each task: one reply that runs on (cut by the window), then its own verdict."""
    messages = body.get("messages", [])
    if messages and str(messages[0].get("content", "")).startswith(SUMMARY_MARK):
        return reply("Summary: the agent thought at length.")
    if _assistant_turns(body) == 0:
        return reply(RAMBLE)
    return complete(f"verdict of {_task_of(body)}")


SUITE = {
    "defaults": NO_WORKSPACE,  # no tools: two tasks may share a folder
    "tasks": [
        {"name": "alpha", "prompt": "TASK-alpha: think, then give your verdict."},
        {"name": "beta", "prompt": "TASK-beta: think, then give your verdict."},
    ],
}


def _run(root: Path, server: LlamaServer, config: dict[str, Any] | None = None) -> Done:
    extra = {"agent-runner.yaml": yaml.safe_dump(config)} if config else {}
    scenario = Scenario(
        task=SUITE,
        extra_files=extra,
        args=["run", "t.yaml", "--model", MODEL, "--out", "OUT", "--jobs", "2"],
    )
    started = start(scenario, root, server=server.start())
    try:
        return started.wait()
    finally:
        kill(started.process)
        server.stop()


def _learned(done: Done, name: str) -> list[str]:
    [log] = [r for r in done.logs() if r.header["task"]["name"] == name]
    return [e["message"] for e in done.events("warning", log) if "context window:" in e["message"]]


def test_two_tasks_on_a_server_that_interrupts_each_end_with_their_own_verdict(
    tmp_path: Path,
) -> None:
    server = LlamaServer(
        script=ramble_then_verdict,
        n_ctx=N_CTX,
        flavour="llama-cpp-python",
        no_usage=True,
        interrupt_requests=True,
    )
    done = _run(tmp_path, server)
    assert done.code == 0, done.explain()
    assert server.cuts >= 1, "no stream was interrupted: the test does not test anything"
    assert done.task("alpha")["result"] == "verdict of alpha"
    assert done.task("beta")["result"] == "verdict of beta"
    # The cut was retried (an interruption), never taken as an overflow.
    retries = [e for log in done.logs() for e in done.events("retry", log)]
    assert all("interrupt" in e["reason"] for e in retries), retries
    assert not any(s.rejected for s in server.seen)
    for name in ("alpha", "beta"):
        # Learned from the estimated counts (the server streams no usage), named in the log,
        # and never below the window the server has.
        [learned] = _learned(done, name)
        window = int(re.search(r"context window: (\d+) tokens", learned).group(1))  # type: ignore[union-attr]
        assert N_CTX * 0.95 <= window <= N_CTX * 1.05, learned


def test_max_concurrency_in_the_model_table_sends_one_request_at_a_time(tmp_path: Path) -> None:
    server = LlamaServer(
        script=ramble_then_verdict,
        n_ctx=N_CTX,
        flavour="llama-cpp-python",
        no_usage=True,
        interrupt_requests=True,
        rival_wait_s=0.2,
    )
    config = {"models": {"local-model": {"max_concurrency": 1}}}
    done = _run(tmp_path, server, config)
    assert done.code == 0, done.explain()
    assert server.cuts == 0
    assert done.task("alpha")["result"] == "verdict of alpha"
    assert done.task("beta")["result"] == "verdict of beta"


def test_a_cut_stream_smaller_than_a_completed_exchange_is_retried_not_taken_as_an_overflow(
    tmp_path: Path,
) -> None:
    # The first reply runs to its 4,096-token limit (a big window: the limit, not the window,
    # stops it), so the server has completed an exchange of the prompt plus 4,096 tokens. Only
    # its head and tail stay in the context, so the next prompt is larger than the first but
    # far smaller than that exchange: a stream cut there cannot be an overflow.
    asked: list[int] = []

    def script(body: Any) -> Step:
        asked.append(1)
        if _assistant_turns(body) == 0:
            return reply(RAMBLE)
        if len(asked) == 2:
            return fault("cut", text=call("attempt_completion", result="x"))
        return complete("done after the cut")

    server = LlamaServer(script=script, n_ctx=32_000, flavour="llama-cpp-python", no_usage=True)
    scenario = Scenario(
        task={**NO_WORKSPACE, "name": "one", "prompt": "Think, then finish."},
        args=["run", "t.yaml", "--model", MODEL, "--out", "OUT"],
    )
    started = start(scenario, tmp_path, server=server.start())
    try:
        done = started.wait()
    finally:
        kill(started.process)
        server.stop()
    assert done.code == 0, done.explain()
    assert done.task()["result"] == "done after the cut"
    seen = server.seen
    assert len(seen) == 3 and seen[0].prompt_tokens < seen[1].prompt_tokens
    assert seen[2].prompt_tokens == seen[1].prompt_tokens  # sent again as it was
    assert not done.events("compaction")
    assert _learned(done, "one") == [], "a window smaller than a completed exchange was learned"
