"""The stdio transport of the MCP hub: the SDK's `stdio_client` with a linear line reader.

The SDK splits stdout with `(buffer + chunk).split("\\n")` for every 64 KiB chunk, which is
quadratic in the length of a line: a 50 MB tool result (one JSON-RPC line) takes minutes of CPU.
This reader keeps the pieces of an unfinished line in a list and joins them once, at its newline.
Everything else (spawning, shutdown, killing the process tree) is the SDK's own code, reused.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TextIO

import anyio
import anyio.lowlevel
from anyio.streams.text import TextReceiveStream
from mcp.client._transport import TransportStreams
from mcp.client.stdio import (
    StdioServerParameters,
    _aclose_all,
    _create_platform_compatible_process,
    _drain_stdout,
    _get_executable_command,
    _parse_line,
    _stop_server_process,
    get_default_environment,
)
from mcp.shared.message import SessionMessage

__all__ = ["split_lines", "stdio_transport"]

_WRITER_FLUSH_TIMEOUT_S = 0.5


async def split_lines(chunks: AsyncIterator[str]) -> AsyncIterator[str]:
    """The complete lines of a stream of text chunks, in time linear in the text's length."""
    pending: list[str] = []
    async for chunk in chunks:
        if "\n" not in chunk:
            pending.append(chunk)
            continue
        first, *middle, last = chunk.split("\n")
        pending.append(first)
        yield "".join(pending)
        for line in middle:
            yield line
        pending = [last] if last else []


@asynccontextmanager
async def stdio_transport(
    server: StdioServerParameters, errlog: TextIO
) -> AsyncIterator[TransportStreams]:
    """Spawn the server and exchange newline-delimited JSON-RPC over its stdin and stdout."""
    command = await _get_executable_command(server.command)
    process = await _create_platform_compatible_process(
        command=command,
        args=server.args,
        env=get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    # No await between the spawn and the task group, or a cancellation could leak the process.
    reader_in, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, writer_out = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout is not None
        text = TextReceiveStream(
            process.stdout, encoding=server.encoding, errors=server.encoding_error_handler
        )
        try:
            async with reader_in:
                try:
                    async for line in split_lines(text.__aiter__()):
                        try:
                            await reader_in.send(_parse_line(line))
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return
                finally:
                    await _drain_stdout(process)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass  # shutdown closed the stream, or the server went away: the session sees EOF

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
        await _aclose_all(read_stream, write_stream, reader_in, writer_out)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):  # the server must stop, cancelled or not
                await shutdown()
            group.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()
