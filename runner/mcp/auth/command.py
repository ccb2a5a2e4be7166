"""Run a token or assertion command: no shell, bounded output and time, its output parsed.

A `command` auth program prints either a bare token on its first line, or one JSON object:
`{"token": "...", "expires_in": 300}` or `{"headers": {"Authorization": "..."}, "expires_in": 300}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

from runner.mcp.auth.token import AuthError, Token

__all__ = ["MAX_OUTPUT", "parse_token_output", "run_command"]

MAX_OUTPUT = 64 * 1024
"""The most bytes of output read from a command; more is a failure."""
_STDERR_TAIL = 300
_DRAIN_S = 5.0
"""How long a stopped command's pipes may take to close."""


async def run_command(
    argv: list[str], *, env: Mapping[str, str], cwd: Path, timeout_s: float, what: str
) -> str:
    """The command's standard output (stripped). Raises AuthError (config) when it cannot start,
    exits non-zero, prints nothing or too much, or outlives `timeout_s`. Its stderr is quoted
    only as a short tail (the caller's redactor masks what it quotes)."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise AuthError(f"{what} {argv[0]!r} could not start: {exc.strerror or exc}") from None
    try:
        out, err = await asyncio.wait_for(_bounded(process), timeout_s)
        code = await process.wait()
    except TimeoutError:
        raise AuthError(f"{what} {argv[0]!r} did not finish within {timeout_s:g} s") from None
    except _TooMuch:
        raise AuthError(f"{what} {argv[0]!r} printed more than {MAX_OUTPUT} bytes") from None
    finally:
        if process.returncode is None:  # timed out, too talkative, or the run was cancelled
            _kill(process)
        # Read the pipes to their end: one left paused with unread output (a command stopped
        # for printing too much) never reports its end, and `wait()` would wait for ever. A
        # process outside the group that still holds a pipe is given a few seconds, no more.
        with contextlib.suppress(Exception):
            await asyncio.shield(asyncio.wait_for(_drained(process), _DRAIN_S))
    tail = err.decode("utf-8", "replace").strip()[-_STDERR_TAIL:]
    said = f"; its stderr ends with: {tail!r}" if tail else ""
    if code != 0:
        raise AuthError(f"{what} {argv[0]!r} exited with {code}{said}")
    text = out.decode("utf-8", "replace").strip()
    if not text:
        raise AuthError(f"{what} {argv[0]!r} printed nothing{said}")
    return text


class _TooMuch(Exception):
    pass


async def _bounded(process: asyncio.subprocess.Process) -> tuple[bytes, bytes]:
    assert process.stdout is not None and process.stderr is not None

    async def read(stream: asyncio.StreamReader) -> bytes:
        data = b""
        while chunk := await stream.read(8192):
            data += chunk
            if len(data) > MAX_OUTPUT:
                raise _TooMuch
        return data

    reads = [
        asyncio.ensure_future(read(process.stdout)),
        asyncio.ensure_future(read(process.stderr)),
    ]
    try:
        out, err = await asyncio.gather(*reads)
    finally:
        for pending in reads:  # one stream's failure stops the other's read too
            pending.cancel()
    return out, err


async def _drained(process: asyncio.subprocess.Process) -> None:
    """Discard what is left on the command's pipes until they close, then reap it."""
    for stream in (process.stdout, process.stderr):
        while stream is not None and await stream.read(65536):
            pass
    await process.wait()


def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, 9)


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
    if not isinstance(data, dict):
        raise AuthError("the command's JSON output is not an object")
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
