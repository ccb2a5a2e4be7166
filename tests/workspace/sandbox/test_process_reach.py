"""Nothing of the runner's inside the sandbox is the command's to read, trace or alter, and the
command makes no user namespace and sends no datagram (DESIGN 24), as root and as another user.

A harness plays the runner as the given user: it makes the task's private folder under a path
of 200 characters (a long TMPDIR), listens there as the allowlist proxy does, and runs a command
as a task's run (`Sandbox.argv`, the seccomp pipe). The command then tries what a hostile one
would: write the memory of every process it can see (`/proc/N/mem`; the relay's holds the
proxy socket's path, bubblewrap's init ran dumpable), `unshare -r` and `unshare -rm` with a
mount over `/usr`, a UDP datagram, a DNS lookup; and it reaches the proxy through the relay.
As root the harness runs as it is; as `nobody`, with the system's Python (the test's may live
in root's HOME), which gets the runner's packages on PYTHONPATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.workspace import probe

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandboxes")

REPO = Path(__file__).resolve().parents[3]

HARNESS = """\
import os, socket, subprocess, sys, threading
from pathlib import Path
from runner.workspace import NetPath, Sandbox, interpreter_dirs, probe
from runner.workspace.sandbox import netpath
from runner.workspace.sandbox.proxy import unix_listener
from runner.workspace.sandbox.seccomp import filter_pipe
backend, base, python = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
netpath._PYTHON = python  # the forwarder's interpreter: one this user may run
scratch = base / ("s" * 120) / ("t" * 80)
for folder in (scratch / "tmp", scratch / "home", base / "w"):
    folder.mkdir(parents=True)
(base / "w" / "attack.py").write_text(sys.stdin.read())
found = probe(backend)
if found.backend != backend:
    sys.exit(f"SKIP {backend}: {found.reason}")
listener = unix_listener(scratch / "proxy.sock")
def serve():
    conn, _ = listener.accept()
    conn.recv(100)
    conn.sendall(b"PROXY-ANSWERED")
    conn.close()
threading.Thread(target=serve, daemon=True).start()
relay = NetPath(scratch / "proxy.sock", 0, "tok3n") if backend == "bwrap" else None
executable = found.executable if backend == "bwrap" else python
readable = interpreter_dirs() if relay else ()  # as the task's allowlist makes it
sandbox = Sandbox(backend, executable, base / "w", scratch, readable=readable, proxy=relay)
print("SANDBOX", backend, "missing:", ",".join(name for name, _ in found.missing) or "-")
with filter_pipe() as fd:
    argv = sandbox.argv(["/bin/sh", "-c", "python3 attack.py"], base / "w", fd)
    done = subprocess.run(argv, cwd=base / "w", env=sandbox.env({"PATH": os.defpath}),
                          capture_output=True, text=True, timeout=120, pass_fds=(fd,),
                          start_new_session=True)
print(done.stdout + done.stderr)
"""

ATTACK = """\
import os, socket, subprocess
me = os.getpid()
for entry in sorted(os.listdir("/proc")):
    if not entry.isdigit() or int(entry) == me:
        continue
    try:
        command = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\\0", b" ").decode()
    except OSError:
        command = ""
    try:  # an undumpable process's command line may read empty: its name says what it is
        name = open(f"/proc/{entry}/stat").read().split(")")[0].split("(", 1)[1]
    except OSError:
        continue
    if command.startswith(("/bin/sh -c python3 attack.py", "python3 attack.py")):
        continue  # the command's own shell (the relay's command line names it too)
    try:
        open(f"/proc/{entry}/mem", "r+b").close()
        print("WRITABLE", entry, f"({name})", command[-120:])
    except OSError as exc:
        print("DENIED", entry, exc.errno, f"({name})", command[-120:])
for label, argv in (
    ("unshare-r", ["unshare", "-r", "true"]),
    ("unshare-rm", ["unshare", "-rm", "sh", "-c", "mount -t tmpfs x /usr && echo MOUNTED"]),
):
    ran = subprocess.run(argv, capture_output=True, text=True)
    print(label, "exit", ran.returncode, "MOUNTED" if "MOUNTED" in ran.stdout else "")
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 9))
    print("UDP sent")
except OSError as exc:
    print("UDP refused", exc.errno)
try:
    socket.getaddrinfo("example.com", 80)
    print("DNS answered")
except OSError:
    print("DNS failed")
if "HTTP_PROXY" in os.environ and os.environ["HTTP_PROXY"].endswith(":3128"):
    with socket.create_connection(("127.0.0.1", 3128), timeout=20) as conn:
        conn.sendall(b"CONNECT x.test:443 HTTP/1.1\\r\\n\\r\\n")
        print("RELAY", conn.recv(100).decode())
"""


def _python_for_nobody() -> str | None:
    found = shutil.which("python3", path="/usr/bin:/bin")
    return found if found and os.access(found, os.X_OK) else None


@pytest.fixture
def base() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ar-reach-", dir="/tmp") as folder:
        Path(folder).chmod(0o777)  # the harness may run as nobody
        yield Path(folder) / "run"


def _harness(backend: str, base: Path, user: str) -> str:
    if user == "nobody":
        if os.getuid() != 0:
            pytest.skip("only root can run the harness as nobody")
        python = runner = _python_for_nobody() or ""
        if not python:
            pytest.skip("no system Python for nobody")
        path = os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]])
        args = {"user": 65534, "group": 65534, "extra_groups": []}
        env = {"PATH": os.defpath, "PYTHONPATH": path, "HOME": str(base.parent)}
    else:
        runner, python, args = sys.executable, os.path.realpath(sys.executable), {}
        env = {"PATH": os.defpath, "PYTHONPATH": str(REPO), "HOME": os.environ.get("HOME", "/")}
    done = subprocess.run(
        [runner, "-c", HARNESS, backend, str(base), python],
        input=ATTACK,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
        cwd="/",
        **args,  # type: ignore[arg-type]
    )
    if done.stderr.startswith("SKIP"):
        pytest.skip(done.stderr.strip())
    if user == "nobody" and "ModuleNotFoundError: No module named 'runner'" in done.stderr:
        pytest.skip(f"user nobody cannot read the checkout at {REPO}")
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize("user", ["root", "nobody"])
@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_a_command_alters_no_process_of_the_runner_and_makes_no_user_namespace(
    base: Path, backend: str, user: str
) -> None:
    if user == "root" and os.getuid() != 0:
        pytest.skip("the test runs as another user")
    if probe(backend).backend != backend:
        pytest.skip(f"{backend} does not work here")
    out = _harness(backend, base, user)
    assert "SANDBOX" in out and "WRITABLE" not in out, out
    assert "unshare-r exit 0" not in out and "unshare-rm exit 0" not in out, out
    assert "MOUNTED" not in out, out
    assert "UDP refused 13" in out and "DNS failed" in out, out
    if backend == "bwrap":
        # The relay is there (the way out), reached under the long path, and out of reach.
        relay = [line for line in out.splitlines() if "forwarder.py" in line or "(python" in line]
        assert relay and all(line.startswith("DENIED") for line in relay), out
        assert "RELAY PROXY-ANSWERED" in out, out
        assert "bwrap" not in "".join(line for line in out.splitlines() if "DENIED" in line)
