"""DESIGN section 23 through the CLI: a llama-cpp-python-style server that never says its window.

The fake (`LlamaServer(flavour="llama-cpp-python")`) has no `/props`, lists no window in
`/v1/models`, generates until `max_tokens` or its 8k window is full, and answers a prompt over the
window with a stream that just ends. The model name is one the table does not know. On main a
runaway reply filled the window, the next request overflowed, and the cut stream was retried six
times as it was until the task ended as an infrastructure error (exit 4).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.e2e.conftest import Done, Scenario, call, complete, kill, start
from tests.fakes.llama_server import LlamaServer
from tests.fakes.model_server import Step, fault, reply

N_CTX = 8192
# About 2,000 tokens each (at the fake's four characters a token).
FILES = {
    f"big{k}.txt": f"BIG-{k}\n" + f"row {k} of a file the agent reads\n" * 230 for k in range(1, 7)
}
SUMMARY_MARK = "You compress the history"
RAMBLE = "RAMBLE: let me think about this problem at length. " * 3000


def _texts(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content", "")) for m in messages)


def _read(text: str) -> set[int]:
    return {int(k) for k in re.findall(r"big(\d)\.txt", text)}


def story(reads: int, *, ramble_after: int | None) -> Any:
    """Read big1..big<reads> in order, rambling once (a reply with no tool call that runs on)
    after `ramble_after` reads; then complete. The files read are read from the request itself,
    and a summary keeps them."""
    rambled = False

    def answer(body: Any) -> Step:
        nonlocal rambled
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        if messages and str(messages[0].get("content", "")).startswith(SUMMARY_MARK):
            files = ", ".join(f"big{k}.txt" for k in sorted(_read(_texts(messages[1:]))))
            return reply(f"Summary: the files read so far are {files}.")
        done = _read(_texts([m for m in messages if m.get("role") == "assistant"]))
        if ramble_after is not None and len(done) >= ramble_after and not rambled:
            rambled = True
            return reply(RAMBLE)
        if len(done) >= reads:
            return complete("read them all")
        return reply(call("read_file", path=f"big{len(done) + 1}.txt"))

    return answer


def run_story(root: Path, reads: int, ramble_after: int | None) -> tuple[Done, LlamaServer]:
    server = LlamaServer(
        script=story(reads, ramble_after=ramble_after), n_ctx=N_CTX, flavour="llama-cpp-python"
    ).start()
    scenario = Scenario(
        task={
            "prompt": "Read the big files, one at a time, in order.",
            "limits": {"max_turns": 30},
        },
        files=FILES,
        args=["run", "t.yaml", "--model", "openai:local-model", "--out", "OUT"],
    )
    started = start(scenario, root, server=server)
    try:
        return started.wait(), server
    finally:
        kill(started.process)
        server.stop()


def learned_windows(done: Done) -> list[str]:
    return [e["message"] for e in done.events("warning") if "context window:" in e["message"]]


def test_a_runaway_reply_teaches_the_window_and_the_task_compacts_instead_of_overflowing(
    tmp_path: Path,
) -> None:
    # After two reads the prompt (about 5,700 tokens) leaves the window less room than the 4,096
    # asked for: the window stops the runaway, not the output limit.
    done, server = run_story(tmp_path, reads=4, ramble_after=2)
    assert done.code == 0, done.explain()
    assert done.task()["result"] == "read them all"
    seen = server.seen
    # The runaway stopped at `length` short of the 4,096 asked for (unknown model: the moderate
    # default, not 8,192): the window, not the limit, stopped it.
    assert all(s.max_tokens is not None and s.max_tokens <= 4096 for s in seen)
    assert learned_windows(done) == [learned_windows(done)[0]]
    assert f"context window: {N_CTX} tokens" in learned_windows(done)[0]
    # Nothing overflowed: from then on every request was clamped and compacted to the window.
    assert not any(s.rejected for s in seen), seen
    assert done.events("compaction"), "the task never compacted"
    assert done.events("retry") == []
    # The rambling reply is whole in the log, but only its head and tail were in the context.
    (rambled,) = [m for m in done.events("message") if m["content"].startswith("RAMBLE")]
    assert len(rambled["context"]) < 5000 < len(rambled["content"])
    assert (
        rambled["context"].startswith("RAMBLE")
        and "left out of the context" in (rambled["context"])
    )


def test_a_stream_that_just_ends_on_the_largest_request_is_compacted_and_sent_once_more(
    tmp_path: Path,
) -> None:
    done, server = run_story(tmp_path, reads=6, ramble_after=None)
    assert done.code == 0, done.explain()
    assert done.task()["result"] == "read them all"
    seen = server.seen
    refused = [i for i, s in enumerate(seen) if s.rejected]
    assert refused, "the server never overflowed: the test does not test anything"
    for index in refused:
        # Never the same prompt again: a compaction (its summary call or a smaller prompt).
        assert seen[index + 1].prompt_tokens < seen[index].prompt_tokens
    assert done.events("retry") == [], "a broken stream was retried as it was"
    assert learned_windows(done), "the overflow taught nothing"
    assert any(e["kind"] == "summary" for e in done.events("compaction"))


def test_a_server_that_dies_mid_stream_is_still_retried_and_reported_as_a_provider_failure(
    tmp_path: Path,
) -> None:
    # The second request is the largest yet and its stream is dropped: taken as an overflow once
    # (compact, send again); the server is dead from then on (500s), so the retries run out and
    # the task ends as an infrastructure error, as before.
    scenario = Scenario(
        task={"prompt": "Read big1.txt."},
        files={"big1.txt": FILES["big1.txt"]},
        steps=[reply(call("read_file", path="big1.txt")), fault("drop")],
        default=fault("server_error"),
    )
    done = start(scenario, tmp_path).wait()
    assert done.code == 4, done.explain()
    assert len(done.events("retry")) >= 2, done.explain()
    assert "failed after" in done.stdout + done.stderr, done.explain()
