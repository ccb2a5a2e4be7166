"""The seccomp filter that keeps a sandboxed command away from unix sockets (DESIGN 18, `sockets`).

A unix socket is reached through the filesystem, and `connect()` works on a socket file that the
command can only read (a read-only bind mount, a Landlock read rule): bubblewrap's read-only root
does not stop a command from talking to `/var/run/docker.sock`, a dbus bus or an ssh-agent beside
the workdir. Neither mount namespaces nor Landlock (up to ABI 7) govern that `connect()`, and a
seccomp filter cannot read the address it is given. So the filter refuses to make the socket:
`socket(AF_UNIX, ...)` fails with EACCES, which no path can get around. `socketpair()` stays
allowed (a connected pair reaches nothing outside the command), and so does every other family:
the network is the network namespace's business (and Landlock's), not this filter's. io_uring is
refused too, since its `IORING_OP_SOCKET` and `IORING_OP_CONNECT` make sockets without the
`socket()` call; so is i386's `socketcall()`, whose arguments a filter cannot see.

The cost: a command cannot make a unix socket of its own either (a test server on a socket file,
an ssh-agent, `multiprocessing`'s forkserver). The filter is classic BPF for the host's
architectures (x86-64 with i386 and x32, arm64 with arm); elsewhere there is none and the probe
records `sockets` as not held. bubblewrap loads it with `--seccomp FD`; the Landlock script reads
it from the same kind of pipe and loads it itself.
"""

from __future__ import annotations

import contextlib
import os
import platform
import struct
from collections.abc import Iterator

__all__ = ["filter_pipe", "program"]

_LD_W_ABS, _JEQ_K, _RET_K = 0x20, 0x15, 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_EACCES = 13
_AF_UNIX = 1
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (little-endian: arg0's low half)
_IO_URING = (425, 426, 427)  # setup, enter, register: the same numbers on every architecture
_X32 = 0x40000000

_Rules = tuple[int, tuple[int, ...], tuple[int, ...]]
"""An architecture (AUDIT_ARCH_*), its `socket` syscall numbers, the numbers refused outright."""

_ARCHES: dict[str, tuple[_Rules, ...]] = {
    "x86_64": (
        (0xC000003E, (41, _X32 | 41), (*_IO_URING, *(_X32 | nr for nr in _IO_URING))),
        (0x40000003, (359,), (102, *_IO_URING)),  # i386: 102 is socketcall
    ),
    "aarch64": (
        (0xC00000B7, (198,), _IO_URING),
        (0x40000028, (281,), _IO_URING),  # arm (32-bit) on an arm64 kernel
    ),
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter as `struct sock_filter` records for `machine` (default: this host's);
    None where it is not known."""
    arches = _ARCHES.get((machine or platform.machine()).lower())
    if arches is None:
        return None
    deny = _insn(_RET_K, 0, 0, _ERRNO | _EACCES)
    blocks = [_arch_block(socket_nrs, refused) for _, socket_nrs, refused in arches]
    # Head: load the architecture, jump to its block; an unknown one is refused everything.
    head_len = 1 + len(arches) + 1
    code = [_insn(_LD_W_ABS, 0, 0, _ARCH)]
    offset = 1  # past the unknown-architecture return
    for index, (arch, _, _) in enumerate(arches):
        skip = len(arches) - 1 - index + offset
        code.append(_insn(_JEQ_K, skip, 0, arch))
        offset += len(blocks[index])
    code.append(deny)
    assert len(code) == head_len
    for block in blocks:
        code += block
    return b"".join(code)


def _arch_block(socket_nrs: tuple[int, ...], refused: tuple[int, ...]) -> list[bytes]:
    """Load the syscall number; `socket` checks its domain, `refused` returns EACCES."""
    checks = len(socket_nrs) + len(refused)
    # Layout: ld nr, checks..., ret allow, ld arg0, jeq AF_UNIX, ret allow, ret deny
    code = [_insn(_LD_W_ABS, 0, 0, _NR)]
    for index, nr in enumerate(socket_nrs):
        to_domain = checks - index  # past the remaining checks and the allow
        code.append(_insn(_JEQ_K, to_domain, 0, nr))
    for index, nr in enumerate(refused):
        to_deny = checks - len(socket_nrs) - index + 3  # past the checks, allow, domain part
        code.append(_insn(_JEQ_K, to_deny, 0, nr))
    code.append(_insn(_RET_K, 0, 0, _ALLOW))
    code.append(_insn(_LD_W_ABS, 0, 0, _ARG0))
    code.append(_insn(_JEQ_K, 1, 0, _AF_UNIX))
    code.append(_insn(_RET_K, 0, 0, _ALLOW))
    code.append(_insn(_RET_K, 0, 0, _ERRNO | _EACCES))
    return code


@contextlib.contextmanager
def filter_pipe() -> Iterator[int | None]:
    """A pipe's read end holding the filter, for a child to inherit (`pass_fds`) and read to its
    end; None where there is no filter. Closed here when the body ends (the child has its copy)."""
    code = program()
    if code is None:
        yield None
        return
    read, write = os.pipe()
    try:
        with os.fdopen(write, "wb") as stream:  # a few hundred bytes: the pipe buffer holds them
            stream.write(code)
        yield read
    finally:
        os.close(read)
