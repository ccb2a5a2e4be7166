"""The seccomp filter itself (DESIGN 18, `sockets`): what it refuses and what it lets through.

On this host's kernel, in a child process that loads the filter as the Landlock script does; for
the other architectures the filter knows (i386, arm64, arm), through a small classic-BPF
evaluator that refuses what the kernel's checker refuses. The tests in `test_probing.py` go
through bubblewrap, which they skip where the filter makes the backend fail.

The evaluator's tests come first: a filter that refuses everything leaves the child on the
kernel unable even to exit, and a test run stopped at the first failure (`-x`) then ends sooner.
"""

from __future__ import annotations

import errno
import os
import platform
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from runner.workspace.sandbox.seccomp import filter_pipe, program

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux seccomp")

X32 = 0x40000000
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
ALLOW, ERRNO = 0x7FFF0000, 0x00050000
EACCES = ERRNO | errno.EACCES

# The kernel's numbers (AUDIT_ARCH_*, and each architecture's syscall table).
X86_64, I386, AARCH64, ARM = 0xC000003E, 0x40000003, 0xC00000B7, 0x40000028
IO_URING = (425, 426, 427)
SOCKET = {X86_64: 41, I386: 359, AARCH64: 198, ARM: 281}
OTHERS = {X86_64: (0, 1, 42, 53), I386: (3, 4, 362), AARCH64: (63, 64, 199, 203), ARM: (3, 283)}
"""Unrelated calls (read, write, connect, socketpair, ...), which pass whatever their argument."""
MACHINES = {"x86_64": (X86_64, I386), "aarch64": (AARCH64, ARM)}


def _evaluate(code: bytes, arch: int, nr: int, arg0: int) -> int:
    """The filter's return value for one call, refusing what the kernel's checker refuses
    (only the instructions the filter uses are known here)."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    insns = [struct.unpack("=HBBI", code[at : at + 8]) for at in range(0, len(code), 8)]
    assert 0 < len(insns) <= 4096
    accumulator, pc = 0, 0
    while True:
        op, jt, jf, k = insns[pc]
        if op == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            assert k % 4 == 0 and k + 4 <= len(data), f"load at {k}"
            (accumulator,) = struct.unpack_from("=I", data, k)
            pc += 1
        elif op == 0x15:  # BPF_JMP | BPF_JEQ | BPF_K
            pc += 1 + (jt if accumulator == k else jf)
        elif op == 0x06:  # BPF_RET | BPF_K
            return k
        else:
            raise AssertionError(f"instruction {op:#x} at {pc}")
        assert pc < len(insns), "ran past the end"


def _outcome(value: int) -> str:
    if value & 0xFFFF0000 == ALLOW:
        return "allow"
    assert value & 0xFFFF0000 == ERRNO, hex(value)
    return errno.errorcode[value & 0xFFFF]


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_each_architecture_refuses_unix_sockets_and_io_uring_and_nothing_else(
    machine: str,
) -> None:
    code = program(machine)
    assert code is not None
    for arch in MACHINES[machine]:
        socket_nrs = [SOCKET[arch]] + ([X32 | SOCKET[arch]] if arch == X86_64 else [])
        for nr in socket_nrs:
            for domain, expected in ((AF_UNIX, "EACCES"), (AF_INET, "allow"), (AF_INET6, "allow")):
                got = _outcome(_evaluate(code, arch, nr, domain))
                assert got == expected, (machine, hex(arch), nr, domain)
            assert _outcome(_evaluate(code, arch, nr, AF_NETLINK)) == "allow"
        refused = [*IO_URING, *([X32 | n for n in IO_URING] if arch == X86_64 else [])]
        refused += [102] if arch == I386 else []  # socketcall, whose arguments are hidden
        for nr in refused:
            for arg0 in (AF_UNIX, AF_INET, 0):
                assert _outcome(_evaluate(code, arch, nr, arg0)) == "EACCES", (hex(arch), nr)
        for nr in OTHERS[arch]:
            for arg0 in (AF_UNIX, AF_INET, 0):
                assert _outcome(_evaluate(code, arch, nr, arg0)) == "allow", (hex(arch), nr)


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_a_call_from_an_architecture_the_filter_does_not_know_is_refused(machine: str) -> None:
    code = program(machine)
    assert code is not None
    others = {X86_64, I386, AARCH64, ARM, 0xC000003F} - set(MACHINES[machine])
    for arch in others:
        for nr in (0, 41, 198):
            assert _outcome(_evaluate(code, arch, nr, AF_INET)) == "EACCES", hex(arch)


def test_the_host_machine_is_found_whatever_its_case() -> None:
    assert program("X86_64") == program("x86_64")
    assert program("AArch64") == program("aarch64")
    if platform.machine().lower() in MACHINES:
        assert program() == program(platform.machine().lower())


CHILD = """\
import ctypes, errno, os, socket, sys
from runner.workspace.sandbox import landlock
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
    sys.exit("no_new_privs")
landlock.load_filter(int(sys.argv[1]))
def attempt(label, make):
    try:
        make()
        print(label, "ok")
    except OSError as exc:
        print(label, errno.errorcode.get(exc.errno, exc.errno))
def raw(number, *args):
    if libc.syscall(number, *args) < 0:
        raise OSError(ctypes.get_errno(), "syscall")
attempt("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
attempt("unix-dgram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
attempt("inet", lambda: socket.socket(socket.AF_INET))
attempt("inet6", lambda: socket.socket(socket.AF_INET6))
attempt("pair", socket.socketpair)
attempt("x32-unix", lambda: raw(0x40000000 | 41, 1, 1, 0))
for number in (425, 426, 427):
    attempt(f"uring-{number}", lambda: raw(number, 1, None, 0, 0, 0, 0))
    attempt(f"x32-uring-{number}", lambda: raw(0x40000000 | number, 1, None, 0, 0, 0, 0))
"""


def _seccomp_here() -> bool:
    status = Path("/proc/self/status").read_text(encoding="utf-8")
    return platform.machine() == "x86_64" and "\nSeccomp:" in status


@pytest.mark.skipif(not _seccomp_here(), reason="the x86-64 kernel's seccomp")
def test_a_filtered_process_makes_no_unix_socket_and_every_other_kind() -> None:
    with filter_pipe() as fd:
        assert fd is not None
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(fd)],
            pass_fds=(fd,),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    seen = dict(line.split() for line in done.stdout.splitlines())
    assert seen.pop("unix") == seen.pop("unix-dgram") == "EACCES", done.stdout
    assert seen.pop("x32-unix") == "EACCES", done.stdout  # x32 calls are checked by number too
    assert seen.pop("inet") == seen.pop("inet6") == seen.pop("pair") == "ok", done.stdout
    # io_uring could make sockets without socket(): refused, x32's numbers too.
    assert set(seen.values()) == {"EACCES"} and len(seen) == 6, done.stdout


def test_the_pipe_holds_the_whole_filter_and_is_closed_after() -> None:
    with filter_pipe() as fd:
        if fd is None:
            pytest.skip("no filter for this machine")
        chunks = []
        while chunk := os.read(fd, 7):
            chunks.append(chunk)
    assert b"".join(chunks) == program()
    with pytest.raises(OSError):
        os.fstat(fd)


def test_a_machine_without_a_filter_gets_no_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    before = set(os.listdir("/proc/self/fd"))
    with filter_pipe() as fd:
        assert fd is None
    assert set(os.listdir("/proc/self/fd")) == before
