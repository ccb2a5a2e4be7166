"""The seccomp filter every sandboxed command runs under (DESIGN 18 and 24).

What it refuses, and why a filter (not the backend) does it:

- **Unix sockets** (`sockets`). A unix socket is reached through the filesystem, and `connect()`
  works on a socket file the command can only read (a read-only bind mount, a Landlock read
  rule): neither mount namespaces nor Landlock (up to ABI 7) govern that `connect()`, and a
  filter cannot read the address it is given. So `socket(AF_UNIX, ...)` fails with EACCES.
  `socketpair()` stays allowed (a connected pair reaches nothing outside the command).
- **Datagram and raw sockets, when network is not `true`** (`net`). Landlock's network rules
  know TCP only, so UDP (a DNS query to the host's resolver is a way out) and raw or packet
  sockets are refused here: `AF_INET`/`AF_INET6` sockets other than TCP streams, and every
  family but those and `AF_NETLINK` (which the C library asks for the host's addresses), fail
  with EACCES: `AF_PACKET`, and `AF_VSOCK`, which reaches a virtual machine's host and which
  neither a network namespace nor Landlock confines. Under bubblewrap the network namespace
  already has no route; the filter is the same for both, so the record means the same.
- **User namespaces** (`caps`). `unshare(CLONE_NEWUSER)` and `clone(CLONE_NEWUSER)` fail with
  EPERM: inside one, a command holds every capability again over its own mounts
  (`unshare -rm sh -c 'mount -t tmpfs x /usr'`). `clone3()` takes its flags in memory a filter
  cannot read, so it answers ENOSYS, which makes the C library fall back to `clone()`.
- **Terminal injection.** `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)` fail with EACCES: bubblewrap's
  `--new-session` is not used (it would put the sandbox in a process group the runner's kill
  does not reach; `bwrap.py`), and these are what it guarded against.
- **io_uring**, whose `IORING_OP_SOCKET` makes sockets without `socket()`, and i386's
  `socketcall()`, whose arguments a filter cannot see: refused outright.

The filter is classic BPF for the host's architectures (x86-64 with i386 and x32, arm64 with
arm); elsewhere there is none and the probe records what that leaves open. bubblewrap loads it
with `--seccomp FD`; the Landlock script and the allowlist's forwarder read it from the same kind
of pipe and load it themselves.
"""

from __future__ import annotations

import contextlib
import errno
import os
import platform
import struct
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["filter_pipe", "program"]

_LD_W_ABS, _ALU_AND_K, _JEQ_K, _JSET_K, _RET_K = 0x20, 0x54, 0x15, 0x45, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_AF_UNIX, _AF_INET, _AF_INET6, _AF_NETLINK = 1, 2, 10, 16
_SOCK_TYPE_MASK, _SOCK_STREAM, _IPPROTO_TCP = 0xF, 1, 6
_CLONE_NEWUSER = 0x10000000
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
_NR, _ARCH = 0, 4  # offsets in struct seccomp_data
_ARGS = (16, 24, 32)  # the low halves of args[0..2] (little-endian)
_IO_URING = (425, 426, 427)  # setup, enter, register: the same numbers on every architecture
_CLONE3 = 435
_X32 = 0x40000000


@dataclass(frozen=True)
class _Arch:
    """One architecture (AUDIT_ARCH_*) and its syscall numbers."""

    audit: int
    socket: tuple[int, ...]
    clone: tuple[int, ...]
    """`clone` and `unshare`: their first argument holds the namespace flags."""
    ioctl: tuple[int, ...]
    clone3: tuple[int, ...]
    refused: tuple[int, ...]


def _x86_64() -> _Arch:
    native = _Arch(0xC000003E, (41,), (56, 272), (16,), (_CLONE3,), _IO_URING)
    return _Arch(  # x32 calls: the same numbers with the x32 bit (ioctl is 514 there)
        native.audit,
        (41, _X32 | 41),
        (56, 272, _X32 | 56, _X32 | 272),
        (16, _X32 | 16, _X32 | 514),
        (_CLONE3, _X32 | _CLONE3),
        (*_IO_URING, *(_X32 | nr for nr in _IO_URING)),
    )


_ARCHES: dict[str, tuple[_Arch, ...]] = {
    "x86_64": (
        _x86_64(),
        _Arch(0x40000003, (359,), (120, 310), (54,), (_CLONE3,), (102, *_IO_URING)),  # i386
    ),
    "aarch64": (
        _Arch(0xC00000B7, (198,), (220, 97), (29,), (_CLONE3,), _IO_URING),
        _Arch(0x40000028, (281,), (120, 337), (54,), (_CLONE3,), _IO_URING),  # arm on arm64
    ),
}

_Insn = tuple[int, "int | str", "int | str", int]
"""An instruction whose jump targets may be labels (resolved by `_assemble`)."""


def program(machine: str | None = None, *, network: bool = False) -> bytes | None:
    """The filter as `struct sock_filter` records for `machine` (default: this host's); with
    `network` (the task's network is `true`) inet sockets of every kind are allowed. None where
    the machine is not known."""
    arches = _ARCHES.get((machine or platform.machine()).lower())
    if arches is None:
        return None
    code: list[_Insn | str] = [(_LD_W_ABS, 0, 0, _ARCH)]
    code += [(_JEQ_K, f"arch{i}", 0, arch.audit) for i, arch in enumerate(arches)]
    code.append((_RET_K, 0, 0, _ERRNO | errno.EACCES))  # an unknown architecture: nothing
    for index, arch in enumerate(arches):
        code += [f"arch{index}", (_LD_W_ABS, 0, 0, _NR)]
        jumps = [(arch.socket, "socket"), (arch.clone, "clone"), (arch.ioctl, "ioctl")]
        jumps += [(arch.clone3, "enosys"), (arch.refused, "deny")]
        code += [(_JEQ_K, label, 0, nr) for numbers, label in jumps for nr in numbers]
        code.append((_RET_K, 0, 0, _ALLOW))
    code += ["socket", (_LD_W_ABS, 0, 0, _ARGS[0]), (_JEQ_K, "deny", 0, _AF_UNIX)]
    if network:
        code.append((_RET_K, 0, 0, _ALLOW))
    else:  # inet and netlink; every other family (packet, vsock, ...) refused
        code += [(_JEQ_K, "inet", 0, _AF_INET), (_JEQ_K, "inet", 0, _AF_INET6)]
        code += [(_JEQ_K, "allow", "deny", _AF_NETLINK)]
        # inet: a TCP stream (protocol 0 or IPPROTO_TCP) and nothing else
        code += ["inet", (_LD_W_ABS, 0, 0, _ARGS[1]), (_ALU_AND_K, 0, 0, _SOCK_TYPE_MASK)]
        code += [(_JEQ_K, 0, "deny", _SOCK_STREAM), (_LD_W_ABS, 0, 0, _ARGS[2])]
        code += [(_JEQ_K, "allow", 0, 0), (_JEQ_K, "allow", "deny", _IPPROTO_TCP)]
    code += ["clone", (_LD_W_ABS, 0, 0, _ARGS[0]), (_JSET_K, "eperm", "allow", _CLONE_NEWUSER)]
    code += ["ioctl", (_LD_W_ABS, 0, 0, _ARGS[1])]
    code += [(_JEQ_K, "deny", 0, _TIOCSTI), (_JEQ_K, "deny", "allow", _TIOCLINUX)]
    code += ["allow", (_RET_K, 0, 0, _ALLOW)]
    code += ["deny", (_RET_K, 0, 0, _ERRNO | errno.EACCES)]
    code += ["eperm", (_RET_K, 0, 0, _ERRNO | errno.EPERM)]
    code += ["enosys", (_RET_K, 0, 0, _ERRNO | errno.ENOSYS)]
    return _assemble(code)


def _assemble(code: list[_Insn | str]) -> bytes:
    """Labels (the strings) resolved to forward jump offsets, then packed."""
    labels: dict[str, int] = {}
    insns: list[_Insn] = []
    for item in code:
        if isinstance(item, str):
            labels[item] = len(insns)
        else:
            insns.append(item)

    def offset(at: int, target: int | str) -> int:
        if isinstance(target, int):
            return target
        jump = labels[target] - at - 1
        assert 0 <= jump < 256, f"jump to {target} out of range"
        return jump

    return b"".join(
        struct.pack("=HBBI", op, offset(at, jt), offset(at, jf), k)
        for at, (op, jt, jf, k) in enumerate(insns)
    )


@contextlib.contextmanager
def filter_pipe(network: bool = False) -> Iterator[int | None]:
    """A pipe's read end holding the filter (`network` as in `program`), for a child to
    inherit (`pass_fds`) and read to its end; None where there is no filter. Closed here when
    the body ends (the child has its copy)."""
    code = program(network=network)
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
