"""The seccomp filter itself (DESIGN 18 and 24): what it refuses and what it lets through
(unix sockets; datagram, raw and packet sockets without network; user namespaces; TIOCSTI).

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
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET = 1, 2, 10, 16, 17
SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET = 1, 2, 3, 5
SOCK_NONBLOCK_CLOEXEC = 0o4000 | 0o2000000
IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP, IPPROTO_MPTCP = 6, 17, 132, 262
CLONE_NEWUSER, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x00020000, 17
TIOCSTI, TIOCLINUX, TCGETS = 0x5412, 0x541C, 0x5401
ALLOW, ERRNO = 0x7FFF0000, 0x00050000
EACCES = ERRNO | errno.EACCES

# The kernel's numbers (AUDIT_ARCH_*, and each architecture's syscall table).
X86_64, I386, AARCH64, ARM = 0xC000003E, 0x40000003, 0xC00000B7, 0x40000028
IO_URING = (425, 426, 427)
SOCKET = {X86_64: 41, I386: 359, AARCH64: 198, ARM: 281}
CLONE = {X86_64: (56, 272), I386: (120, 310), AARCH64: (220, 97), ARM: (120, 337)}
"""`clone` and `unshare`."""
IOCTL = {X86_64: (16,), I386: (54,), AARCH64: (29,), ARM: (54,)}
CLONE3 = 435
OTHERS = {X86_64: (0, 1, 42, 53), I386: (3, 4, 362), AARCH64: (63, 64, 199, 203), ARM: (3, 283)}
"""Unrelated calls (read, write, connect, socketpair, ...), which pass whatever their argument."""
MACHINES = {"x86_64": (X86_64, I386), "aarch64": (AARCH64, ARM)}


def _evaluate(code: bytes, arch: int, nr: int, *args: int) -> int:
    """The filter's return value for one call, refusing what the kernel's checker refuses
    (only the instructions the filter uses are known here)."""
    padded = (*args, *(0,) * (6 - len(args)))
    data = struct.pack("=iIQ6Q", nr, arch, 0, *padded)
    insns = [struct.unpack("=HBBI", code[at : at + 8]) for at in range(0, len(code), 8)]
    assert 0 < len(insns) <= 4096
    accumulator, pc = 0, 0
    while True:
        op, jt, jf, k = insns[pc]
        if op == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            assert k % 4 == 0 and k + 4 <= len(data), f"load at {k}"
            (accumulator,) = struct.unpack_from("=I", data, k)
            pc += 1
        elif op == 0x54:  # BPF_ALU | BPF_AND | BPF_K
            accumulator &= k
            pc += 1
        elif op == 0x15:  # BPF_JMP | BPF_JEQ | BPF_K
            pc += 1 + (jt if accumulator == k else jf)
        elif op == 0x45:  # BPF_JMP | BPF_JSET | BPF_K
            pc += 1 + (jt if accumulator & k else jf)
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


def _socket_nrs(arch: int) -> list[int]:
    return [SOCKET[arch]] + ([X32 | SOCKET[arch]] if arch == X86_64 else [])


# (domain, type, protocol) -> with network off, with network on
SOCKETS = {
    (AF_UNIX, SOCK_STREAM, 0): ("EACCES", "EACCES"),
    (AF_UNIX, SOCK_DGRAM, 0): ("EACCES", "EACCES"),
    (AF_INET, SOCK_STREAM, 0): ("allow", "allow"),
    (AF_INET, SOCK_STREAM | SOCK_NONBLOCK_CLOEXEC, IPPROTO_TCP): ("allow", "allow"),
    (AF_INET6, SOCK_STREAM, IPPROTO_TCP): ("allow", "allow"),
    (AF_INET, SOCK_DGRAM, 0): ("EACCES", "allow"),
    (AF_INET, SOCK_DGRAM | SOCK_NONBLOCK_CLOEXEC, IPPROTO_UDP): ("EACCES", "allow"),
    (AF_INET6, SOCK_DGRAM, 0): ("EACCES", "allow"),
    (AF_INET, SOCK_RAW, 1): ("EACCES", "allow"),
    (AF_INET6, SOCK_RAW, 58): ("EACCES", "allow"),
    (AF_INET, SOCK_SEQPACKET, IPPROTO_SCTP): ("EACCES", "allow"),
    (AF_INET, SOCK_STREAM, IPPROTO_SCTP): ("EACCES", "allow"),  # Landlock knows TCP only
    (AF_INET6, SOCK_STREAM, IPPROTO_MPTCP): ("EACCES", "allow"),
    (AF_PACKET, SOCK_RAW, 0x0300): ("EACCES", "allow"),
    (AF_PACKET, SOCK_DGRAM, 0): ("EACCES", "allow"),
    (AF_NETLINK, SOCK_DGRAM, 0): ("allow", "allow"),
}


@pytest.mark.parametrize("network", [False, True])
@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_each_architecture_refuses_unix_and_non_tcp_inet_sockets_and_io_uring(
    machine: str, network: bool
) -> None:
    code = program(machine, network=network)
    assert code is not None
    for arch in MACHINES[machine]:
        for nr in _socket_nrs(arch):
            for (domain, kind, protocol), expected in SOCKETS.items():
                got = _outcome(_evaluate(code, arch, nr, domain, kind, protocol))
                want = expected[1] if network else expected[0]
                assert got == want, (machine, hex(arch), nr, domain, kind, protocol, network)
        refused = [*IO_URING, *([X32 | n for n in IO_URING] if arch == X86_64 else [])]
        refused += [102] if arch == I386 else []  # socketcall, whose arguments are hidden
        for nr in refused:
            for arg0 in (AF_UNIX, AF_INET, 0):
                assert _outcome(_evaluate(code, arch, nr, arg0)) == "EACCES", (hex(arch), nr)
        for nr in OTHERS[arch]:
            for arg0 in (AF_UNIX, AF_INET, 0):
                assert _outcome(_evaluate(code, arch, nr, arg0, 2, 0)) == "allow", (hex(arch), nr)


@pytest.mark.parametrize("network", [False, True])
@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_without_network_every_socket_family_but_inet_and_netlink_is_refused(
    machine: str, network: bool
) -> None:
    # Families are an open list (vsock reaches a virtual machine's host; new ones come with
    # kernels): the filter names what it allows, so every family it does not know is refused.
    code = program(machine, network=network)
    assert code is not None
    allowed = (
        {AF_INET, AF_INET6, AF_NETLINK}
        if not network
        else {*range(64), 1 << 28, 0xFFFFFFFF} - {AF_UNIX}
    )
    for arch in MACHINES[machine]:
        for nr in _socket_nrs(arch):
            for family in [*range(64), 1 << 28, 0xFFFFFFFF]:  # numbers no kernel knows, too
                got = _outcome(_evaluate(code, arch, nr, family, SOCK_STREAM, 0))
                want = "allow" if family in allowed else "EACCES"
                assert got == want, (machine, hex(arch), nr, family, network)


@pytest.mark.parametrize("network", [False, True])
@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_each_architecture_refuses_user_namespaces_and_terminal_injection(
    machine: str, network: bool
) -> None:
    code = program(machine, network=network)
    assert code is not None
    for arch in MACHINES[machine]:
        x32 = [X32] if arch == X86_64 else []
        for nr in [base | bit for base in CLONE[arch] for bit in (0, *x32)]:
            for flags in (CLONE_NEWUSER, CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD, 0xFFFFFFFF):
                assert _outcome(_evaluate(code, arch, nr, flags)) == "EPERM", (hex(arch), nr)
            for flags in (SIGCHLD, CLONE_NEWNS, 0x003D0F00):  # fork; a thread's flags
                assert _outcome(_evaluate(code, arch, nr, flags)) == "allow", (hex(arch), nr)
        for nr in [CLONE3, *(X32 | CLONE3 for _ in x32)]:  # flags in memory: "not here" instead
            assert _outcome(_evaluate(code, arch, nr, 0, 88)) == "ENOSYS", hex(arch)
        ioctls = [*IOCTL[arch], *([X32 | 16, X32 | 514] if x32 else [])]
        for nr in ioctls:
            for request in (TIOCSTI, TIOCLINUX):
                assert _outcome(_evaluate(code, arch, nr, 0, request)) == "EACCES", hex(arch)
            assert _outcome(_evaluate(code, arch, nr, 0, TCGETS)) == "allow", hex(arch)


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
import ctypes, errno, fcntl, os, socket, sys
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
def forked(call):
    child = os.fork()
    if child == 0:
        os._exit(0 if call() == 0 else ctypes.get_errno())
    code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    if code:
        raise OSError(code, "in the child")
attempt("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
attempt("unix-dgram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
attempt("inet", lambda: socket.socket(socket.AF_INET))
attempt("inet6", lambda: socket.socket(socket.AF_INET6))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
attempt("udp6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM))
attempt("packet", lambda: socket.socket(17, socket.SOCK_RAW, 0))
attempt("vsock", lambda: socket.socket(40, socket.SOCK_STREAM))  # a virtual machine's host
attempt("netlink", lambda: socket.socket(16, socket.SOCK_RAW, 0))  # the C library's addresses
attempt("pair", socket.socketpair)
attempt("x32-unix", lambda: raw(0x40000000 | 41, 1, 1, 0))
attempt("userns", lambda: forked(lambda: libc.unshare(0x10000000)))
attempt("clone3", lambda: raw(435, None, 0))
def thread():  # a thread that prints nothing: its output would split another line
    started = __import__("threading").Thread(target=int)
    started.start()
    started.join()
attempt("thread", thread)
attempt("subprocess", lambda: __import__("subprocess").run(["true"], check=True))
master, slave = os.openpty()
attempt("tiocsti", lambda: fcntl.ioctl(slave, 0x5412, b"x"))
attempt("tcgets", lambda: fcntl.ioctl(slave, 0x5401, bytes(64)))
for number in (425, 426, 427):
    attempt(f"uring-{number}", lambda: raw(number, 1, None, 0, 0, 0, 0))
    attempt(f"x32-uring-{number}", lambda: raw(0x40000000 | number, 1, None, 0, 0, 0, 0))
"""


def _seccomp_here() -> bool:
    status = Path("/proc/self/status").read_text(encoding="utf-8")
    return platform.machine() == "x86_64" and "\nSeccomp:" in status


@pytest.mark.skipif(not _seccomp_here(), reason="the x86-64 kernel's seccomp")
@pytest.mark.parametrize("network", [False, True])
def test_a_filtered_process_makes_only_the_sockets_and_namespaces_it_may(network: bool) -> None:
    with filter_pipe(network) as fd:
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
    seen = dict(line.split() for line in done.stdout.splitlines() if len(line.split()) == 2)
    assert seen.pop("unix") == seen.pop("unix-dgram") == "EACCES", done.stdout
    assert seen.pop("x32-unix") == "EACCES", done.stdout  # x32 calls are checked by number too
    assert seen.pop("inet") == seen.pop("inet6") == seen.pop("pair") == "ok", done.stdout
    udp, packet = {seen.pop("udp"), seen.pop("udp6")}, seen.pop("packet")
    if network:  # a packet socket is then CAP_NET_RAW's business (EPERM without it)
        assert udp == {"ok"} and packet in ("ok", "EPERM"), done.stdout
    else:  # no UDP (a DNS query is one) and no packet socket
        assert udp == {"EACCES"} and packet == "EACCES", done.stdout
    # The kernel's own answer with network (EAFNOSUPPORT where no vsock module is loaded); the
    # filter's without: no way to the hypervisor's host, which no namespace confines.
    assert (seen.pop("vsock") == "EACCES") is not network, done.stdout
    assert seen.pop("netlink") == "ok", done.stdout
    assert seen.pop("userns") == "EPERM", done.stdout  # `unshare -r`
    assert seen.pop("clone3") == "ENOSYS", done.stdout
    # ...and threads and subprocesses still start (the C library falls back to clone)
    assert seen.pop("thread") == seen.pop("subprocess") == seen.pop("tcgets") == "ok", done.stdout
    assert seen.pop("tiocsti") == "EACCES", done.stdout
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
