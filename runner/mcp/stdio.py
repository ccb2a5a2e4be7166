"""The stdio transport of the MCP hub: the SDK's `stdio_client` with a linear line reader.

The SDK splits stdout with `(buffer + chunk).split("\\n")` for every 64 KiB chunk, which is
quadratic in the length of a line: a 50 MB tool result (one JSON-RPC line) takes minutes of CPU.
This reader keeps the pieces of an unfinished line in a list and joins them once, at its newline.
A line longer than `max_line_chars` is not kept: the server is cut off (its calls see a closed
connection) with a warning, instead of the runner holding gigabytes. A line that is not JSON-RPC
is reported without its text (the SDK would log it whole, secrets and all). The server's stderr is
read through a pipe and written to its log file redacted. Everything else (spawning, shutdown,
killing the process tree) is the SDK's own code, reused.
"""

from __future__ import annotations

import codecs
import contextlib
import subprocess
from collections.abc import AsyncIterable, AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TextIO, cast

import anyio
import anyio.lowlevel
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from anyio.streams.text import TextReceiveStream
from mcp.client._transport import TransportStreams
from mcp.client.stdio import (
    StdioServerParameters,
    _aclose_all,
    _create_platform_compatible_process,
    _drain_stdout,
    _get_executable_command,
    _stop_server_process,
    get_default_environment,
)
from mcp.shared.message import SessionMessage

from runner.mcp.serverlog import StreamRedactor
from runner.redact import Redactor

__all__ = ["LineTooLong", "split_lines", "stdio_transport"]

_WRITER_FLUSH_TIMEOUT_S = 0.5
_STDERR_DRAIN_TIMEOUT_S = 1.0
DEFAULT_MAX_LINE_CHARS = 256 * 1024 * 1024


class LineTooLong(Exception):
    """A server wrote more than the limit without a newline."""


async def split_lines(
    chunks: AsyncIterator[str], max_chars: int = DEFAULT_MAX_LINE_CHARS
) -> AsyncIterator[str]:
    """The complete lines of a stream of text chunks, in time linear in the text's length.

    Raises:
        LineTooLong: a line passed `max_chars` before its newline came.
    """
    pending: list[str] = []
    size = 0
    async for chunk in chunks:
        if "\n" not in chunk:
            pending.append(chunk)
            size += len(chunk)
            if size > max_chars:
                raise LineTooLong(f"a line passed {max_chars} characters")
            continue
        first, *middle, last = chunk.split("\n")
        if size + len(first) > max_chars or any(len(line) > max_chars for line in middle):
            raise LineTooLong(f"a line passed {max_chars} characters")
        pending.append(first)
        yield "".join(pending)
        for line in middle:
            yield line
        pending = [last] if last else []
        size = len(last)


def _parse(line: str, on_warning: Callable[[str], None]) -> SessionMessage | Exception:
    """A JSON-RPC message, or an exception that does not quote the line (it may hold a secret)."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:
        on_warning(f"wrote a stdout line that is not JSON-RPC ({len(line)} characters); ignored")
        return ValueError("the server wrote a stdout line that is not JSON-RPC")


async def _copy_stderr(
    stderr: AsyncIterable[bytes] | None,
    errlog: TextIO,
    redactor: Redactor | None,
    done: anyio.Event,
) -> None:
    """Copy the server's stderr pipe into its log file, redacted, until the pipe closes."""
    masker = StreamRedactor(redactor or Redactor())
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        if stderr is not None:
            async for chunk in stderr:
                errlog.write(masker.feed(decoder.decode(chunk)))
                errlog.flush()
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass
    finally:
        with contextlib.suppress(ValueError, OSError):  # the log may be closed by now
            errlog.write(masker.feed(decoder.decode(b"", final=True)) + masker.flush())
            errlog.flush()
        done.set()


async def _read_stdout(
    process: Any,
    server: StdioServerParameters,
    reader_in: MemoryObjectSendStream[SessionMessage | Exception],
    max_line_chars: int,
    on_warning: Callable[[str], None],
) -> None:
    """Hand each stdout line to the session, parsed; cut the server off at an over-long line."""
    assert process.stdout is not None
    text = TextReceiveStream(
        process.stdout, encoding=server.encoding, errors=server.encoding_error_handler
    )
    try:
        async with reader_in:
            try:
                async for line in split_lines(text.__aiter__(), max_line_chars):
                    try:
                        await reader_in.send(_parse(line, on_warning))
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return
            except LineTooLong:
                # Its message is lost, so the request waiting on it would wait for its
                # timeout: closing the stream ends the session's calls at once.
                await reader_in.aclose()
                on_warning(
                    f"wrote a stdout line longer than {max_line_chars} characters (the "
                    "mcp_max_message_chars setting); the connection was closed"
                )
            finally:
                await _drain_stdout(process)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
        pass  # shutdown closed the stream, or the server went away: the session sees EOF


@asynccontextmanager
async def stdio_transport(
    server: StdioServerParameters,
    errlog: TextIO,
    *,
    redactor: Redactor | None = None,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
    on_warning: Callable[[str], None] = lambda _: None,
    process: Any | None = None,
) -> AsyncIterator[TransportStreams]:
    """Spawn the server and exchange newline-delimited JSON-RPC over its stdin and stdout.

    The server's stderr is written to `errlog` through `redactor`; `on_warning` hears (in one
    line, without the server's text) about a line over `max_line_chars` or one that is not JSON-RPC.
    `process` is the server already started by `runner.mcp.spawn` (same command, environment and
    session as below); this transport then owns it.
    """
    if process is None:
        command = await _get_executable_command(server.command)
        process = await _create_platform_compatible_process(
            command=command,
            args=server.args,
            env=get_default_environment() | (server.env or {}),
            errlog=cast(TextIO, subprocess.PIPE),  # read below, redacted, into errlog
            cwd=server.cwd,
        )
    # No await between the spawn and the task group, or a cancellation could leak the process.
    reader_in, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, writer_out = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    stderr_done = anyio.Event()

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with writer_out:
                async for message in writer_out:
                    json = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((json + "\n").encode(server.encoding))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await reader_in.aclose()  # a request must not wait forever on a dead pipe
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(_WRITER_FLUSH_TIMEOUT_S):
            await writer_done.wait()
        await _stop_server_process(process)
        with anyio.move_on_after(_STDERR_DRAIN_TIMEOUT_S):  # what it wrote before it stopped
            await stderr_done.wait()
        await _aclose_all(read_stream, write_stream, reader_in, writer_out)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(_read_stdout, process, server, reader_in, max_line_chars, on_warning)
        group.start_soon(stdin_writer)
        group.start_soon(
            _copy_stderr, getattr(process, "stderr", None), errlog, redactor, stderr_done
        )
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):  # the server must stop, cancelled or not
                await shutdown()
            group.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()
