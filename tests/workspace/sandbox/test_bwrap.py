"""The bubblewrap argv (DESIGN 15 and 18) as a command sees it: the masked folders, a hidden
HOME with what is bound back into it, the network switch, the working folder."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.workspace import Sandbox, probe
from runner.workspace.sandbox.bwrap import masked_roots
from tests.workspace.sandbox.test_probing import run_confined

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandboxes")


def _bwrap() -> tuple[str, str]:
    """The probe's bwrap; a skip only where bubblewrap itself cannot run here (so an argv of the
    runner's that bubblewrap refuses fails the tests instead of skipping them)."""
    system = shutil.which("bwrap")
    plain = [system or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if system is None or subprocess.run([*plain, "--unshare-pid", "true"], check=False).returncode:
        pytest.skip("bubblewrap does not run here")
    found = probe("bwrap")
    assert found.backend == "bwrap", found.reason
    return "bwrap", found.executable


@pytest.fixture
def marker() -> str:
    return f"ar-bwrap-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def host_files(marker: str) -> Iterator[list[Path]]:
    """A file of the host's in each masked folder (/var/tmp, /run) that exists here."""
    made = []
    for folder in (Path("/var/tmp"), Path("/run")):
        if folder.is_dir() and os.access(folder, os.W_OK):
            (folder / marker).write_text("host\n", encoding="utf-8")
            made.append(folder / marker)
    if not made:
        pytest.skip("neither /var/tmp nor /run is writable here")
    yield made
    for path in made:
        path.unlink(missing_ok=True)


def _layout(base: Path) -> dict[str, Path]:
    """A project folder holding the runner's HOME, which holds a toolchain and the workdir."""
    where = {
        "project": base / "project",
        "home": base / "project" / "home",
        "tool": base / "project" / "home" / ".tool",
        "work": base / "project" / "home" / "w",
        "scratch": base / "scratch",
    }
    for name in ("tool", "work"):
        where[name].mkdir(parents=True)
    for name in ("scratch/home", "scratch/tmp"):
        (base / name).mkdir(parents=True)
    (where["project"] / "readme").write_text("project\n", encoding="utf-8")
    (where["home"] / "secret").write_text("api-key\n", encoding="utf-8")
    (where["tool"] / "tool").write_text("tool\n", encoding="utf-8")
    return where


_LOOK = """\
pwd
cat {project}/readme {tool}/tool
ls -A {home}
cat {home}/secret && echo SECRET READ
touch {project}/x && echo PROJECT WRITTEN
touch {tool}/x && echo TOOL WRITTEN
touch {work}/mine && echo WORK WRITTEN
"""


def _check_layout(where: dict[str, Path], output: str) -> None:
    lines = output.splitlines()
    assert lines[0] == str(where["work"]), output  # the command runs in its working folder
    assert lines[1:3] == ["project", "tool"], output  # the readable folders are readable
    assert sorted(lines[3:5]) == [".tool", "w"], output  # HOME shows only what is bound back
    assert "SECRET READ" not in output and "api-key" not in output, output
    assert "PROJECT WRITTEN" not in output and "TOOL WRITTEN" not in output, output
    assert "WORK WRITTEN" in output and (where["work"] / "mine").exists(), output
    assert not (where["project"] / "x").exists() and not (where["tool"] / "x").exists()


def _sandbox(where: dict[str, Path], *, project: bool = True) -> Sandbox:
    backend, executable = _bwrap()
    return Sandbox(
        backend,
        executable,
        where["work"],
        where["scratch"],
        hidden=(where["home"],),
        readable=(where["project"], where["tool"]) if project else (where["tool"],),
    )


def test_the_masked_folders_show_none_of_the_hosts_files_and_keep_none(
    host_files: list[Path], marker: str, tmp_path: Path
) -> None:
    (tmp_path / "w").mkdir()
    for name in ("home", "tmp"):
        (tmp_path / "scratch" / name).mkdir(parents=True)
    backend, executable = _bwrap()
    sandbox = Sandbox(backend, executable, tmp_path / "w", tmp_path / "scratch")
    folders = " ".join(str(path.parent) for path in host_files)
    command = (
        f"ls -A {folders}; for f in {folders}; do echo inside > $f/{marker}-in && echo wrote; done"
    )
    output = run_confined(sandbox, command, tmp_path / "w")
    assert marker not in output.replace(f"{marker}-in", ""), output
    assert output.count("wrote") == len(host_files), output  # an empty tmpfs, writable
    assert not any(path.with_name(f"{marker}-in").exists() for path in host_files)


def test_a_hidden_home_under_a_masked_folder_shows_only_what_is_bound_back() -> None:
    # /tmp is masked: the project folder is bound back over the mask, then HOME inside it hidden.
    with tempfile.TemporaryDirectory(prefix="ar-t-", dir="/tmp") as folder:
        where = _layout(Path(folder).resolve())
        look = _LOOK.format(**where)
        _check_layout(where, run_confined(_sandbox(where), look, where["work"]))


@pytest.mark.parametrize("project", [True, False])
def test_a_hidden_home_outside_the_masked_folders_shows_only_what_is_bound_back(
    project: bool,
) -> None:
    # Beside the runner's own HOME (/tmp, /run and /dev are all masked or made anew).
    home = Path.home().resolve()
    if any(home.is_relative_to(root) for root in masked_roots()) or not os.access(home, os.W_OK):
        pytest.skip("HOME is masked or not writable here")
    with tempfile.TemporaryDirectory(prefix=".ar-t-", dir=home) as folder:
        where = _layout(Path(folder).resolve())
        look = _LOOK.format(**where)
        _check_layout(where, run_confined(_sandbox(where, project=project), look, where["work"]))


@pytest.mark.parametrize("network", [False, True])
def test_the_network_is_there_only_when_it_is_on(tmp_path: Path, network: bool) -> None:
    (tmp_path / "w").mkdir()
    for name in ("home", "tmp"):
        (tmp_path / "scratch" / name).mkdir(parents=True)
    backend, executable = _bwrap()
    sandbox = Sandbox(backend, executable, tmp_path / "w", tmp_path / "scratch", network=network)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        connect = (
            "import socket\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=10).close()\n"
            "    print('connected')\n"
            "except OSError as exc:\n"
            "    print('refused', exc)\n"
        )
        output = run_confined(sandbox, f'python3 -c "{connect}"', tmp_path / "w")
    assert ("connected" in output) is network, output


_RESOLVER_CHILD = """\
import os, sys
from pathlib import Path
import anyio
from runner.workspace import Sandbox, confine, probe, run_shell
base, network = Path(sys.argv[1]), sys.argv[2] == "on"
found = probe("bwrap")
assert found.backend == "bwrap", found.reason
sandbox = Sandbox("bwrap", found.executable, base / "w", base / "scratch", network=network)
async def run():
    with confine(sandbox):
        ran = await run_shell('cat /etc/resolv.conf; echo "run:[$(ls -A /run)]"', cwd=base / "w",
                              env={"PATH": os.defpath}, input_bytes=b"", timeout_s=60)
    print(ran.stdout + ran.stderr)
anyio.run(run)
"""


@pytest.mark.skipif(os.getuid() != 0, reason="a mount namespace of its own needs root")
@pytest.mark.parametrize(
    ("network", "written", "seen"),
    [("on", True, "nameserver 192.0.2.53"), ("off", True, "run:[]"), ("on", False, "run:[]")],
)
def test_a_resolver_under_run_is_bound_back_only_with_the_network(
    tmp_path: Path, network: str, written: bool, seen: str
) -> None:
    """systemd-resolved's /etc/resolv.conf points under /run, which is masked: with the network
    on it is bound back (where it exists), and /run stays empty otherwise."""
    if not Path("/run").is_dir() or shutil.which("unshare") is None:
        pytest.skip("no /run or no unshare here")
    resolver = Path("/run") / f"ar-t-{uuid.uuid4().hex[:12]}"
    etc = tmp_path / "etc"  # this test's /etc: only the link to the resolver
    etc.mkdir()
    (etc / "resolv.conf").symlink_to(resolver / "resolv.conf")
    (tmp_path / "w").mkdir()
    for name in ("home", "tmp"):
        (tmp_path / "scratch" / name).mkdir(parents=True)
    if written:
        resolver.mkdir()
        (resolver / "resolv.conf").write_text("nameserver 192.0.2.53\n", encoding="utf-8")
    try:
        done = subprocess.run(
            [
                "unshare",
                "-m",
                "--propagation",
                "private",
                "sh",
                "-c",
                'mount --bind "$0" /etc && exec "$@"',
                str(etc),
                sys.executable,
                "-c",
                _RESOLVER_CHILD,
                str(tmp_path),
                network,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        shutil.rmtree(resolver, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert seen in done.stdout, done.stdout
    if seen == "run:[]":
        assert "nameserver" not in done.stdout, done.stdout


@pytest.mark.skipif(probe("bwrap").backend != "bwrap", reason="bwrap does not work here")
def test_locked_paths_are_read_only_and_pinned_ones_cannot_be_renamed(tmp_path: Path) -> None:
    work = tmp_path / "w"
    (work / "locked").mkdir(parents=True)
    (work / "pinned").mkdir()
    (work / "file").write_text("x\n", encoding="utf-8")
    (tmp_path / "scratch" / "tmp").mkdir(parents=True)
    sandbox = Sandbox(
        "bwrap",
        str(probe("bwrap").executable),
        work,
        tmp_path / "scratch",
        locked=(work / "locked", work / "file", work / "missing"),
        pinned=(work / "pinned",),
    )
    script = (
        "touch locked/x 2>/dev/null && echo WROTE-LOCKED;"
        " { echo y >> file; } 2>/dev/null && echo WROTE-FILE;"
        " mv locked gone 2>/dev/null && echo MOVED-LOCKED;"
        " mv pinned gone 2>/dev/null && echo MOVED-PINNED;"
        " touch pinned/x && echo WROTE-PINNED; touch other && echo WROTE-OTHER"
    )
    assert run_confined(sandbox, script, work).split() == ["WROTE-PINNED", "WROTE-OTHER"]
