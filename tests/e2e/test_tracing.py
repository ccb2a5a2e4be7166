"""OpenTelemetry traces through the CLI (DESIGN section 17): the real runner exports over OTLP/HTTP
to an in-process receiver that decodes the protobuf requests.

One traced run: a task whose name holds a secret starts a sub-agent, which runs a command under a
pre_tool hook; the parent's last model call is retried once. The receiver sees one trace: the run
under the caller's TRACEPARENT, the task under the run, model and tool calls under their session,
the sub-agent's session under its `sub_agent` call; the command and the hook saw the TRACEPARENT of
their tool call's span, and no byte of any request holds the secret.
"""

from __future__ import annotations

import fcntl
import signal
import socket
import subprocess
import sys
import termios
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    API_KEY,
    NO_WORKSPACE,
    REACH_S,
    RUN_TIMEOUT_S,
    Done,
    Scenario,
    call,
    clean_env,
    complete,
    default_args,
    kill,
    prepare,
    start,
    tool_reply,
    wait_until,
)
from tests.fakes.mcp_test_server import SCRIPT as MCP_SCRIPT
from tests.fakes.model_server import FakeModelServer, fault, reply
from tests.fakes.otlp_receiver import OtlpReceiver, ReceivedSpan

SECRET = "s3cr3tvalue99x"
"""In a secret-named variable, the task name and a command's arguments: masked or never sent."""
CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"
HELPER_TASK = "H-TASK: run the probe command"
COMMAND = f'echo "$TRACEPARENT" > tp-command.txt; echo {SECRET} > /dev/null'
HOOK = 'echo "$TRACEPARENT" > tp-hook.txt'


def traced_task() -> dict[str, Any]:
    return {
        "name": f"deploy-{SECRET}-check",
        "prompt": "Probe the workdir.",
        "agents": {
            "helper": {
                "description": "Runs one command.",
                "prompt": "You run the command you are given.",
                "tools": {"allow": ["execute_command"]},
            }
        },
        "hooks": {"pre_tool": [{"match": ["execute_command"], "run": HOOK}]},
        # A stdio MCP server whose `environment` tool shows what it was started with.
        "extensions": {"probe": {"cmd": sys.executable, "args": [str(MCP_SCRIPT)]}},
    }


@pytest.fixture(scope="module")
def traced(module_dir: Path) -> Iterator[tuple[Done, OtlpReceiver]]:
    routes = {
        "H-TASK": [tool_reply("execute_command", command=COMMAND), complete("probed")],
    }
    steps = [
        tool_reply("environment"),
        reply(call("sub_agent", agent="helper", task=HELPER_TASK)),
        fault("server_error"),
        complete("all probed"),
    ]
    env = {
        "DEPLOY_TOKEN": SECRET,
        "TRACEPARENT": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01",
    }
    with OtlpReceiver() as receiver, FakeModelServer(steps, routes=routes) as server:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        scenario = Scenario(task=traced_task(), env=env)
        done = start(scenario, module_dir / "traced", server).wait()
        yield done, receiver


def only(receiver: OtlpReceiver, name: str) -> ReceivedSpan:
    (span,) = receiver.named(name)
    return span


def children(receiver: OtlpReceiver, parent: ReceivedSpan) -> list[ReceivedSpan]:
    return [span for span in receiver.spans if span.parent_id == parent.span_id]


def test_the_run_is_one_trace_under_the_callers_traceparent(
    traced: tuple[Done, OtlpReceiver],
) -> None:
    done, receiver = traced
    assert done.code == 0, done.explain()
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    assert {span.trace_id for span in receiver.spans} == {CALLER_TRACE}
    run = only(receiver, "agent-runner run")
    assert run.parent_id == CALLER_SPAN
    assert run.attributes["agent_runner.run_id"] == done.summary()["run_id"]
    assert run.attributes["agent_runner.exit_code"] == 0
    assert run.attributes["agent_runner.tasks"] == 1
    assert run.resource["service.name"] == "agent-runner"
    assert "warning" not in done.stderr, done.stderr


def test_the_task_span_is_under_the_run_with_its_outcome(
    traced: tuple[Done, OtlpReceiver],
) -> None:
    done, receiver = traced
    run = only(receiver, "agent-runner run")
    task = only(receiver, "invoke_agent deploy-***-check")
    assert task.parent_id == run.span_id
    entry = done.task()
    attributes = task.attributes
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.agent.name"] == "deploy-***-check"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "gpt-4.1"
    assert attributes["agent_runner.task.status"] == "passed"
    assert attributes["gen_ai.conversation.id"] == entry["session_id"]
    assert attributes["agent_runner.turns"] == entry["turns"]
    assert attributes["agent_runner.cost_usd"] == entry["cost_usd"]
    tokens = attributes["gen_ai.usage.input_tokens"] + attributes["gen_ai.usage.output_tokens"]
    assert tokens == entry["tokens"]


def test_each_model_call_is_a_chat_span_with_usage_and_retries(
    traced: tuple[Done, OtlpReceiver],
) -> None:
    done, receiver = traced
    task = only(receiver, "invoke_agent deploy-***-check")
    chats = [span for span in children(receiver, task) if span.name == "chat gpt-4.1"]
    parent_log = next(log for log in done.logs() if log.header.get("parent_session_id") is None)
    calls = done.events("model_call", parent_log)
    assert len(chats) == len(calls) == 3
    for span, event in zip(chats, calls, strict=True):
        attributes = span.attributes
        assert span.kind == 3  # CLIENT
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.request.model"] == "gpt-4.1"
        assert attributes["gen_ai.response.model"] == event["model"]
        assert attributes["gen_ai.usage.output_tokens"] == event["usage"]["output_tokens"]
        assert attributes["gen_ai.usage.input_tokens"] == event["usage"]["input_tokens"]
        assert attributes["gen_ai.response.finish_reasons"] == [event["stop_reason"]]
        assert attributes["agent_runner.retries"] == event["retries"]
    assert [span.attributes["agent_runner.retries"] for span in chats] == [0, 0, 1]
    ((name, retry),) = chats[2].events
    assert name == "retry"
    assert retry["http.response.status_code"] == 500


def test_the_sub_agent_session_is_nested_under_its_call(
    traced: tuple[Done, OtlpReceiver],
) -> None:
    done, receiver = traced
    task = only(receiver, "invoke_agent deploy-***-check")
    call_span = only(receiver, "execute_tool sub_agent")
    assert call_span.parent_id == task.span_id
    assert call_span.attributes["gen_ai.operation.name"] == "execute_tool"
    assert call_span.attributes["gen_ai.tool.name"] == "sub_agent"
    assert call_span.attributes["agent_runner.tool.is_error"] is False
    helper = only(receiver, "invoke_agent helper")
    assert helper.parent_id == call_span.span_id
    (child_id,) = done.task()["child_sessions"]
    assert helper.attributes["gen_ai.conversation.id"] == child_id
    inside = children(receiver, helper)
    assert sorted(span.name for span in inside) == [
        "chat gpt-4.1",
        "chat gpt-4.1",
        "execute_tool execute_command",
    ]
    command = only(receiver, "execute_tool execute_command")
    assert command.attributes["agent_runner.tool.server"] == "workspace"
    assert command.attributes["agent_runner.tool.is_error"] is False


def test_the_command_and_the_hook_see_their_tool_calls_traceparent(
    traced: tuple[Done, OtlpReceiver],
) -> None:
    done, receiver = traced
    command = only(receiver, "execute_tool execute_command")
    expected = f"00-{CALLER_TRACE}-{command.span_id}-01"
    workdir = done.root / "w"
    assert (workdir / "tp-command.txt").read_text(encoding="utf-8").strip() == expected
    assert (workdir / "tp-hook.txt").read_text(encoding="utf-8").strip() == expected


def test_a_stdio_mcp_server_starts_with_the_tasks_traceparent(
    traced: tuple[Done, OtlpReceiver],
) -> None:
    done, receiver = traced
    task = only(receiver, "invoke_agent deploy-***-check")
    probe = only(receiver, "execute_tool environment")
    assert probe.parent_id == task.span_id
    assert probe.attributes["agent_runner.tool.server"] == "probe"
    parent_log = next(log for log in done.logs() if log.header.get("parent_session_id") is None)
    (event,) = [e for e in done.events("tool_call", parent_log) if e["tool"] == "environment"]
    assert f'"TRACEPARENT": "00-{CALLER_TRACE}-{task.span_id}-01"' in event["result"]


def test_no_secret_and_no_conversation_text_is_sent(traced: tuple[Done, OtlpReceiver]) -> None:
    _, receiver = traced
    sent = b"".join(receiver.bodies)
    assert SECRET.encode() not in sent
    # Prompts, replies, tool arguments and results stay in the session log.
    for text in ("Probe the workdir", "H-TASK", "tp-command.txt", "all probed"):
        assert text.encode() not in sent, text


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


SIMPLE = {**NO_WORKSPACE, "prompt": "Say done."}

SYS_MODULES_AFTER = """
import sys
from runner.cli import main
code = main()
loaded = sorted(name for name in sys.modules if name.split(".")[0] == "opentelemetry")
open("otel-modules.txt", "w", encoding="utf-8").write("\\n".join(loaded))
sys.exit(code)
"""

WITHOUT_THE_EXTRA = (
    """
import sys
class NoOpenTelemetry:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoOpenTelemetry())
"""
    + SYS_MODULES_AFTER
)


@dataclass(frozen=True)
class QuietRuns:
    runs: dict[str, Done]
    refused_requests: int
    """Export requests the refusing collector answered 400."""


@pytest.fixture(scope="module")
def quiet_runs(module_dir: Path) -> Iterator[QuietRuns]:
    """Runs whose tracing is off or cannot export: each must pass as an untraced one does."""
    with (
        OtlpReceiver(status=400) as refusing,
        socket.socket() as silent,
    ):
        # Accepts connections (the kernel's backlog) and never answers: an export hangs.
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        silent_url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        scenarios = {
            "off": (Scenario(task=SIMPLE, steps=[complete()]), SYS_MODULES_AFTER),
            "no_extra": (
                Scenario(
                    task=SIMPLE,
                    steps=[complete()],
                    env={"OTEL_EXPORTER_OTLP_ENDPOINT": refusing.endpoint},
                ),
                WITHOUT_THE_EXTRA,
            ),
            "refused": (
                Scenario(
                    task={"prompt": "Read x."},
                    files={"x": "hello"},
                    steps=[reply(call("read_file", path="x")), complete()],
                    env={
                        "OTEL_EXPORTER_OTLP_ENDPOINT": refusing.endpoint,
                        # A batch per span, sent at once: every one of them is refused.
                        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1",
                        "OTEL_BSP_SCHEDULE_DELAY": "1",
                    },
                ),
                SYS_MODULES_AFTER,
            ),
            "down": (
                Scenario(
                    task=SIMPLE,
                    steps=[complete()],
                    env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{free_port()}"},
                ),
                SYS_MODULES_AFTER,
            ),
            "hanging": (
                Scenario(
                    task=SIMPLE,
                    steps=[complete()],
                    # Far beyond the harness's bound on a run: only the runner's own bound on
                    # the final flush lets it exit in time.
                    env={
                        "OTEL_EXPORTER_OTLP_ENDPOINT": silent_url,
                        "OTEL_EXPORTER_OTLP_TIMEOUT": "600",
                    },
                ),
                SYS_MODULES_AFTER,
            ),
        }
        started = {
            name: start(scenario, module_dir / name, launcher=("-c", code))
            for name, (scenario, code) in scenarios.items()
        }
        try:
            runs = {name: run.wait() for name, run in started.items()}
            yield QuietRuns(runs, refused_requests=len(refusing.bodies))
        finally:
            for run in started.values():
                run.server.stop()


def otel_modules(done: Done) -> list[str]:
    text = (done.root / "otel-modules.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line]


def test_without_an_endpoint_nothing_of_opentelemetry_is_imported(
    quiet_runs: QuietRuns,
) -> None:
    done = quiet_runs.runs["off"]
    assert done.code == 0, done.explain()
    assert otel_modules(done) == []
    assert "warning" not in done.stderr


def test_without_the_extra_the_run_passes_and_says_why_nothing_is_sent(
    quiet_runs: QuietRuns,
) -> None:
    done = quiet_runs.runs["no_extra"]
    assert done.code == 0, done.explain()
    assert otel_modules(done) == []
    assert done.stderr.count("OpenTelemetry is not installed") == 1, done.stderr
    assert "otel` extra" in done.stderr


@pytest.mark.parametrize("case", ["refused", "down", "hanging"])
def test_a_collector_that_fails_is_one_warning_and_changes_no_outcome(
    quiet_runs: QuietRuns, case: str
) -> None:
    done = quiet_runs.runs[case]
    assert done.code == 0, done.explain()
    assert done.task()["status"] == "passed"
    assert otel_modules(done), "the run was traced"
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, done.stderr
    assert "trac" in warnings[0]
    assert "Traceback" not in done.stderr
    if case == "refused":
        assert quiet_runs.refused_requests > 1, "several exports failed, one warning"


@pytest.fixture(scope="module")
def signalled(module_dir: Path) -> Iterator[tuple[Done, OtlpReceiver]]:
    """SIGTERM while the second model call hangs: the run ends interrupted, its spans sent."""
    with (
        OtlpReceiver() as receiver,
        FakeModelServer([tool_reply("list_files", path="."), fault("stall")]) as server,
    ):
        scenario = Scenario(task={}, env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
        run = start(scenario, module_dir / "sigterm", server)
        try:
            assert server.wait_for_stall(timeout=REACH_S), "no stalled model call"
            run.process.send_signal(signal.SIGTERM)
        finally:
            done = run.wait()
        yield done, receiver


def test_spans_are_sent_when_sigterm_ends_the_run(signalled: tuple[Done, OtlpReceiver]) -> None:
    done, receiver = signalled
    assert done.code == 143, done.explain()
    run = only(receiver, "agent-runner run")
    assert run.attributes["agent_runner.exit_code"] == 143
    assert run.status_code == 2  # ERROR
    task = only(receiver, "invoke_agent t")
    assert task.parent_id == run.span_id
    assert task.attributes["agent_runner.task.status"] == "interrupted"
    assert task.attributes["error.type"] == "signal"
    first, cut = receiver.named("chat gpt-4.1")
    assert first.attributes["gen_ai.usage.output_tokens"] > 0
    assert cut.attributes["error.type"] == "CancelledError"
    assert only(receiver, "execute_tool list_files").parent_id == task.span_id


def test_spans_are_sent_when_the_watchdog_ends_a_stuck_run(module_dir: Path) -> None:
    """The loop blocks writing a transcript to a stdout pipe nobody reads; after SIGTERM's grace
    period the watchdog writes the reports, ends the spans still open and sends them."""
    root = module_dir / "stuck"
    scenario = Scenario(task={}, steps=[reply("x" * 300_000 + "\n" + complete().text)])
    prepare(scenario, root)
    with OtlpReceiver() as receiver, FakeModelServer(scenario.steps) as server:
        env = clean_env(
            root,
            {
                "OPENAI_BASE_URL": server.openai_base_url,
                "OPENAI_API_KEY": API_KEY,
                "AGENT_RUNNER_SHUTDOWN_GRACE_S": "2",
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            },
        )
        process = subprocess.Popen(
            [sys.executable, "-m", "runner", *default_args("-v")],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert process.stdout is not None
            reader = process.stdout.fileno()
            size = fcntl.fcntl(reader, fcntl.F_GETPIPE_SZ)
            wait_until(lambda: pending(reader) > size // 2, RUN_TIMEOUT_S, "stdout to fill up")
            process.send_signal(signal.SIGTERM)
            code = process.wait(RUN_TIMEOUT_S)
        finally:
            kill(process)
    assert code == 143
    run = only(receiver, "agent-runner run")
    assert run.attributes["agent_runner.abandoned"] is True
    task = only(receiver, "invoke_agent t")
    assert task.parent_id == run.span_id
    assert task.attributes["agent_runner.task.status"] == "passed"


def pending(fd: int) -> int:
    """Bytes waiting in a pipe."""
    buffer = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, buffer)
    return int.from_bytes(buffer, sys.byteorder)
