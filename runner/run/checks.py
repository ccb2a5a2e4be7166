"""Judging a completed task: `success.expect` on the result and the `success.check` command."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.task import Expect

__all__ = [
    "CheckResult",
    "expect_problem",
    "feedback_for_check",
    "output_tail",
    "run_check",
    "structured_result",
]

OUTPUT_TAIL_CHARS = 4000  # what the agent sees of a failed check: the end is where errors are
TIMEOUT_EXIT_CODE = 124  # as timeout(1) reports it


@dataclass(frozen=True)
class CheckResult:
    """A finished check command."""

    exit_code: int
    output: str
    """stdout and stderr, interleaved as written."""
    timed_out: bool = False


def expect_problem(result: str, expect: Expect | None) -> str | None:
    """Why the completion result fails `expect`, or None when it passes."""
    if expect is None:
        return None
    if expect.regex is not None and re.search(expect.regex, result) is None:
        return f"the result does not match the expected pattern /{expect.regex}/"
    if expect.json_schema is not None:
        import jsonschema

        try:
            value = json.loads(_strip_fence(result))
        except json.JSONDecodeError as exc:
            return f"the result is not valid JSON ({exc.msg} at line {exc.lineno})"
        errors = sorted(
            jsonschema.Draft202012Validator(expect.json_schema).iter_errors(value),
            key=lambda e: list(e.absolute_path),
        )
        if errors:
            first = errors[0]
            where = "/".join(str(p) for p in first.absolute_path) or "(root)"
            return f"the result does not match the JSON schema at {where}: {first.message}"
    return None


def structured_result(result: str, expect: Expect | None) -> Any:
    """The result parsed as JSON when `expect.json_schema` is set and the result fits it (the
    structured result of DESIGN 12), else None."""
    if expect is None or expect.json_schema is None or expect_problem(result, expect) is not None:
        return None
    return json.loads(_strip_fence(result))


def _strip_fence(text: str) -> str:
    """Models often wrap JSON in a ```json fence; the content is what counts."""
    stripped = text.strip()
    match = re.fullmatch(r"```[a-zA-Z0-9_-]*\n(.*)\n```", stripped, re.DOTALL)
    return match.group(1) if match else stripped


async def run_check(
    command: str, workdir: Path, timeout_s: float, env: Mapping[str, str]
) -> CheckResult:
    """Run `command` with the shell in `workdir`; the whole process group dies on timeout."""
    process = await asyncio.create_subprocess_shell(
        command,
        cwd=workdir,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        async with asyncio.timeout(timeout_s):
            output, _ = await process.communicate()
    except TimeoutError:
        _kill_group(process.pid)
        output, _ = await process.communicate()
        text = output.decode("utf-8", errors="replace")
        return CheckResult(
            TIMEOUT_EXIT_CODE, text + f"\n[check timed out after {timeout_s:g}s]", True
        )
    except asyncio.CancelledError:
        _kill_group(process.pid)
        await process.wait()
        raise
    return CheckResult(process.returncode or 0, output.decode("utf-8", errors="replace"))


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(pid, signal.SIGKILL)


def output_tail(output: str) -> str:
    """The last OUTPUT_TAIL_CHARS characters of a check's output, saying how much was cut."""
    if len(output) > OUTPUT_TAIL_CHARS:
        output = (
            f"[... {len(output) - OUTPUT_TAIL_CHARS} characters cut ...]\n"
            + output[-OUTPUT_TAIL_CHARS:]
        )
    return output


def feedback_for_check(command: str, result: CheckResult, attempts_left: int) -> str:
    """The user message that sends a failed check back to the agent."""
    output = output_tail(result.output)
    return (
        f"The success check `{command}` failed with exit code {result.exit_code}, so the task is "
        f"not done yet. Its output ends with:\n\n{output.rstrip()}\n\n"
        "Fix the cause, then call attempt_completion again "
        f"({attempts_left} check attempt(s) left)."
    )
