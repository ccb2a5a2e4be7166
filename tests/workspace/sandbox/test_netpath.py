"""Where a task's commands find its allowlist proxy (DESIGN 19): the proxy variables, the way
the path travels to a stdio workspace server, unconfined commands, and Landlock's one port."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from runner.workspace import (
    NetPath,
    Sandbox,
    confine,
    landlock_abi,
    no_proxy_for,
    parse_rule,
    probe,
    proxied,
    run_shell,
)
from runner.workspace.sandbox.netpath import unconfined_env

pytestmark = pytest.mark.anyio
URL = "http://agent-runner:tok3n@127.0.0.1:4321"


def test_the_proxy_variables_carry_the_secret_and_leave_loopback_alone() -> None:
    env = NetPath(None, 4321, "tok3n").env(4321)
    names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
    assert env == {
        **{name: URL for name in names},
        **{name.lower(): URL for name in names},
        "NO_PROXY": "localhost,127.0.0.1,::1",
        "no_proxy": "localhost,127.0.0.1,::1",
    }


def test_an_allowlisted_loopback_host_is_not_in_no_proxy() -> None:
    """Clients match NO_PROXY by host alone: a rule for 127.0.0.1:8080 takes 127.0.0.1 out, so
    curl, pip and requests send it through the proxy, the only way to it from inside."""
    assert no_proxy_for(()) == "localhost,127.0.0.1,::1"
    assert no_proxy_for(("pypi.org", "10.0.0.5")) == "localhost,127.0.0.1,::1"
    assert no_proxy_for(("127.0.0.1",)) == "localhost,::1"
    assert no_proxy_for(("LOCALHOST", "::1", "127.0.0.1")) == ""
    env = NetPath(None, 4321, "tok3n", no_proxy_for(("127.0.0.1",))).env(4321)
    assert env["NO_PROXY"] == env["no_proxy"] == "localhost,::1"
    rules = [parse_rule(text) for text in ("127.0.0.1:8080", "[::1]:80", "localhost:3000")]
    assert no_proxy_for(tuple(rule.host for rule in rules)) == ""


def test_the_path_reaches_a_workspace_server_as_it_was(tmp_path: Path) -> None:
    paths = (NetPath(tmp_path / "proxy.sock", 0, "a"), NetPath(None, 4321, "b", "localhost"))
    for path in paths:
        sandbox = Sandbox("bwrap", "/usr/bin/bwrap", tmp_path, tmp_path, proxy=path)
        assert Sandbox.from_json(sandbox.to_json()) == sandbox
        assert NetPath.from_json(path.as_json()) == path
    with pytest.raises(ValueError):
        NetPath.from_json({"socket": None, "port": "many", "secret": "c"})
    with pytest.raises(KeyError):
        NetPath.from_json({"socket": None, "port": 1})


async def test_unconfined_commands_get_the_variables_only_inside_proxied(tmp_path: Path) -> None:
    async def shown() -> str:
        ran = await run_shell(
            'echo "[$HTTPS_PROXY] [$no_proxy]"',
            cwd=tmp_path,
            env={"PATH": os.defpath},
            input_bytes=b"",
            timeout_s=30,
        )
        return ran.stdout.strip()

    assert unconfined_env() == {} and await shown() == "[] []"
    with proxied(NetPath(None, 4321, "tok3n").env(4321)):
        assert await shown() == f"[{URL}] [localhost,127.0.0.1,::1]"
        with proxied(None):
            assert unconfined_env() == {}
        assert unconfined_env()["ALL_PROXY"] == URL
    assert unconfined_env() == {} and await shown() == "[] []"


@pytest.fixture
def listeners() -> Iterator[tuple[int, int]]:
    """Two TCP listeners on 127.0.0.1: the proxy's port and another one."""
    with socket.socket() as proxy, socket.socket() as other:
        for server in (proxy, other):
            server.bind(("127.0.0.1", 0))
            server.listen(8)
        yield proxy.getsockname()[1], other.getsockname()[1]


def test_under_landlock_commands_reach_only_the_proxys_port(
    tmp_path: Path, listeners: tuple[int, int]
) -> None:
    found = probe("landlock")
    if found.backend != "landlock" or landlock_abi() < 4:
        pytest.skip(f"Landlock with network rules does not work here: {found.reason}")
    proxy_port, other_port = listeners
    (tmp_path / "w").mkdir()
    (tmp_path / "s" / "tmp").mkdir(parents=True)
    path = NetPath(None, proxy_port, "tok3n")
    sandbox = Sandbox("landlock", found.executable, tmp_path / "w", tmp_path / "s", proxy=path)
    script = (
        "import os, socket\n"
        "for port in (int(os.environ['P']), int(os.environ['O'])):\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', port), timeout=10).close()\n"
        "        print(port, 'connected')\n"
        "    except OSError as exc:\n"
        "        print(port, 'refused', exc.errno)\n"
        "print(os.environ['HTTP_PROXY'])\n"
    )
    (tmp_path / "w" / "client.py").write_text(script, encoding="utf-8")

    async def run() -> str:
        with confine(sandbox):
            ran = await run_shell(
                f"{sys.executable} -I -S client.py",
                cwd=tmp_path / "w",
                env={"PATH": os.defpath, "P": str(proxy_port), "O": str(other_port)},
                input_bytes=b"",
                timeout_s=60,
            )
        return ran.stdout + ran.stderr

    out = anyio.run(run)
    assert f"{proxy_port} connected" in out and f"{other_port} refused 13" in out, out
    assert f"http://agent-runner:tok3n@127.0.0.1:{proxy_port}" in out, out
