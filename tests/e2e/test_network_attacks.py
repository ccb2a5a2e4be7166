"""The network and the runner's processes, as each backend holds them (DESIGN 24), attacked
through the CLI under bubblewrap and Landlock, as root and as `nobody`.

Each (backend, user) runs two tasks whose scripted model calls these commands:

- `network: false`: a UDP datagram (a DNS query) to a listener of the test's, a name lookup,
  `unshare -r` and `unshare -rm` with a mount over `/usr`, and a write to the memory of every
  other process the command can see (`/proc/N/mem`).
- a host list, under a TMPDIR of 200 characters (the proxy's socket path is longer than AF_UNIX
  holds): the same attacks (the relay is one more process to write), `curl` and `pip download`
  from a PEP 503 index on an allowlisted `127.0.0.1:PORT`, and a request to an allowed host
  whose `Host:` names another.

Every attack fails; the record names what the backend does not hold (Landlock: `pid`, and
`net-allowlist` for the host list); `required` refuses a Landlock host list (in
test_network_allowlist.py).
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import warnings
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from runner.workspace import probe
from tests.e2e.conftest import (
    API_KEY,
    REPO,
    Done,
    Scenario,
    Started,
    clean_env,
    complete,
    default_args,
    log_schema_errors,
    prepare,
    tool_reply,
)
from tests.fakes.model_server import FakeModelServer

WHEEL = "tinypkg-1.0-py3-none-any.whl"
RUN_S = 300.0
"""Bound on one runner process here: eight run side by side, and pip is slow on a loaded host."""

ATTACK_MEMORY = """\
import os
me = os.getpid()
for entry in sorted(os.listdir("/proc")):
    if not entry.isdigit() or int(entry) in (me, os.getppid()):
        continue
    try:
        open(f"/proc/{entry}/mem", "r+b").close()
    except OSError:
        continue
    print("WROTE-MEMORY-OF", entry, open(f"/proc/{entry}/stat").read().split(")")[0])
print("MEMORY-DONE")
"""

QUERY = "abcd01000001000000000000076578616d706c6503636f6d0000010001"  # A example.com
DNS_QUERY = (
    f"import socket; q = bytes.fromhex('{QUERY}');"
    " s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(q, ('127.0.0.1', {port}));"
    " print('SENT')"
)


def _wheel() -> bytes:
    """A wheel pip accepts: its METADATA, WHEEL and RECORD files."""
    buffer = io.BytesIO()
    info = "tinypkg-1.0.dist-info"
    files = {
        "tinypkg/__init__.py": "",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


class _Index(BaseHTTPRequestHandler):
    """A PEP 503 simple index with one project; it keeps the Host of every request."""

    def do_GET(self) -> None:
        server: Any = self.server
        server.hosts.append(self.headers.get("Host"))
        pages = {
            "/simple/": b'<a href="tinypkg/">tinypkg</a>',
            "/simple/tinypkg/": f'<a href="/files/{WHEEL}">{WHEEL}</a>'.encode(),
            f"/files/{WHEEL}": server.wheel,
            "/": b"HELLO-FROM-" + server.name.encode(),
        }
        body = pages.get(self.path)
        self.send_response(200 if body is not None else 404)
        kind = "text/html" if self.path.endswith("/") else "application/octet-stream"
        self.send_header("Content-Type", kind)  # pip reads a page only when it says html
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Any]]:
    """The index (also the allowed host) and another host, on 127.0.0.1; a UDP listener."""
    found: dict[str, Any] = {}
    started = []
    for name in ("index", "other"):
        server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Index)
        server.name, server.hosts, server.wheel = name.upper(), [], _wheel()
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)
        found[name] = server
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    found["udp"] = udp
    try:
        yield found
    finally:
        udp.close()
        for server in started:
            server.shutdown()
            server.server_close()


def _works(backend: str) -> bool:
    return probe(backend).backend == backend


def _commands(udp_port: int) -> list[str]:
    return [
        f'python3 -c "{DNS_QUERY.format(port=udp_port)}" 2>&1 | tail -1',
        "python3 -c \"import socket; print(socket.getaddrinfo('example.com', 80)[0][4])\" 2>&1"
        " | tail -1",
        'unshare -r true; echo "R=$?"',
        "unshare -rm sh -c 'mount -t tmpfs x /usr && echo MOUNTED'; echo \"RM=$?\"",
        "python3 memory.py",
    ]


def _allowlist_commands(index_port: int) -> list[str]:
    index = f"http://127.0.0.1:{index_port}/simple/"
    pip = (
        f"PIP_CONFIG_FILE=/dev/null /usr/bin/python3 -m pip download --no-deps --no-cache-dir "
        f"--disable-pip-version-check --index-url {index} --trusted-host 127.0.0.1 -d dl tinypkg"
        " 2>&1 | tail -2; ls dl"
    )
    return [
        f"curl -sS -m 20 {index}",
        pip,
        'curl -sS -m 20 -H "Host: other.test" -w "STATUS=%{http_code}" http://allowed.test/',
    ]


def _scenarios(servers: dict[str, Any], backend: str, tmpdir: Path) -> dict[str, Scenario]:
    index_port = servers["index"].server_address[1]
    udp_port = servers["udp"].getsockname()[1]
    mode = "required" if backend == "bwrap" else "auto"  # Landlock misses pid, net-allowlist
    common = [tool_reply("execute_command", command=c) for c in _commands(udp_port)]
    args = default_args("--sandbox-backend", backend)
    resolve = f"allowed.test:80=127.0.0.1:{index_port} other.test:80=127.0.0.1:{index_port}"
    listed = [tool_reply("execute_command", command=c) for c in _allowlist_commands(index_port)]
    return {
        "off": Scenario(
            task={"sandbox": {"mode": mode, "network": False}},
            files={"memory.py": ATTACK_MEMORY},
            steps=[*common, complete()],
            args=args,
        ),
        "listed": Scenario(
            task={
                "sandbox": {"mode": mode, "network": ["allowed.test", f"127.0.0.1:{index_port}"]}
            },
            files={"memory.py": ATTACK_MEMORY},
            steps=[*common, *listed, complete()],
            args=args,
            env={"TMPDIR": str(tmpdir), "AGENT_RUNNER_TEST_RESOLVE": resolve},
        ),
    }


def _start(scenario: Scenario, root: Path, user: str) -> Started:
    """`conftest.start`, as `user`: as nobody with the system's Python (the test's may live in
    root's HOME) and the runner's packages on PYTHONPATH, in folders nobody owns."""
    prepare(scenario, root)
    server = FakeModelServer(scenario.steps, default=scenario.default).start()
    env = clean_env(
        root,
        {
            "OPENAI_BASE_URL": server.openai_base_url,
            "OPENAI_API_KEY": API_KEY,
            **scenario.env,
        },
    )
    python, options = sys.executable, {}
    if user == "nobody":
        python = shutil.which("python3", path="/usr/bin:/bin") or "python3"
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]])
        env["HOME"] = str(root / "home")
        (root / "home").mkdir(exist_ok=True)
        subprocess.run(["chown", "-R", "65534:65534", str(root)], check=True)
        options = {"user": 65534, "group": 65534, "extra_groups": []}
    with (root / "stdout.txt").open("wb") as stdout, (root / "stderr.txt").open("wb") as stderr:
        process = subprocess.Popen(
            [python, "-m", "runner", *(scenario.args or default_args())],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            **options,  # type: ignore[arg-type]
        )
    return Started(process, server, root)


def _nobody_runs_the_runner() -> str | None:
    """Why user nobody cannot start the runner here (None when it can): no system Python, or a
    checkout it cannot read (under root's HOME)."""
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        return "no system Python (/usr/bin/python3) for user nobody"
    path = os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]])
    ran = subprocess.run(
        [python, "-c", "import runner.cli"],
        env={"PATH": os.defpath, "PYTHONPATH": path},
        cwd="/",
        capture_output=True,
        check=False,
        user=65534,
        group=65534,
        extra_groups=[],
    )
    return None if ran.returncode == 0 else f"user nobody cannot import the runner from {REPO}"


@pytest.fixture(scope="module")
def runs(servers: dict[str, Any]) -> Iterator[dict[tuple[str, str, str], Done]]:
    """Every (backend, user, task) run at once; nobody's only when the tests run as root."""
    if shutil.which("curl") is None or shutil.which("unshare") is None:
        pytest.fail("curl and unshare (util-linux) are needed")
    users = ["root", "nobody"] if os.getuid() == 0 else ["self"]
    if users[1:] and (why := _nobody_runs_the_runner()) is not None:
        warnings.warn(f"{why}: the attacks run as root only", stacklevel=1)
        users = users[:1]
    with tempfile.TemporaryDirectory(prefix="ar-attacks-", dir="/tmp") as folder:
        base = Path(folder)
        base.chmod(0o755)
        started: dict[tuple[str, str, str], Started] = {}
        try:
            for backend in ("bwrap", "landlock"):
                if not _works(backend):
                    continue
                for user in users:
                    tmpdir = base / f"{backend}-{user}-tmp" / ("t" * 120) / ("m" * 60)
                    tmpdir.mkdir(parents=True)
                    for task, scenario in _scenarios(servers, backend, tmpdir).items():
                        root = base / f"{backend}-{user}-{task}"
                        if user == "nobody":
                            owned = ["chown", "-R", "65534:65534", str(tmpdir.parents[1])]
                            subprocess.run(owned, check=True)
                        started[(backend, user, task)] = _start(scenario, root, user)
            yield {key: run.wait(RUN_S) for key, run in started.items()}
        finally:
            for run in started.values():
                if run.process.poll() is None:
                    run.process.kill()
                    run.process.wait()
                run.server.stop()


def _results(done: Done) -> list[str]:
    return [str(event["result"]) for event in done.events("tool_call")]


def _keys(runs: dict[tuple[str, str, str], Done], task: str) -> list[tuple[str, str, str]]:
    keys = [key for key in runs if key[2] == task]
    if not keys:
        pytest.skip("no sandbox backend works here")
    return keys


def _assert_attacks_failed(done: Done, key: tuple[str, str, str]) -> None:
    udp, dns, userns, mount, memory = _results(done)[:5]
    assert "SENT" not in udp and "Permission denied" in udp, (key, udp)
    assert "('" not in dns and "rror" in dns, (key, dns)  # no address came back
    assert "R=0" not in userns, (key, userns)
    assert "MOUNTED" not in mount and "RM=0" not in mount, (key, mount)
    assert "MEMORY-DONE" in memory and "WROTE-MEMORY-OF" not in memory, (key, memory)


def test_without_network_no_datagram_leaves_and_no_process_or_namespace_is_the_commands(
    runs: dict[tuple[str, str, str], Done], servers: dict[str, Any]
) -> None:
    for key in _keys(runs, "off"):
        done = runs[key]
        assert done.code == 0, (key, done.explain())
        _assert_attacks_failed(done, key)
        record = done.log().header["sandbox"]
        held = {"fs", "caps", "net", "sockets"} | ({"pid"} if key[0] == "bwrap" else set())
        assert set(record["enforced"]) == held, (key, record)
        assert record["missing"] == ([] if key[0] == "bwrap" else ["pid"]), (key, record)
        assert log_schema_errors(done.log().path) == []
    servers["udp"].setblocking(False)
    with pytest.raises(BlockingIOError):  # no datagram of any run reached the listener
        servers["udp"].recv(512)


def test_an_allowlist_under_a_long_tmpdir_reaches_loopback_hosts_with_curl_and_pip(
    runs: dict[tuple[str, str, str], Done], servers: dict[str, Any]
) -> None:
    index_port = servers["index"].server_address[1]
    for key in _keys(runs, "listed"):
        done = runs[key]
        assert done.code == 0, (key, done.explain())
        _assert_attacks_failed(done, key)
        simple, pip, host = _results(done)[5:8]
        assert 'href="tinypkg/"' in simple, (key, simple)
        assert WHEEL in pip and "Saved" in pip, (key, pip)
        assert (done.root / "w" / "dl" / WHEEL).is_file()
        assert "STATUS=403" in host and "pins Host to the target" in host, (key, host)
        record = done.log().header["sandbox"]
        if key[0] == "bwrap":
            assert record["allowlist_enforced"] is True and record["missing"] == [], record
        else:
            assert record["allowlist_enforced"] is False, record
            assert record["missing"] == ["pid", "net-allowlist"], record
            assert "net-allowlist: Landlock limits TCP connect by port" in record["reason"]
        refused = [e for e in done.events("network") if not e["allowed"]]
        assert [(e["host"], e["reason"]) for e in refused] == [
            ("allowed.test", "Host header differs from the target")
        ], (key, refused)
    # Every request the index got named it: none came with another Host.
    assert set(servers["index"].hosts) == {f"127.0.0.1:{index_port}"}, servers["index"].hosts
