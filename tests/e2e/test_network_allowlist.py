"""Network allowlists through the CLI (DESIGN 19): commands reach the hosts a task names, and
nothing else.

Two HTTP servers on 127.0.0.1 stand in for hosts: `allowed.test` and `refused.test`, which the
proxy's test-only resolver (`AGENT_RUNNER_TEST_RESOLVE`) maps to them. One task lists only
`allowed.test` and runs, under each backend that works here: curl through the forward proxy,
curl through a CONNECT tunnel, Python's urllib, curl to the refused host (a 403 naming the
rule), and a direct connection that ignores the proxy variables (no connection at all).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from runner.sessionlog import export_html
from runner.workspace import probe
from tests.e2e.conftest import Done, Scenario, complete, log_schema_errors, run_all, tool_reply
from tests.e2e.test_sandbox import BACKENDS, _works

ARGS = ("run", "t.yaml", "--model", "openai:gpt-4.1", "--out", "OUT")


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"HELLO-FROM-{self.server.name}\n".encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def hosts() -> Iterator[dict[str, int]]:
    """`allowed` and `refused` HTTP servers on 127.0.0.1: their ports."""
    servers = {}
    for name in ("allowed", "refused"):
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
        server.name = name.upper()  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers[name] = server
    try:
        yield {name: server.server_address[1] for name, server in servers.items()}
    finally:
        for server in servers.values():
            server.shutdown()
            server.server_close()


@pytest.fixture(scope="module")
def runs(hosts: dict[str, int], module_dir: Path) -> dict[str, Done]:
    """Every scenario of this module, run at once (each is a runner process)."""
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    scenarios = {
        # `required` fails a backend that misses a DESIGN 18 property (Landlock: `pid`, and
        # `net-allowlist`: its rules know the proxy's port, not its address).
        f"{backend}": _scenario(
            hosts,
            {"mode": "auto" if probe(backend).missing or backend == "landlock" else "required"},
            "--sandbox-backend",
            backend,
        )
        for backend in ("bwrap", "landlock")
        if _works(backend) is None
    }
    if _works("landlock") is None:
        scenarios["landlock-required"] = _scenario(
            hosts, {"mode": "required"}, "--sandbox-backend", "landlock"
        )
    scenarios["auto"] = _scenario(hosts, {"mode": "auto"}, "--sandbox-backend", "none")
    scenarios["required"] = _scenario(hosts, {"mode": "required"}, "--sandbox-backend", "none")
    scenarios["bad-flag"] = _scenario(hosts, {}, "--allow-host", "https://pypi.org/simple")
    return run_all(scenarios, module_dir)


def _resolve(ports: dict[str, int]) -> str:
    return " ".join(f"{name}.test:80=127.0.0.1:{port}" for name, port in ports.items())


def _commands(direct_port: int) -> list[str]:
    urllib = (
        "import urllib.request; "
        "print(urllib.request.urlopen('http://allowed.test/', timeout=10).read().decode())"
    )
    direct = (
        f"import socket; socket.create_connection(('127.0.0.1', {direct_port}), timeout=5); "
        "print('CONNECTED')"
    )
    return [
        "curl -sS -m 10 http://allowed.test/",
        "curl -sS -m 10 -p http://allowed.test/",
        f'python3 -c "{urllib}"',
        'curl -sS -m 10 -w "STATUS=%{http_code}" http://refused.test/',
        f'python3 -c "{direct}"',
        'echo "PROXY=$HTTPS_PROXY"',
    ]


def _scenario(ports: dict[str, int], sandbox: dict[str, object], *args: str) -> Scenario:
    steps = [tool_reply("execute_command", command=c) for c in _commands(ports["allowed"])]
    return Scenario(
        task={
            "sandbox": {"network": ["allowed.test"], **sandbox},
            # The success check goes through the proxy like the commands.
            "success": {"check": "curl -sf -m 10 http://allowed.test/ | grep -q HELLO-FROM"},
        },
        steps=[*steps, complete()],
        env={"AGENT_RUNNER_TEST_RESOLVE": _resolve(ports)},
        args=[*ARGS, *args],
    )


def _outputs(done: Done) -> list[str]:
    return [event["result"] for event in done.events("tool_call")][:6]


def _assert_filtered(done: Done) -> None:
    """The allowed host answered three ways, the refused one got the 403."""
    forward, tunnel, urllib, refused, _direct, variable = _outputs(done)
    assert "PROXY=http://agent-runner:***@127.0.0.1:" in variable, variable  # masked
    assert "HELLO-FROM-ALLOWED" in forward, forward
    assert "HELLO-FROM-ALLOWED" in tunnel, tunnel
    assert "HELLO-FROM-ALLOWED" in urllib, urllib
    assert "STATUS=403" in refused and "not in the task's network allowlist" in refused, refused
    assert "HELLO-FROM-REFUSED" not in refused
    events = done.events("network")
    allowed = [(e["host"], e["method"]) for e in events if e["allowed"]]
    assert ("allowed.test", "GET") in allowed and ("allowed.test", "CONNECT") in allowed
    refusals = [e for e in events if not e["allowed"]]
    assert [(e["host"], e["port"]) for e in refusals] == [("refused.test", 80)]
    assert all(e["bytes_down"] > 0 for e in events if e["allowed"])
    assert not log_schema_errors(done.log().path)
    assert [e["exit_code"] for e in done.events("check")] == [0]
    connections = done.task()["sandbox"]["connections"]
    # forward, tunnel, urllib, and the check's (whose event may land after the end line)
    assert connections == {"allowed": 4, "refused": 1} and len(allowed) >= 3
    out = done.testcase().findtext("system-out") or ""
    assert "connections: 4 allowed, 1 refused" in out
    page = export_html(done.log().path)
    assert "refused.test:80" in page and "network:" in page


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_allowlist_lets_commands_reach_the_listed_hosts_and_nothing_else(
    runs: dict[str, Done], backend: str
) -> None:
    done = runs[backend]
    assert done.code == 0, done.explain()
    _assert_filtered(done)
    direct = _outputs(done)[4]
    assert "CONNECTED" not in direct, direct  # the proxy is the only way out (or its port)
    sandbox = done.task()["sandbox"]
    held = backend == "bwrap"  # Landlock: any host on the proxy's port number (DESIGN 24)
    assert sandbox["allowlist"] == ["allowed.test"] and sandbox["allowlist_enforced"] is held
    header = done.log().header["sandbox"]
    assert header["allowlist_enforced"] is held
    assert ("net-allowlist" in header["missing"]) is not held, header
    out = done.testcase().findtext("system-out") or ""
    if held:
        assert f"sandbox: enforced ({backend}); network: allowlist (allowed.test)" in out
    else:
        assert "network: allowlist (not enforced); hosts: allowed.test" in out, out
        assert "net-allowlist: Landlock limits TCP connect by port" in out, out


def test_required_refuses_a_host_list_under_landlock(runs: dict[str, Done]) -> None:
    if "landlock-required" not in runs:
        pytest.skip("Landlock does not work here")
    done = runs["landlock-required"]
    assert done.code == 4, done.explain()
    header = done.log().header["sandbox"]
    assert header["status"] == "unavailable" and "net-allowlist" in header["missing"], header
    assert "net-allowlist: Landlock limits TCP connect by port" in header["reason"], header


def test_without_a_backend_the_allowlist_filters_only_programs_that_use_the_proxy(
    runs: dict[str, Done],
) -> None:
    auto = runs["auto"]
    assert auto.code == 0, auto.explain()
    _assert_filtered(auto)
    assert "CONNECTED" in _outputs(auto)[4]  # nothing stops a program that ignores the proxy
    assert auto.task()["sandbox"]["allowlist_enforced"] is False
    assert "network: allowlist (not enforced)" in (auto.testcase().findtext("system-out") or "")
    assert auto.log().header["sandbox"]["allowlist_enforced"] is False
    assert "net-allowlist" in auto.log().header["sandbox"]["missing"]
    assert runs["required"].code == 4, runs["required"].explain()


def test_a_bad_allow_host_is_a_usage_error_before_anything_runs(runs: dict[str, Done]) -> None:
    done = runs["bad-flag"]
    assert done.code == 2, done.explain()
    assert "--allow-host 'https://pypi.org/simple'" in done.stderr
    assert "is a URL, not a host" in done.stderr and not (done.out / "sessions").exists()
