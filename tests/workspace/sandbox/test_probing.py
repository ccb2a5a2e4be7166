"""DESIGN 18 at the seam: the seccomp filter, the masked /tmp, and a probe that records only
what held (a bubblewrap argv without its dropped capabilities and filter is caught out)."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from runner.workspace import Sandbox, confine, probe, run_shell
from runner.workspace.sandbox import bwrap, probing, seccomp
from runner.workspace.sandbox.seccomp import program

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandboxes")

TRY_SOCKETS = """\
import socket, sys
def attempt(label, make):
    try:
        make()
        print(label, "ok")
    except OSError as exc:
        print(label, "refused", exc.errno)
attempt("beside", lambda: socket.socket(socket.AF_UNIX).connect(sys.argv[1]))
attempt("inside", lambda: socket.socket(socket.AF_UNIX).bind("inside.sock"))
attempt("pair", socket.socketpair)
attempt("tcp", lambda: socket.socket(socket.AF_INET).bind(("127.0.0.1", 0)))
"""


def _backend(name: str) -> Sandbox:
    found = probe(name)
    if found.backend != name:
        pytest.skip(f"{name} does not work here: {found.reason}")
    return Sandbox(found.backend, found.executable, Path("/"), Path("/"))


@pytest.fixture
def base() -> Iterator[Path]:
    # Short: a unix socket's path must fit in 108 bytes.
    with tempfile.TemporaryDirectory(prefix="ar-t-", dir="/tmp") as folder:
        root = Path(folder).resolve()
        for name in ("w", "sock", "scratch/home", "scratch/tmp"):
            (root / name).mkdir(parents=True)
        yield root


@contextmanager
def _listening(path: Path) -> Iterator[None]:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen(4)
        yield


def run_confined(sandbox: Sandbox, command: str, cwd: Path) -> str:
    """`command`'s output, run by `run_shell` in `sandbox` (also used by test_bwrap.py)."""

    async def run() -> str:
        with confine(sandbox):
            ran = await run_shell(
                command, cwd=cwd, env={"PATH": os.defpath}, input_bytes=b"", timeout_s=60
            )
        return ran.stdout + ran.stderr

    return anyio.run(run)


def test_the_filter_is_known_for_x86_64_and_arm64_only() -> None:
    for machine in ("x86_64", "aarch64"):
        code = program(machine)
        assert code is not None and len(code) % 8 == 0 and len(code) // 8 < 64
    assert program("riscv64") is None


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_a_command_reaches_no_unix_socket_yet_keeps_socketpairs(base: Path, backend: str) -> None:
    template = _backend(backend)
    # The socket's folder is bound back into the sandbox, and the network is on: only the
    # filter stands in the way, and it refuses unix sockets alone.
    sandbox = Sandbox(
        template.backend,
        template.executable,
        base / "w",
        base / "scratch",
        network=True,
        readable=(base / "sock",),
    )
    with _listening(base / "sock" / "a.sock"):
        output = run_confined(sandbox, f"python3 -c '{TRY_SOCKETS}' {base}/sock/a.sock", base / "w")
    assert "beside refused 13" in output, output
    assert "inside refused 13" in output, output  # the cost: none of its own either
    assert "pair ok" in output and "tcp ok" in output, output


def test_tmp_is_the_tasks_own_and_lasts_between_its_commands(base: Path) -> None:
    template = _backend("bwrap")
    sandbox = Sandbox(template.backend, template.executable, base / "w", base / "scratch")
    run_confined(sandbox, "echo kept > /tmp/note.txt", base / "w")
    assert (base / "scratch" / "tmp" / "note.txt").read_text(encoding="utf-8") == "kept\n"
    assert "kept" in run_confined(sandbox, "cat /tmp/note.txt; ls /run | wc -l", base / "w")
    assert not Path("/tmp/note.txt").exists() or "kept" not in Path("/tmp/note.txt").read_text()


@pytest.mark.skipif(os.getuid() != 0, reason="only root keeps capabilities in bubblewrap")
def test_the_probe_records_what_a_weaker_bwrap_lets_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    template = _backend("bwrap")
    assert probing._trial(template) == ()  # as built, everything holds

    @contextmanager
    def no_filter() -> Iterator[None]:
        yield None

    # The argv as it was before DESIGN 18: capabilities kept, no seccomp filter.
    monkeypatch.setattr(bwrap, "_capabilities", list)
    monkeypatch.setattr(probing, "filter_pipe", no_filter)
    missing = dict(probing._trial(template))
    assert sorted(missing) == ["caps", "fs", "sockets"], missing
    assert "remount" in missing["fs"] and "CapEff" in missing["caps"]


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_the_probe_records_a_filter_that_lets_datagrams_and_user_namespaces_through(
    monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """DESIGN 24: the trial sends a UDP datagram to a listener of the runner's, looks a name up
    and makes a user namespace; a filter that allows them is caught (Landlock shares the
    host's network, so the datagram arrives; bubblewrap's namespace has no route to it)."""
    template = _backend(backend)
    if program() is None:
        pytest.skip("no seccomp filter for this machine")
    held = probing._trial(template)
    assert "net" not in dict(held) and "caps" not in dict(held), held
    real = program

    def weaker(machine: str | None = None, *, network: bool = False) -> bytes | None:
        return real(machine, network=True)  # datagram sockets allowed, as before DESIGN 24

    monkeypatch.setattr(seccomp, "program", weaker)
    monkeypatch.setattr(seccomp, "_CLONE_NEWUSER", 0)  # and user namespaces too
    missing = dict(probing._trial(template))
    assert "user namespace was made" in missing.get("caps", ""), missing
    if backend == "landlock":
        assert "UDP datagram reached" in missing.get("net", ""), missing
    else:
        assert "net" not in missing, missing


def test_the_probe_records_a_dumpable_process_of_the_runners_inside_bwrap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """bubblewrap's own init (without `--as-pid-1`) ran as the runner's user, dumpable: the
    trial writes its memory, so `sockets` is not claimed."""
    template = _backend("bwrap")
    monkeypatch.setattr(
        bwrap, "_namespaces", lambda network: ["--unshare-pid", "--unshare-net"][: 2 - network]
    )
    missing = dict(probing._trial(template))
    assert "the memory of process 1 in the sandbox can be written" in missing["sockets"], missing
