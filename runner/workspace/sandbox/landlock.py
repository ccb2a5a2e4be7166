"""Run a command under Landlock: `python -I -S landlock.py [OPTIONS] -- COMMAND ARGS...`.

The sandbox's second backend (`backends` beside it), for hosts where bubblewrap cannot make
namespaces (a container without `--privileged`, a kernel that restricts user namespaces).
Landlock is a kernel feature any process may use on itself: this script restricts itself with
the syscalls `landlock_create_ruleset`, `landlock_add_rule` and `landlock_restrict_self`, then
`exec`s the command, which inherits the restriction for good (so do its children). Before the
exec it also drops every capability (a root runner's too) and loads the seccomp filter the runner
hands it on `--seccomp-fd` (no unix sockets: `seccomp.py` beside it).

Rules: every path readable (and executable) but the `--hide` folders (the runner's HOME), whose
siblings are granted one by one since Landlock can only allow; `--read` folders inside a hidden
one readable again; full access beneath `--write`
folders; `/dev/null` and its kind writable. `--no-network` denies TCP bind and connect where the
kernel's Landlock ABI has network rules (4 and up); ABI 6 and up also scope signals and abstract
unix sockets, so the command cannot signal the runner. Landlock also forbids ptrace (and so
reading `/proc/PID/environ`) of any process outside the command's own domain.

It runs by path with `-I -S`, so it imports only the standard library: no runner package, no
site-packages, no environment variables of Python's. On any failure it exits 125 without running
the command: an unconfined run is never the fallback here.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys

__all__ = ["abi_version", "load_filter", "main", "readable_roots"]

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP, _PR_SET_SECCOMP = 38, 24, 22
_SECCOMP_MODE_FILTER = 2
_CAPABILITY_VERSION_3 = 0x20080522

_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_DIR_ONLY = sum(1 << bit for bit in range(4, 13))  # remove_*, make_*: rights on folders only
_REFER, _TRUNCATE = 1 << 13, 1 << 14  # ABI 2 and ABI 3
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

_READ = _EXECUTE | _READ_FILE | _READ_DIR
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
FAILED_EXIT = 125
_PROXY_PORTS: list[int] = []
"""`--proxy-port`: the allowlist proxy's TCP port, the only one commands may connect to."""
_L = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


class _FilterProgram(ctypes.Structure):  # struct sock_fprog
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is off or absent."""
    try:
        version = int(
            _libc().syscall(_L(_CREATE_RULESET), None, _L(0), _L(_CREATE_RULESET_VERSION))
        )
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


def readable_roots(hidden: list[str]) -> list[str]:
    """Folders and files that together cover the whole tree but the `hidden` folders: each
    ancestor of a hidden folder is replaced by its entries, the way toward it expanded again."""
    roots = ["/"]
    for hide in hidden:
        roots = [kept for root in roots for kept in _without(root, hide)]
    return roots


def _inside(path: str, folder: str) -> bool:
    return folder in ("/", path) or path.startswith(folder.rstrip("/") + "/")


def _without(root: str, hide: str) -> list[str]:
    if root == hide:
        return []
    if not _inside(hide, root):
        return [root]
    try:
        entries = sorted(entry.path for entry in os.scandir(root))
    except OSError:
        return []
    return [kept for entry in entries for kept in _without(entry, hide)]


def _parse(argv: list[str]) -> tuple[list[str], list[str], list[str], bool, list[str], int]:
    hidden: list[str] = []
    readable: list[str] = []
    writable: list[str] = []
    network = True
    filter_fd = -1
    index = 0
    while index < len(argv) and argv[index] != "--":
        option = argv[index]
        if option == "--no-network":
            network = False
            index += 1
            continue
        if option == "--seccomp-fd" and index + 1 < len(argv):
            filter_fd = int(argv[index + 1])
            index += 2
            continue
        if option == "--proxy-port" and index + 1 < len(argv) and argv[index + 1].isdigit():
            _PROXY_PORTS.append(int(argv[index + 1]))  # connect to it only (DESIGN 19)
            index += 2
            continue
        lists = {"--hide": hidden, "--read": readable, "--write": writable}
        if option not in lists or index + 1 >= len(argv):
            raise ValueError(f"unknown option {option!r}")
        lists[option].append(os.path.normpath(argv[index + 1]))
        index += 2
    command = argv[index + 1 :]
    if not command:
        raise ValueError("no command after --")
    return hidden, readable, writable, network, command, filter_fd


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def _add_path(
    libc: ctypes.CDLL, ruleset: int, path: str, access: int, handled: int, follow: bool = True
) -> None:
    """Allow `access` beneath `path`. A sibling of the way to a hidden folder is not followed
    when it is a symlink: `/tmp/pytest-current` -> a folder that holds the hidden HOME."""
    flags = os.O_PATH | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError:
        return  # gone or unreadable: nothing to allow
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE  # the rights a file takes
        rule = _PathBeneathAttr(access & handled, fd)
        code = libc.syscall(
            _L(_ADD_RULE), _L(ruleset), _L(_RULE_PATH_BENEATH), ctypes.byref(rule), _L(0)
        )
        _check(code, str(path))
    finally:
        os.close(fd)


def restrict(hidden: list[str], readable: list[str], writable: list[str], network: bool) -> None:
    """Restrict this process (and whatever it execs) to the rules above."""
    abi = abi_version()
    if abi < 1:
        raise OSError("Landlock is not available in this kernel")
    libc = _libc()
    handled = _READ | _WRITE_FILE | _DIR_ONLY | (_REFER if abi >= 2 else 0)
    handled |= _TRUNCATE if abi >= 3 else 0
    attr = _RulesetAttr(handled, 0, 0)
    if not network and abi >= 4:
        attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP
    if abi >= 6:
        attr.scoped = _SCOPE_SIGNAL | (0 if network else _SCOPE_ABSTRACT_UNIX)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    code = libc.syscall(_L(_CREATE_RULESET), ctypes.byref(attr), _L(size), _L(0))
    ruleset = _check(code, "create_ruleset")
    try:
        for port in _PROXY_PORTS if attr.handled_access_net else ():
            rule = _NetPortAttr(_NET_CONNECT_TCP, port)
            code = libc.syscall(
                _L(_ADD_RULE), _L(ruleset), _L(_RULE_NET_PORT), ctypes.byref(rule), _L(0)
            )
            _check(code, f"connect to port {port}")
        for root in readable_roots(hidden):
            _add_path(libc, ruleset, root, _READ, handled, follow=root == "/" or not hidden)
        for folder in readable:
            _add_path(libc, ruleset, folder, _READ, handled)
        for device in _DEVICES:
            _add_path(libc, ruleset, device, _READ_FILE | _WRITE_FILE | _TRUNCATE, handled)
        for folder in writable:
            _add_path(libc, ruleset, folder, handled, handled)
        _check(libc.prctl(_L(_PR_SET_NO_NEW_PRIVS), _L(1), _L(0), _L(0), _L(0)), "no_new_privs")
        _check(libc.syscall(_L(_RESTRICT_SELF), _L(ruleset), _L(0)), "restrict_self")
    finally:
        os.close(ruleset)


def drop_capabilities() -> None:
    """Drop every capability, from the bounding set too, so that a root command does not get
    them back at exec: without CAP_SYS_PTRACE, root cannot read the non-dumpable runner's
    `/proc/PID/environ` (Landlock does not stop that read)."""
    libc = _libc()
    for cap in range(64):
        if libc.prctl(_L(_PR_CAPBSET_DROP), _L(cap), _L(0), _L(0), _L(0)) < 0:
            if ctypes.get_errno() == errno.EINVAL:  # past the last capability of this kernel
                break
            if ctypes.get_errno() != errno.EPERM:  # EPERM: not ours to drop (not root)
                _check(-1, "PR_CAPBSET_DROP")
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable; twice (64 bits)
    _check(libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")


def load_filter(fd: int) -> None:
    """Load the seccomp filter the runner wrote to pipe `fd` (`seccomp.py`: no unix sockets),
    and close it. no_new_privs is already set (`restrict`)."""
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    code = b"".join(chunks)
    if not code or len(code) % 8 or len(code) // 8 > 4096:
        raise OSError(f"not a seccomp filter ({len(code)} bytes)")
    buffer = ctypes.create_string_buffer(code, len(code))
    program = _FilterProgram(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    code_ = _libc().prctl(
        _L(_PR_SET_SECCOMP), _L(_SECCOMP_MODE_FILTER), ctypes.byref(program), _L(0), _L(0)
    )
    _check(code_, "seccomp")


def main(argv: list[str]) -> int:
    """Restrict, then exec the command; 125 with a message when that cannot be done."""
    try:
        hidden, readable, writable, network, command, filter_fd = _parse(argv)
        restrict(hidden, readable, writable, network)
        drop_capabilities()
        if filter_fd >= 0:
            load_filter(filter_fd)
        os.execvp(command[0], command)
    except (OSError, ValueError) as exc:
        print(f"agent-runner sandbox (landlock): {exc}; the command did not run", file=sys.stderr)
    return FAILED_EXIT


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
