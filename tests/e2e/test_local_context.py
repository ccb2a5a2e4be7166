"""A long task against a llama.cpp-style server with an 8k context compacts instead of failing.

The server (`tests.fakes.llama_server.LlamaServer`) says its context in `/props` and refuses a
prompt over it with llama.cpp's own error. The model name is one the model table does not know,
so only the server (or config) can tell the runner the window.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Done, Scenario, call, kill, start
from tests.fakes.llama_server import LlamaServer
from tests.fakes.model_server import Step

N_CTX = 8192
FILES = 8
# About 1,200 tokens each: the eight together are more than the window holds.
CONTENT = {
    f"f{k}.txt": f"FILE-{k}\n" + f"line {k} of a long file to read\n" * 160
    for k in range(1, FILES + 1)
}
SUMMARY_MARK = "You compress the history"


def read_everything(body: Any) -> Step:
    """Read f1..f8 in order, then complete; summarise when asked. Progress is read from the
    request itself (the calls made and summaries written), so compaction cannot confuse it."""
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    if messages and str(messages[0].get("content", "")).startswith(SUMMARY_MARK):
        read = ", ".join(f"f{k}.txt" for k in sorted(_read(messages[1:])))
        return Step(text=f"Summary: the files read so far are {read}.")
    done = _read([m for m in messages if m.get("role") == "assistant"])
    if len(done) == FILES:
        return Step(text=call("attempt_completion", result="read all eight"))
    return Step(text=call("read_file", path=f"f{len(done) + 1}.txt"))


def _read(messages: list[dict[str, Any]]) -> set[int]:
    return {int(k) for m in messages for k in re.findall(r"f(\d)\.txt", str(m.get("content")))}


def run_local(
    root: Path,
    *,
    chars_per_token: float = 4.0,
    error_in_stream: bool = False,
    config: str | None = None,
) -> tuple[Done, LlamaServer]:
    server = LlamaServer(
        script=read_everything,
        n_ctx=N_CTX,
        chars_per_token=chars_per_token,
        error_in_stream=error_in_stream,
    ).start()
    args = ["run", "t.yaml", "--model", "openai:local-model", "--out", "OUT"]
    scenario = Scenario(
        task={"prompt": "Read every file, one at a time, in order.", "limits": {"max_turns": 30}},
        files=CONTENT,
        args=[*args, "--config", "config.yaml"] if config else args,
        extra_files={"config.yaml": config} if config else {},
    )
    started = start(scenario, root, server=server)
    try:
        return started.wait(), server
    finally:
        kill(started.process)
        server.stop()


def test_the_window_from_props_makes_a_long_task_compact_before_the_server_refuses(
    tmp_path: Path,
) -> None:
    done, server = run_local(tmp_path)
    assert done.code == 0, done.explain()
    assert done.task()["result"] == "read all eight"
    assert done.events("compaction"), "the task never compacted"
    seen = server.seen
    assert not any(s.rejected for s in seen), seen
    # max_tokens was clamped so that prompt and reply fit the 8k window, every time.
    assert all(s.max_tokens is not None and s.prompt_tokens + s.max_tokens <= N_CTX for s in seen)


@pytest.mark.parametrize("error_in_stream", [False, True], ids=["status_400", "in_stream"])
def test_a_refused_prompt_is_compacted_and_sent_once_more_not_retried_as_is(
    tmp_path: Path, error_in_stream: bool
) -> None:
    # The server counts a token per 2.5 characters, the runner estimates four: the server
    # refuses a prompt the runner thought would fit.
    done, server = run_local(tmp_path, chars_per_token=2.5, error_in_stream=error_in_stream)
    assert done.code == 0, done.explain()
    seen = server.seen
    refused = [i for i, s in enumerate(seen) if s.rejected]
    assert refused, "the server never refused a prompt: the test does not test anything"
    for index in refused:
        # The next request is the summary of a forced compaction or a smaller prompt: never the
        # same prompt again (a broken stream would be retried as is, six times).
        assert seen[index + 1].prompt_tokens < seen[index].prompt_tokens
    assert done.events("retry") == []
    assert any(e["kind"] == "summary" for e in done.events("compaction"))


def test_a_configured_window_wins_over_the_servers(tmp_path: Path) -> None:
    config = "models:\n  local-model: {context_window: 6000}\n"
    done, server = run_local(tmp_path, config=config)
    assert done.code == 0, done.explain()
    seen = server.seen
    assert all(s.max_tokens is not None and s.prompt_tokens + s.max_tokens <= 6000 for s in seen)
    assert not any(s.rejected for s in seen)
