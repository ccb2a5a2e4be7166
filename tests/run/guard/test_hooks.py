"""The hook runner against real shell commands: outcomes, warnings, and what a hook is given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from runner.run.guard.hooks import (
    MAX_EVENT_BYTES,
    MAX_FEEDBACK_CHARS,
    TAIL_CHARS,
    HookRunner,
    PreToolDecision,
    stop_feedback,
)
from runner.task import Hooks

pytestmark = pytest.mark.anyio


class Log:
    def __init__(self) -> None:
        self.hooks: list[dict[str, Any]] = []
        self.warnings: list[str] = []

    def hook(self, **fields: Any) -> None:
        self.hooks.append(fields)

    def warning(self, message: str) -> None:
        self.warnings.append(message)


def runner(tmp_path: Path, hooks: dict[str, Any], log: Log, said: list[str]) -> HookRunner:
    return HookRunner(
        Hooks.model_validate(hooks),
        workdir=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        session_id="sid-1",
        log=log,
        warn=said.append,
        turn=lambda: 3,
    )


async def test_any_exit_but_0_and_2_is_a_warning_and_the_call_goes_on(tmp_path: Path) -> None:
    log, said = Log(), []
    hooks = {"pre_tool": [{"run": "no-such-command-xyz"}, {"run": "exit 1"}]}
    decision = await runner(tmp_path, hooks, log, said).pre_tool("t", {"a": 1}, lambda _: None)
    assert decision.blocked is None and decision.arguments == {"a": 1}
    assert [h["exit_code"] for h in log.hooks] == [127, 1]
    assert [h["outcome"] for h in log.hooks] == ["warning", "warning"]
    assert "exited with 127" in said[0]


async def test_a_hook_that_ignores_a_large_event_on_stdin_still_finishes(tmp_path: Path) -> None:
    log, said = Log(), []
    hooks = {"post_tool": [{"run": "echo seen", "timeout": "20s"}]}
    with anyio.fail_after(30):
        added = await runner(tmp_path, hooks, log, said).post_tool("t", {}, "x" * 2_000_000, False)
    assert added == "seen" and log.hooks[0]["outcome"] == "ok"


async def test_the_event_on_stdin_carries_the_documented_fields(tmp_path: Path) -> None:
    log, said = Log(), []
    hooks = {"post_tool": [{"run": "cat > event.json; env > env.txt"}]}
    await runner(tmp_path, hooks, log, said).post_tool("read_file", {"path": "a"}, "R", True)
    event = json.loads((tmp_path / "event.json").read_text())
    assert event == {
        "event": "post_tool",
        "tool": "read_file",
        "arguments": {"path": "a"},
        "result": "R",
        "is_error": True,
        "session_id": "sid-1",
        "turn": 3,
        "workdir": str(tmp_path),
    }
    env = (tmp_path / "env.txt").read_text()
    assert "AGENT_RUNNER_TOOL=read_file" in env and "AGENT_RUNNER_SESSION_ID=sid-1" in env


async def test_pre_tool_hooks_chain_rewrites_in_order(tmp_path: Path) -> None:
    log, said = Log(), []
    hooks = {
        "pre_tool": [
            {"run": 'echo \'{"arguments": {"n": 2}}\''},
            {"run": "cat > seen.json"},
        ]
    }
    decision = await runner(tmp_path, hooks, log, said).pre_tool("t", {"n": 1}, lambda _: None)
    assert decision.arguments == {"n": 2}
    assert json.loads((tmp_path / "seen.json").read_text())["arguments"] == {"n": 2}


async def test_a_hook_matches_tools_by_glob(tmp_path: Path) -> None:
    log, said = Log(), []
    hooks = {"pre_tool": [{"match": ["write_*"], "run": "exit 2"}]}
    hook_runner = runner(tmp_path, hooks, log, said)
    assert (await hook_runner.pre_tool("read_file", {}, lambda _: None)).blocked is None
    blocked = await hook_runner.pre_tool("write_to_file", {}, lambda _: None)
    assert blocked.blocked is not None and "no reason given" in blocked.blocked


def masked_runner(tmp_path: Path, hooks: dict[str, Any], log: Log) -> HookRunner:
    return HookRunner(
        Hooks.model_validate(hooks),
        workdir=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        session_id="sid-1",
        log=log,
        warn=lambda _: None,
        turn=lambda: 1,
        mask=lambda text: text.replace("s3cr3t", "***"),
    )


def mark(name: str, tail: str = "") -> dict[str, Any]:
    """A hook that appends its name to order.txt, then runs `tail`."""
    return {"run": f"echo {name} >> order.txt{tail}"}


async def test_every_hook_of_each_event_runs_in_order(tmp_path: Path) -> None:
    events = ["pre_tool", "post_tool", "stop", "session_start", "session_end"]
    hooks = {event: [mark(f"{event}-{n}") for n in (1, 2, 3)] for event in events}
    log = Log()
    hook_runner = masked_runner(tmp_path, hooks, log)
    assert (await hook_runner.pre_tool("t", {}, lambda _: None)).blocked is None
    await hook_runner.post_tool("t", {}, "r", False)
    assert await hook_runner.stop("done") is None
    await hook_runner.session_start()
    await hook_runner.session_end("completed", "")
    expected = [f"{event}-{n}" for event in events for n in (1, 2, 3)]
    assert (tmp_path / "order.txt").read_text().split() == expected
    assert [h["event"] for h in log.hooks] == [e for e in events for _ in (1, 2, 3)]


async def test_a_later_stop_hook_refuses_after_an_earlier_one_accepts(tmp_path: Path) -> None:
    hooks = {"stop": [mark("a"), mark("b", "; echo 'tests fail' >&2; exit 2")]}
    refusal = await masked_runner(tmp_path, hooks, Log()).stop("done")
    assert refusal is not None and "tests fail" in refusal


async def test_the_output_of_every_hook_reaching_the_model_is_masked(tmp_path: Path) -> None:
    said = "printf 'key s3%s\\n' cr3t"  # the secret is in the output, not in the command
    hooks = {
        "pre_tool": [{"run": f"{said} >&2; exit 2"}],
        "post_tool": [{"run": said}, {"run": said}],
        "stop": [{"run": f"{said}; exit 2"}],
        "session_start": [{"run": said}, {"run": said}],
    }
    hook_runner = masked_runner(tmp_path, hooks, Log())
    blocked = (await hook_runner.pre_tool("t", {}, lambda _: None)).blocked
    outputs = [
        blocked or "",
        await hook_runner.post_tool("t", {}, "r", False),
        await hook_runner.stop("done") or "",
        await hook_runner.session_start(),
    ]
    for text in outputs:
        assert "s3cr3t" not in text and "key ***" in text
    assert outputs[1] == "key ***\nkey ***"
    assert outputs[3].count("key ***") == 2


WIDE_STDERR = f"printf y >&2; printf '%0{TAIL_CHARS}d' 1 >&2"


async def test_long_output_is_cut_to_its_end_for_the_log_and_the_model(tmp_path: Path) -> None:
    log = Log()
    hooks = {
        "post_tool": [
            {"run": f"printf x; printf '%0{TAIL_CHARS}d' 0; {WIDE_STDERR}"},
            {"run": f"printf x; printf '%0{MAX_FEEDBACK_CHARS}d' 0"},
            {"run": "cat > event.json"},
        ]
    }
    result = "r" * MAX_EVENT_BYTES + "CUT"
    added = await masked_runner(tmp_path, hooks, log).post_tool("t", {}, result, False)
    assert log.hooks[0]["stdout"] == "0" * TAIL_CHARS  # the log keeps the end
    assert log.hooks[0]["stderr"] == "0" * (TAIL_CHARS - 1) + "1"
    said = added.split("\n", 1)[1]
    assert said == f"[... 1 characters cut ...]\n{'0' * MAX_FEEDBACK_CHARS}"
    event = json.loads((tmp_path / "event.json").read_text(encoding="utf-8"))
    assert event["result"] == "r" * MAX_EVENT_BYTES


async def test_a_rewrite_the_schema_refuses_blocks_the_call_with_the_original_arguments(
    tmp_path: Path,
) -> None:
    hooks = {"pre_tool": [{"run": 'echo \'{"arguments": {"n": "two"}}\''}]}
    decision = await masked_runner(tmp_path, hooks, Log()).pre_tool(
        "t", {"n": 1}, lambda new: "n must be an integer"
    )
    assert decision.arguments == {"n": 1} and decision.rewritten_by is None
    assert decision.blocked is not None
    assert "do not fit the tool's schema: n must be an integer" in decision.blocked


async def test_a_rewrite_names_the_hook_that_made_it(tmp_path: Path) -> None:
    rewrite = 'echo \'{"arguments": {"n": 2}}\''
    hooks = {"pre_tool": [{"run": rewrite}, {"run": "true"}]}
    decision = await masked_runner(tmp_path, hooks, Log()).pre_tool("t", {"n": 1}, lambda _: None)
    assert decision.arguments == {"n": 2} and decision.rewritten_by == rewrite


async def test_post_tool_hooks_match_the_tool_name_not_the_result(tmp_path: Path) -> None:
    hooks = {"post_tool": [{"match": ["read_*"], "run": "echo seen"}]}
    hook_runner = masked_runner(tmp_path, hooks, Log())
    assert await hook_runner.post_tool("read_file", {}, "write", False) == "seen"
    assert await hook_runner.post_tool("write_to_file", {}, "read_me", False) == ""


async def test_only_what_a_post_tool_hook_prints_on_success_is_added(tmp_path: Path) -> None:
    hooks = {"post_tool": [{"run": "echo oops; exit 1"}, {"run": "true"}, {"run": "echo kept"}]}
    added = await masked_runner(tmp_path, hooks, Log()).post_tool("t", {}, "r", False)
    assert added == "kept"


async def test_session_start_adds_only_output_printed_on_success(tmp_path: Path) -> None:
    hooks = {"session_start": [{"run": "echo oops; exit 1"}, {"run": "true"}, {"run": "echo hi"}]}
    added = await masked_runner(tmp_path, hooks, Log()).session_start()
    assert added == "\n\n[session_start hook output]\nhi"


async def test_a_session_end_hook_gets_the_outcome_and_its_exit_status_changes_nothing(
    tmp_path: Path,
) -> None:
    log, said = Log(), []
    hooks = {"session_end": [{"run": "cat > end.json; exit 2"}, {"run": "exit 1"}]}
    await runner(tmp_path, hooks, log, said).session_end("failed", "tests fail")
    event = json.loads((tmp_path / "end.json").read_text(encoding="utf-8"))
    assert (event["status"], event["reason"]) == ("failed", "tests fail")
    assert [h["outcome"] for h in log.hooks] == ["ok", "ok"] and said == []
    assert [(h["event"], h["tool"], h["command"]) for h in log.hooks] == [
        ("session_end", None, "cat > end.json; exit 2"),
        ("session_end", None, "exit 1"),
    ]


async def test_a_session_end_hook_that_cannot_start_or_times_out_is_a_warning(
    tmp_path: Path,
) -> None:
    log, said = Log(), []
    hooks = {"session_end": [{"run": "sleep 30", "timeout": "0.2s"}]}
    with anyio.fail_after(20):
        await runner(tmp_path, hooks, log, said).session_end("passed", "")
    missing = runner(tmp_path / "gone", {"session_end": [{"run": "true"}]}, log, said)
    await missing.session_end("passed", "")
    assert [h["outcome"] for h in log.hooks] == ["warning", "warning"]
    assert log.hooks[1]["exit_code"] is None and log.hooks[1]["timed_out"] is False
    assert log.hooks[1]["duration_s"] == 0.0 and log.hooks[1]["stdout"] == ""
    assert log.hooks[1]["turn"] == 3
    assert "the hook could not start" in log.hooks[1]["stderr"]
    assert "timed out" in said[0] and "the hook could not start" in said[1]


async def test_the_event_keeps_non_ascii_text_and_writes_other_values_as_text(
    tmp_path: Path,
) -> None:
    hooks = {"post_tool": [{"run": "cat > event.json"}]}
    await runner(tmp_path, hooks, Log(), []).post_tool("t", {"p": Path("x"), "s": "é"}, "r", False)
    raw = (tmp_path / "event.json").read_text(encoding="utf-8")
    assert '"s": "é"' in raw and json.loads(raw)["arguments"] == {"p": "x", "s": "é"}


@pytest.mark.parametrize("printed", ["{not json", '{"other": 1}', '{"arguments": 5}', "[1]"])
async def test_output_that_is_not_an_arguments_object_rewrites_nothing(
    tmp_path: Path, printed: str
) -> None:
    hooks = {"pre_tool": [{"run": f"echo '{printed}'"}]}
    decision = await masked_runner(tmp_path, hooks, Log()).pre_tool("t", {"n": 1}, lambda _: None)
    assert decision == PreToolDecision({"n": 1})


async def test_a_failed_hooks_warning_says_how_it_failed_with_the_end_of_its_stderr(
    tmp_path: Path,
) -> None:
    said: list[str] = []
    hooks = {
        "session_start": [
            {"run": "printf x >&2; printf '%0300d' 0 >&2; exit 1"},
            {"run": "kill -9 $$"},
        ]
    }
    await runner(tmp_path, hooks, Log(), said).session_start()
    assert said[0].endswith(
        f"session_start hook `{hooks['session_start'][0]['run']}` "
        f"exited with 1: {'0' * 300}; going on"
    )
    assert "was killed by signal 9" in said[1]


def test_a_stop_hooks_refusal_goes_back_with_the_attempts_left() -> None:
    text = stop_feedback("`make test`: 2 failed", 2)
    assert "refused your attempt_completion" in text and "`make test`: 2 failed" in text
    assert "(2 attempt(s) left)" in text


async def test_output_of_exactly_the_bound_reaches_the_model_whole(tmp_path: Path) -> None:
    hooks = {"post_tool": [{"run": f"printf '%0{MAX_FEEDBACK_CHARS}d' 0"}]}
    added = await masked_runner(tmp_path, hooks, Log()).post_tool("t", {}, "r", False)
    assert added == "0" * MAX_FEEDBACK_CHARS
