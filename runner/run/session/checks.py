"""Judging a completed task: `success.expect` on the result and the `success.check` command."""

from __future__ import annotations

import functools
import json
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.task import Expect
from runner.workspace import open_shell, read_pipe, run_to_end, shared_reaper

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
MAX_CHECK_OUTPUT_BYTES = 1024 * 1024
"""What is kept of a check's output: its end, where the errors are."""


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
    """Run `command` like execute_command (`runner.workspace.open_shell`: the task's sandbox, its
    own process group, registered with the reaper); its whole group dies when it ends, so no
    background process outlives the check. The last MAX_CHECK_OUTPUT_BYTES are kept."""
    process = await open_shell(
        command,
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        watcher=shared_reaper(),
    )
    tail = bytearray()

    def keep(chunk: bytes) -> None:
        tail.extend(chunk)
        del tail[:-MAX_CHECK_OUTPUT_BYTES]

    timed_out = await run_to_end(
        process,
        functools.partial(read_pipe, process.stdout, keep),
        timeout_s=timeout_s,
        watcher=shared_reaper(),
    )
    text = tail.decode("utf-8", errors="replace")
    if timed_out:
        note = f"\n[check timed out after {timeout_s:g}s]"
        return CheckResult(TIMEOUT_EXIT_CODE, text + note, True)
    return CheckResult(process.returncode or 0, text)


def output_tail(output: str) -> str:
    """The last OUTPUT_TAIL_CHARS characters of a check's output, saying how much was cut."""
    if len(output) > OUTPUT_TAIL_CHARS:
        output = (
            f"[... {len(output) - OUTPUT_TAIL_CHARS} characters cut ...]\n"
            + output[-OUTPUT_TAIL_CHARS:]
        )
    return output


def feedback_for_check(
    command: str, result: CheckResult, attempts_left: int, mask: Callable[[str], str]
) -> str:
    """The user message that sends a failed check back to the agent, secrets masked (`mask`):
    a check may print a token the agent must not see."""
    output = mask(output_tail(result.output))
    return (
        f"The success check `{mask(command)}` failed with exit code {result.exit_code}, so the "
        f"task is not done yet. Its output ends with:\n\n{output.rstrip()}\n\n"
        "Fix the cause, then call attempt_completion again "
        f"({attempts_left} check attempt(s) left)."
    )
