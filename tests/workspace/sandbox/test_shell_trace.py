"""The shell seam adds the current trace context to every command's environment, and only then."""

from __future__ import annotations

from pathlib import Path

import anyio

from runner.workspace import TRACE_ENV, run_shell

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def env_of_command(tmp_path: Path, trace: dict[str, str] | None) -> str:
    async def main() -> str:
        token = TRACE_ENV.set(trace)
        try:
            done = await run_shell(
                'printf "%s|%s|%s" "$TRACEPARENT" "$TRACESTATE" "$KEPT"',
                cwd=tmp_path,
                env={"KEPT": "yes", "PATH": "/usr/bin:/bin", "TRACEPARENT": "from-the-env"},
                input_bytes=b"",
                timeout_s=30,
            )
        finally:
            TRACE_ENV.reset(token)
        return done.stdout

    return anyio.run(main)


def test_a_command_started_under_a_span_gets_its_traceparent(tmp_path: Path) -> None:
    trace = {"TRACEPARENT": PARENT, "TRACESTATE": "vendor=1"}
    assert env_of_command(tmp_path, trace) == f"{PARENT}|vendor=1|yes"


def test_without_a_span_the_commands_environment_is_as_given(tmp_path: Path) -> None:
    assert env_of_command(tmp_path, None) == "from-the-env||yes"
