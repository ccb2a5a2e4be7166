"""One sub-agent's session in-process (runner.run.session.child.run_child, DESIGN section 13).

The parent's executor (`AgentTools`) starts the child as the runner does; the model is a scripted
one that answers each session from its own script (chosen by the session's first message), the
tools a recording hub. What the child writes is read back from its session log on disk. The CLI
story (real servers, a real model server, signals) is tests/e2e/test_subagent*.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from runner.errors import ProviderError
from runner.llm import Message, NativeCall, NativeTools, Reply, RetryEvent, Usage
from runner.redact import Redactor
from runner.run.agents import AgentTools, SessionFrame
from runner.run.session import child as child_module
from runner.run.session.child import run_child
from runner.run.session.header import session_header
from runner.run.session.session import RunContext
from runner.run.telemetry import Progress
from runner.run.turn import Budget
from runner.sessionlog import EventStream, SessionLogWriter, SessionRecord, read_session
from runner.settings import ModelInfo, Settings
from runner.task import Task, load_tasks
from runner.toolcall import ToolResult, ToolSpec

pytestmark = pytest.mark.anyio

SECRET = "sk-child-secret-0123456789"
PATH = {"type": "object", "properties": {"path": {"type": "string"}}}
READ = ToolSpec("read_file", "Read a file.", PATH, server="ws")
WRITE = ToolSpec("write_to_file", "Write a file.", PATH, server="ws")

TASK = """\
name: docs
prompt: Document the app.
secrets: [CHILD_SECRET]
limits: {max_turns: 9, max_depth: 1}
agents:
  reader:
    description: Reads code.
    prompt: READER-ROLE you only read.
    tools: {allow: [read_file]}
    limits: {max_turns: 3}
  writer:
    description: Writes docs.
    prompt: WRITER-ROLE you write.
    limits: {max_turns: 4}
  sleeper:
    description: Runs out of time.
    prompt: SLEEPER-ROLE
    limits: {timeout: 0.5s}
"""


def call(name: str, **arguments: str) -> str:
    inner = "".join(f"<{key}>{value}</{key}>\n" for key, value in arguments.items())
    return f"<{name}>\n{inner}</{name}>"


def done(result: str, status: str = "success") -> str:
    return call("attempt_completion", result=result, status=status)


Step = str | tuple[NativeCall, ...] | BaseException | Callable[[], Any]
"""A reply (text, or native calls), an exception to raise, or a coroutine function to await
(it may never return)."""


class RoutedLLM:
    """Answers each session from the script whose key its first message holds."""

    provider = "openai"
    model = "fake-model"

    def __init__(self, routes: dict[str, list[Step]], info: ModelInfo | None = None) -> None:
        self.routes = routes
        self.info = info
        self.systems: dict[str, list[str]] = {key: [] for key in routes}
        self.seen: dict[str, list[list[str]]] = {key: [] for key in routes}
        self.offered: dict[str, list[NativeTools | None]] = {key: [] for key in routes}
        self.closed = 0

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[RetryEvent], None] | None = None,
        tools: NativeTools | None = None,
    ) -> Reply:
        key = next(k for k in self.routes if k in messages[0].content)
        self.systems[key].append(system)
        self.seen[key].append([m.content for m in messages])
        self.offered[key].append(tools)
        step = self.routes[key].pop(0)
        if isinstance(step, tuple):
            return Reply("", Usage(100, 20), "tool_use", 0.1, 1, self.model, step)
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            await step()
            step = done("after the wait")
        return Reply(step, Usage(100, 20), "end_turn", 0.1, 1, self.model)

    async def aclose(self) -> None:
        self.closed += 1


class Hub:
    """The task's tools; every call is recorded and answered."""

    def __init__(self, tools: Sequence[ToolSpec] = (READ, WRITE)) -> None:
        self._tools = list(tools)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @property
    def tools(self) -> list[ToolSpec]:
        return self._tools

    @property
    def allowed_tools(self) -> list[ToolSpec]:
        return self._tools

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append((name, arguments))
        return ToolResult(f"{name} ran")


@dataclass
class Parent:
    """A task session about to call `sub_agent`: its executor, frame, log and run."""

    tools: AgentTools
    llm: RoutedLLM
    hub: Hub
    ctx: RunContext
    out: Path
    children: list[str] = field(default_factory=list)

    @property
    def frame(self) -> SessionFrame:
        return self.tools.frame

    async def ask(self, agent: str, task: str) -> ToolResult:
        return await self.tools.call("sub_agent", {"agent": agent, "task": task})

    def child_log(self, result: ToolResult) -> SessionRecord:
        session = result.log_fields["child_session_id"]
        return read_session(self.out / "sessions" / f"{session}.jsonl")


def load(tmp_path: Path, text: str = TASK) -> Task:
    file = tmp_path / "task.yaml"
    file.write_text(text, encoding="utf-8")
    (task,) = load_tasks([file], env={"CHILD_SECRET": SECRET})
    return task


def parent(
    tmp_path: Path,
    routes: dict[str, list[Step]],
    *,
    text: str = TASK,
    budget: Budget | None = None,
    info: ModelInfo | None = None,
    hub: Hub | None = None,
    native: bool = False,
) -> Parent:
    task = load(tmp_path, text)
    llm = RoutedLLM(routes, info)
    llm.native_tools = native  # type: ignore[attr-defined]
    out = tmp_path / "out"
    redactor = Redactor(task.secrets)
    ctx = RunContext(Settings(), "run-1", out, Redactor(), {})
    header = session_header(task, llm, ctx.run_id, None, None, "", [], ctx.settings)
    log = SessionLogWriter.create(out, header, redactor)
    children: list[str] = []
    frame = SessionFrame(task, llm, log, budget or Budget(9), redactor, children=children)
    hub = hub or Hub()
    return Parent(AgentTools(hub, frame, ctx, run_child), llm, hub, ctx, out, children)


async def test_a_passed_child_returns_its_result_and_logs_a_session_linked_to_its_call(
    tmp_path: Path,
) -> None:
    p = parent(tmp_path, {"R-TASK": [call("read_file", path="app.py"), done("two endpoints")]})
    p.frame.budget.turns = 3
    result = await p.ask("reader", "R-TASK: list the endpoints")
    assert (result.text, result.is_error) == ("two endpoints", False)
    record = p.child_log(result)
    assert p.children == [record.session_id]
    assert "-docs-reader-" in record.session_id
    head = record.header
    assert head["run_id"] == "run-1" and head["task"]["agent"] == "reader"
    assert head["task"]["name"] == "docs" and head["task_file"] == str(tmp_path / "task.yaml")
    assert head["model"] == "openai:fake-model" and head.get("tool_mode", "xml") == "xml"
    assert head["parent_session_id"] == p.frame.log.session_id
    assert head["parent_call"] == {
        "turn": 3,
        "index": 0,
        "agent": "reader",
        "task": "R-TASK: list the endpoints",
    }
    assert [tool["name"] for tool in head["tools"]] == ["read_file"]  # the agent's allow list
    (system,) = set(p.llm.systems["R-TASK"])
    assert head["system_prompt_sha256"] == hashlib.sha256(system.encode()).hexdigest()
    assert "READER-ROLE you only read." in system
    assert "<read_file>" in system and "write_to_file" not in system  # its catalogue
    first = record.events[0]
    assert (first["type"], first["role"], first["turn"]) == ("message", "user", 0)
    assert first["content"] == "R-TASK: list the endpoints"
    assert p.hub.calls == [("read_file", {"path": "app.py"})]
    end = record.end
    assert end is not None
    assert (end["status"], end["reason"], end["result"]) == ("passed", "completed", "two endpoints")
    assert "kind" not in end or end["kind"] is None
    assert end["totals"]["turns"] == 2 and end["totals"]["input_tokens"] == 200


async def test_the_childs_spend_is_the_parents_too_and_each_call_of_a_turn_has_its_index(
    tmp_path: Path,
) -> None:
    p = parent(tmp_path, {"R-A": [done("a")], "R-B": [done("b")]})
    first = await p.ask("reader", "R-A")
    second = await p.ask("reader", "R-B")
    indexes = [p.child_log(r).header["parent_call"]["index"] for r in (first, second)]
    assert indexes == [0, 1]
    assert p.frame.budget.usage == Usage(200, 40) and p.frame.budget.turns == 0
    assert len(p.children) == 2


async def test_a_child_that_reports_failure_is_an_error_result_naming_its_session(
    tmp_path: Path,
) -> None:
    p = parent(tmp_path, {"R-TASK": [done("app.py is missing", status="failure")]})
    result = await p.ask("reader", "R-TASK")
    session = result.log_fields["child_session_id"]
    assert result.is_error
    assert (
        result.text == f"Sub-agent 'reader' reported failure (session {session}): app.py is missing"
    )
    end = p.child_log(result).end
    assert end is not None
    assert (end["status"], end["kind"], end["reason"]) == (
        "failed",
        "agent",
        "the sub-agent reported failure",
    )
    assert end["result"] == "app.py is missing"


async def test_a_child_at_its_own_turn_limit_stops_and_the_parents_turns_are_its_own(
    tmp_path: Path,
) -> None:
    reads = [call("read_file", path=f"{n}.py") for n in range(5)]
    p = parent(tmp_path, {"R-TASK": list(reads)})
    result = await p.ask("reader", "R-TASK")
    session = result.log_fields["child_session_id"]
    assert result.is_error and result.text.startswith(
        f"Sub-agent 'reader' stopped at its turns limit before completing (session {session}): "
    )
    assert len(p.hub.calls) == 3  # agents.reader.limits.max_turns, not the task's 9
    end = p.child_log(result).end
    assert end is not None and (end["status"], end["kind"]) == ("budget_exceeded", "turns")
    assert end["result"] is None


async def test_a_child_that_never_calls_a_tool_failed_and_says_why(tmp_path: Path) -> None:
    p = parent(tmp_path, {"R-TASK": ["I think so."] * 5})
    result = await p.ask("reader", "R-TASK")
    session = result.log_fields["child_session_id"]
    assert result.is_error and result.text.startswith(
        f"Sub-agent 'reader' failed (session {session}): "
    )
    end = p.child_log(result).end
    assert end is not None and (end["status"], end["kind"]) == ("failed", "no_tool_call")
    assert end["reason"] in result.text


async def test_a_provider_error_is_the_childs_error_and_the_parent_goes_on(tmp_path: Path) -> None:
    p = parent(tmp_path, {"R-TASK": [ProviderError("HTTP 500 from the server")]})
    result = await p.ask("reader", "R-TASK")
    session = result.log_fields["child_session_id"]
    assert result.is_error
    assert result.text == (
        f"Sub-agent 'reader' stopped with an error (provider) (session {session}): "
        "HTTP 500 from the server"
    )
    end = p.child_log(result).end
    assert end is not None and (end["status"], end["kind"]) == ("error", "provider")


async def test_a_bug_in_the_child_is_an_internal_error_with_its_traceback_logged(
    tmp_path: Path,
) -> None:
    p = parent(tmp_path, {"R-TASK": [RuntimeError("boom")]})
    result = await p.ask("reader", "R-TASK")
    assert result.is_error and "stopped with an error (internal)" in result.text
    assert result.text.endswith("internal error: RuntimeError('boom')")
    record = p.child_log(result)
    warnings = [e["message"] for e in record.events if e["type"] == "warning"]
    assert any("Traceback" in w and "RuntimeError: boom" in w for w in warnings), warnings
    assert record.end is not None and record.end["kind"] == "internal"


async def test_a_child_whose_log_cannot_be_written_is_an_artifacts_error_without_a_session(
    tmp_path: Path,
) -> None:
    p = parent(tmp_path, {"R-TASK": [done("never")]})
    prompts = p.out / "prompts"  # where a new session's prompt is saved: now a file
    shutil.rmtree(prompts)
    prompts.write_text("", encoding="utf-8")
    result = await p.ask("reader", "R-TASK")
    assert result.text.startswith("Sub-agent 'reader' stopped with an error (artifacts): ")
    assert "(session" not in result.text
    assert result.log_fields == {} and p.children == []
    assert p.llm.seen["R-TASK"] == []  # no model call for a session that has no log


async def test_a_model_the_runner_cannot_make_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "AGENT_RUNNER_ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    text = TASK.replace("prompt: WRITER-ROLE", "model: anthropic:claude-x\n    prompt: WRITER-ROLE")
    p = parent(tmp_path, {"W-TASK": [done("never")]}, text=text)
    result = await p.ask("writer", "W-TASK")
    assert result.is_error and result.log_fields == {}
    assert result.text == (
        "Sub-agent 'writer' stopped with an error (config): the anthropic provider needs an API "
        "key: set ANTHROPIC_API_KEY (or AGENT_RUNNER_ANTHROPIC_API_KEY)"
    )


async def test_a_child_stops_at_its_own_time_limit(tmp_path: Path) -> None:
    p = parent(tmp_path, {"S-TASK": [lambda: asyncio.sleep(60)]})
    result = await p.ask("sleeper", "S-TASK")
    session = result.log_fields["child_session_id"]
    assert result.text == (
        f"Sub-agent 'sleeper' stopped at its time limit before completing (session {session}): "
        "time limit reached (0.5s)"
    )
    end = p.child_log(result).end
    assert end is not None and (end["status"], end["kind"]) == ("budget_exceeded", "time")


async def test_a_timeout_inside_the_child_that_is_not_its_limit_is_not_called_one(
    tmp_path: Path,
) -> None:
    """A TimeoutError from below (a model's client) is the child's error, not its time limit."""
    p = parent(tmp_path, {"W-TASK": [TimeoutError("read timed out")]})
    result = await p.ask("writer", "W-TASK")
    assert "time limit" not in result.text and "stopped with an error (internal)" in result.text
    assert result.text.endswith("internal error: TimeoutError('read timed out')")


@pytest.mark.parametrize(
    ("interrupted", "reason"),
    [
        (False, "stopped: its parent session stopped (its time limit, or a signal)"),
        (True, "interrupted by a signal"),
    ],
)
async def test_a_cancelled_child_ends_its_log_as_interrupted_and_the_cancel_goes_through(
    tmp_path: Path, interrupted: bool, reason: str
) -> None:
    started = asyncio.Event()

    async def hang() -> None:
        started.set()
        await asyncio.sleep(60)

    p = parent(tmp_path, {"R-TASK": [hang]})
    asking = asyncio.create_task(p.ask("reader", "R-TASK"))
    waiting = asyncio.create_task(started.wait())
    await asyncio.wait([asking, waiting], return_when=asyncio.FIRST_COMPLETED)
    assert started.is_set(), asking.result()  # a child that ended before its model call
    p.ctx.interrupted = interrupted
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
    (session,) = p.children
    end = read_session(p.out / "sessions" / f"{session}.jsonl").end
    assert end is not None
    assert (end["status"], end["kind"], end["reason"]) == ("interrupted", "signal", reason)


async def test_the_childs_result_reaches_the_parent_masked_and_so_does_its_check_command(
    tmp_path: Path,
) -> None:
    """The check command is shown to the model with secrets masked, as the parent's is (what
    the task file's prompts say is the user's to say, and reaches the model as written)."""
    text = TASK + f"success: {{check: 'test -n {SECRET}'}}\n"
    p = parent(tmp_path, {"R-TASK": [done(f"the key is {SECRET}")]}, text=text)
    result = await p.ask("reader", "R-TASK")
    assert result.text == "the key is ***"
    (system,) = p.llm.systems["R-TASK"]
    assert SECRET not in system and "test -n ***" in system


async def test_a_tool_outside_the_agents_allow_list_is_refused_not_unknown(
    tmp_path: Path,
) -> None:
    p = parent(
        tmp_path,
        {
            "R-TASK": [
                call("write_to_file", path="x"),
                call("sub_agent", agent="reader", task="nested"),
                done("ok"),
            ]
        },
    )
    await p.ask("reader", "R-TASK")
    assert p.hub.calls == []
    replies = p.llm.seen["R-TASK"]
    assert "not allowed for sub-agent 'reader'" in replies[1][-1]
    assert "cannot start sub-agents here (limits.max_depth is 1)" in replies[2][-1]


async def test_a_childs_call_holds_its_output_at_the_parents_reserve_against_every_budget(
    tmp_path: Path,
) -> None:
    """The parent holds each call's output at its model's limit; a child's calls must too, or
    children at once overshoot the parent's cost limit."""
    info = ModelInfo(context_window=100_000, input_usd_per_mtok=1.0, output_usd_per_mtok=1.0)
    budget = Budget(9, reserve_output_tokens=1_000_000)  # $1 held for a call's output
    held: list[float] = []

    async def look() -> None:
        held.append(p.frame.budget.reserved_usd)

    p = parent(tmp_path, {"R-TASK": [look]}, budget=budget, info=info)
    result = await p.ask("reader", "R-TASK")
    assert result.text == "after the wait"
    assert len(held) == 1 and 1.0 < held[0] < 1.01
    assert p.frame.budget.reserved_usd == 0


class OwnModel(RoutedLLM):
    model = "m2"

    def __init__(self, routes: dict[str, list[Step]], *, shareable: bool) -> None:
        super().__init__(routes)
        if shareable:  # a provider that says nothing is not shared
            self.shareable = True


@pytest.mark.parametrize("shareable", [False, True])
async def test_an_agent_on_another_model_gets_it_made_once_and_closed_unless_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shareable: bool
) -> None:
    made: list[tuple[str, OwnModel]] = []

    def create_llm(spec: str, settings: Settings) -> OwnModel:
        model = OwnModel({"W-": [done("w1"), done("w2")]}, shareable=shareable)
        made.append((spec, model))
        return model

    monkeypatch.setattr(child_module, "create_llm", create_llm)
    text = TASK.replace("prompt: WRITER-ROLE", "model: openai:m2\n    prompt: WRITER-ROLE")
    p = parent(tmp_path, {"R-": [done("r")]}, text=text)
    first = await p.ask("writer", "W-1")
    second = await p.ask("writer", "W-2")
    assert (first.text, second.text) == (("w1", "w2") if shareable else ("w1", "w1"))
    assert p.child_log(first).header["model"] == "openai:m2"
    assert [spec for spec, _ in made] == (["openai:m2"] if shareable else ["openai:m2"] * 2)
    assert [model.closed for _, model in made] == ([0] if shareable else [1, 1])
    assert p.ctx.models == ({"openai:m2": made[0][1]} if shareable else {})
    await p.ask("reader", "R-1")  # on the parent's model: neither made nor closed
    assert p.llm.closed == 0 and len(made) == (1 if shareable else 2)


async def test_an_agent_naming_the_parents_own_model_shares_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(child_module, "create_llm", lambda spec, settings: pytest.fail(spec))
    text = TASK.replace("prompt: WRITER-ROLE", "model: openai:fake-model\n    prompt: WRITER-ROLE")
    p = parent(tmp_path, {"W-TASK": [done("shared")]}, text=text)
    assert (await p.ask("writer", "W-TASK")).text == "shared"
    assert p.llm.closed == 0


NATIVE = TASK.replace("limits: {max_turns: 9", "tool_mode: native\nlimits: {max_turns: 9")


async def test_a_native_session_starts_native_children_offered_only_their_tools(
    tmp_path: Path,
) -> None:
    read = (NativeCall("c1", "read_file", '{"path": "app.py"}'),)
    finish = (NativeCall("c2", "attempt_completion", '{"result": "read", "status": "success"}'),)
    p = parent(tmp_path, {"R-TASK": [read, finish]}, text=NATIVE, native=True)
    result = await p.ask("reader", "R-TASK")
    assert result.text == "read" and p.hub.calls == [("read_file", {"path": "app.py"})]
    assert p.child_log(result).header["tool_mode"] == "native"
    offered = [[spec.name for spec in t.specs] if t else None for t in p.llm.offered["R-TASK"]]
    assert offered == [["read_file", "attempt_completion"]] * 2
    system = p.llm.systems["R-TASK"][0]
    assert "<read_file>" not in system and "# TOOLS" not in system  # no XML catalogue


async def test_a_child_on_a_model_without_native_calls_uses_xml_in_a_native_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = OwnModel({"W-": [call("write_to_file", path="notes.md"), done("wrote")]}, shareable=True)
    monkeypatch.setattr(child_module, "create_llm", lambda spec, settings: own)
    text = NATIVE.replace("prompt: WRITER-ROLE", "model: openai:m2\n    prompt: WRITER-ROLE")
    p = parent(tmp_path, {}, text=text, native=True)
    result = await p.ask("writer", "W-TASK")
    assert result.text == "wrote" and p.hub.calls == [("write_to_file", {"path": "notes.md"})]
    assert p.child_log(result).header.get("tool_mode", "xml") == "xml"
    assert own.offered["W-"] == [None, None]
    assert "<write_to_file>" in own.systems["W-"][0]


async def test_a_child_stops_at_its_own_token_limit(tmp_path: Path) -> None:
    text = TASK.replace("limits: {max_turns: 3}", "limits: {max_turns: 3, max_tokens: 200}")
    reads = [call("read_file", path=f"{n}.py") for n in range(3)]
    p = parent(tmp_path, {"R-TASK": reads}, text=text)
    result = await p.ask("reader", "R-TASK")
    assert "stopped at its tokens limit before completing" in result.text
    # 120 tokens a call: the second request's prompt would pass the 200, so it is not sent.
    assert len(p.hub.calls) == 1
    end = p.child_log(result).end
    assert end is not None and (end["status"], end["kind"]) == ("budget_exceeded", "tokens")


async def test_with_max_depth_two_a_child_starts_its_own_child_and_no_deeper(
    tmp_path: Path,
) -> None:
    text = TASK.replace("max_depth: 1", "max_depth: 2")
    routes: dict[str, list[Step]] = {
        "W-TOP": [call("sub_agent", agent="reader", task="R-NESTED"), done("top")],
        "R-NESTED": [call("sub_agent", agent="writer", task="W-DEEPER"), done("nested")],
    }
    p = parent(tmp_path, routes, text=text)
    result = await p.ask("writer", "W-TOP")
    assert result.text == "top"
    child, grandchild = p.children
    nested = read_session(p.out / "sessions" / f"{grandchild}.jsonl")
    assert nested.header["parent_session_id"] == child
    assert nested.header["parent_call"]["agent"] == "reader"
    assert p.llm.seen["W-TOP"][1][-1].endswith("nested")  # the grandchild's result, to the child
    refused = p.llm.seen["R-NESTED"][1][-1]
    assert "cannot start sub-agents here (limits.max_depth is 2)" in refused


async def test_a_childs_records_reach_the_runs_event_stream(tmp_path: Path) -> None:
    p = parent(tmp_path, {"R-TASK": [done("streamed")]})
    p.ctx.events = EventStream.open(str(tmp_path / "events.jsonl"))
    try:
        result = await p.ask("reader", "R-TASK")
    finally:
        p.ctx.events.close()
    lines = (tmp_path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    session = result.log_fields["child_session_id"]
    assert [r["record"]["type"] for r in records if r["session_id"] == session] == [
        "header",
        "message",
        "message",
        "model_call",
        "end",
    ]


async def test_with_progress_on_a_childs_turns_show_under_its_parents_name(
    tmp_path: Path,
) -> None:
    lines: list[str] = []
    p = parent(tmp_path, {"R-TASK": [call("read_file", path="a.py"), done("ok")]})
    p.ctx.progress = Progress(lines.append, enabled=True, per_turn=True, interval_s=3600)
    async with p.ctx.progress.task("docs"):
        await p.ask("reader", "R-TASK")
    turns = [line.split() for line in lines if line.startswith("TURN")]
    assert [words[1:4] for words in turns] == [["docs", ">", "reader"]] * 2, lines
    assert turns[1][4] == "turn=2"  # the child's own turns


async def test_a_childs_read_only_calls_of_one_reply_run_at_once(tmp_path: Path) -> None:
    hub = MeetingHub(2)
    reads = "\n".join([call("read_file", path="a.py"), call("read_file", path="b.py")])
    p = parent(tmp_path, {"R-TASK": [reads, done("ok")]}, hub=hub)
    await p.ask("reader", "R-TASK")
    assert hub.alone == 0 and len(hub.calls) == 2


class MeetingHub(Hub):
    """Its read_file is read-only; each call waits (up to 10 s) until `count` calls are in."""

    def __init__(self, count: int) -> None:
        super().__init__((dataclasses.replace(READ, read_only=True), WRITE))
        self.count = count
        self.arrived = 0
        self.alone = 0
        self.all_in = asyncio.Event()

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.arrived += 1
        if self.arrived == self.count:
            self.all_in.set()
        try:
            await asyncio.wait_for(self.all_in.wait(), 10)
        except TimeoutError:
            self.alone += 1
        return await super().call(name, arguments)


async def test_a_child_on_another_native_model_gets_native_calls_with_its_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    finish = (NativeCall("c1", "attempt_completion", '{"result": "w", "status": "success"}'),)
    own = OwnModel({"W-": [finish]}, shareable=True)
    own.native_tools = True  # type: ignore[attr-defined]
    monkeypatch.setattr(child_module, "create_llm", lambda spec, settings: own)
    text = NATIVE.replace("prompt: WRITER-ROLE", "model: openai:m2\n    prompt: WRITER-ROLE")
    p = parent(tmp_path, {}, text=text, native=True)
    result = await p.ask("writer", "W-TASK")
    assert result.text == "w" and p.child_log(result).header["tool_mode"] == "native"
    (offered,) = own.offered["W-"]
    assert offered is not None and offered.choice == "auto"
    assert [spec.name for spec in offered.specs] == [
        "read_file",
        "write_to_file",
        "attempt_completion",
    ]
