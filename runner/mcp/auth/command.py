"""Run a token or assertion command: no shell, bounded output and time, its output parsed.

A `command` auth program prints either a bare token on its first line, or one JSON object:
`{"token": "...", "expires_in": 300}` or `{"headers": {"Authorization": "..."}, "expires_in": 300}`.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

import anyio

from runner.mcp.auth.token import AuthError, Token
from runner.workspace import kill_group, read_pipe, run_to_end, start_group

__all__ = ["MAX_OUTPUT", "parse_token_output", "run_command"]

MAX_OUTPUT = 64 * 1024
"""The most bytes of output read from a command; more is a failure."""
_STDERR_TAIL = 300


async def run_command(
    argv: list[str], *, env: Mapping[str, str], cwd: Path, timeout_s: float, what: str
) -> str:
    """The command's standard output (stripped). Raises AuthError (config) when it cannot start,
    exits non-zero, prints nothing or too much, or outlives `timeout_s`. Its stderr is quoted
    only as a short tail (the caller's redactor masks what it quotes).

    It runs as the leader of its own process group, killed whole however the run ends (the
    workspace's `start_group` and `run_to_end`, as execute_command's commands are)."""
    try:
        process = await start_group(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
        )
    except OSError as exc:
        raise AuthError(f"{what} {argv[0]!r} could not start: {exc.strerror or exc}") from None
    out, err = _Capped(process.pid), _Capped(process.pid)

    async def read_output() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(read_pipe, process.stdout, out.add)
            group.start_soon(read_pipe, process.stderr, err.add)

    timed_out = await run_to_end(process, read_output, timeout_s=timeout_s, watcher=None)
    if out.too_much or err.too_much:
        raise AuthError(f"{what} {argv[0]!r} printed more than {MAX_OUTPUT} bytes")
    if timed_out:
        raise AuthError(f"{what} {argv[0]!r} did not finish within {timeout_s:g} s")
    tail = err.data.decode("utf-8", "replace").strip()[-_STDERR_TAIL:]
    said = f"; its stderr ends with: {tail!r}" if tail else ""
    if process.returncode != 0:
        raise AuthError(f"{what} {argv[0]!r} exited with {process.returncode}{said}")
    text = out.data.decode("utf-8", "replace").strip()
    if not text:
        raise AuthError(f"{what} {argv[0]!r} printed nothing{said}")
    return text


class _Capped:
    """One pipe's output, at most MAX_OUTPUT bytes: one byte more kills the command's group
    (the pipe is still read to its end, so that the group's end is seen)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.data = bytearray()
        self.too_much = False

    def add(self, chunk: bytes) -> None:
        if self.too_much:
            return
        self.data += chunk
        if len(self.data) > MAX_OUTPUT:
            self.too_much = True
            kill_group(self.pid)


def parse_token_output(text: str, *, refresh_every: float | None = None) -> Token:
    """A command's output as a Token: a bare token line, or the JSON forms above."""
    if not text.startswith("{"):
        token = text.splitlines()[0].strip()
        return _token({"Authorization": f"Bearer {token}"}, None, refresh_every)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise AuthError(
            "the command's output starts with `{` but is not JSON (print a bare token, or "
            '{"token": ..., "expires_in": N} or {"headers": {...}, "expires_in": N})'
        ) from None
    # Text that starts with `{` is a JSON object or no JSON at all.
    expires = data.get("expires_in")
    if expires is not None and (not isinstance(expires, int | float) or expires <= 0):
        raise AuthError("the command's `expires_in` is not a positive number of seconds")
    headers = data.get("headers")
    if isinstance(data.get("token"), str) and data["token"]:
        headers = {"Authorization": f"Bearer {data['token']}"}
    if not isinstance(headers, dict) or not headers:
        raise AuthError('the command\'s JSON output has neither "token" nor "headers"')
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise AuthError("the command's `headers` must map names to strings")
    return _token(dict(headers), float(expires) if expires is not None else None, refresh_every)


def _token(headers: dict[str, str], expires_in: float | None, every: float | None) -> Token:
    lifetime = expires_in if expires_in is not None else every
    at = time.monotonic() + lifetime if lifetime is not None else None
    return Token(headers, at, None, lifetime)
