"""A task's network allowlist (DESIGN 19): the task's list and --allow-host together, and the
config file's and command line's hosts checked before anything runs; the task's proxy, how the
sandbox reaches it, and its connections in the session log."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from runner.errors import ConfigError, SandboxUnavailable
from runner.outcome import SandboxRecord, Totals
from runner.run.guard import network
from runner.run.guard.network import (
    MAX_LOGGED,
    NetworkSink,
    TaskProxy,
    allowlist,
    check_network,
    log_network,
    task_proxy,
    with_allowlist,
)
from runner.sessionlog import SessionLogWriter, read_session
from runner.settings import SandboxSettings, Settings, load_settings
from runner.workspace import Connection, NetPath, NetworkProxy, Sandbox, interpreter_dirs
from runner.workspace.sandbox.backends import Backend
from runner.workspace.sandbox.netpath import unconfined_env
from tests.e2e.conftest import log_schema_errors
from tests.sessionlog.scenarios import create


def test_allow_host_adds_to_the_task_list_and_opens_a_closed_network() -> None:
    flags = Settings(allow_hosts=("pypi.org", "files.pythonhosted.org"))
    listed = SandboxSettings(network=("pypi.org", "*.npmjs.org"))
    assert allowlist(listed, flags) == ("pypi.org", "*.npmjs.org", "files.pythonhosted.org")
    assert allowlist(SandboxSettings(network=False), flags) == flags.allow_hosts
    assert allowlist(SandboxSettings(network=True), flags) is None  # already everything
    assert allowlist(SandboxSettings(network=False), Settings()) is None


def test_bad_hosts_of_the_flag_and_the_config_are_named() -> None:
    settings = Settings(
        allow_hosts=("ok.org", "py*.org"), sandbox=SandboxSettings(network=("x.org:99999",))
    )
    with pytest.raises(ConfigError) as caught:
        check_network(settings)
    text = str(caught.value)
    assert "--allow-host 'py*.org': " in text and "a wildcard may only start" in text
    assert "sandbox.network[0]: 'x.org:99999': the port must be" in text
    check_network(Settings(allow_hosts=("ok.org",)))  # fine: no error


def test_a_bad_host_of_the_config_file_names_its_line(tmp_path: Path) -> None:
    config = tmp_path / "agent-runner.yaml"
    config.write_text("sandbox:\n  network:\n    - pypi.org\n    - pypi.org/simple\n", "utf-8")
    with pytest.raises(ConfigError) as caught:
        check_network(load_settings(config_file=config))
    assert f"{config}:2:3: sandbox.network[1]: 'pypi.org/simple' is a URL" in str(caught.value)


# The proxy of one task, in-process: a real proxy on 127.0.0.1 (or a unix socket), asked by
# plain HTTP with the credentials its own proxy variables carry.

UPSTREAM = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nHELLO"


@pytest.fixture
async def upstream() -> AsyncIterator[int]:
    """An HTTP server on 127.0.0.1 that answers HELLO: its port."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(UPSTREAM)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


def _request(variables: Mapping[str, str], url: str) -> bytes:
    """A GET of `url` as a program that honours `HTTP_PROXY` sends it to the proxy."""
    proxy = urlsplit(variables["HTTP_PROXY"])
    token = base64.b64encode(f"{proxy.username}:{proxy.password}".encode()).decode()
    host = urlsplit(url).netloc  # as a client sends it (the proxy refuses another)
    return (
        f"GET {url} HTTP/1.1\r\nHost: {host}\r\nProxy-Authorization: Basic {token}\r\n\r\n".encode()
    )


async def _ask_tcp(variables: Mapping[str, str], url: str) -> bytes:
    port = urlsplit(variables["HTTP_PROXY"]).port
    assert urlsplit(variables["HTTP_PROXY"]).hostname == "127.0.0.1" and port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(_request(variables, url))
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return answer


async def _ask_unix(socket: Path, secret: str, url: str) -> bytes:
    variables = {"HTTP_PROXY": f"http://agent-runner:{secret}@127.0.0.1:1"}
    reader, writer = await asyncio.open_unix_connection(str(socket))
    writer.write(_request(variables, url))
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return answer


async def _until(done: Callable[[], bool]) -> None:
    """Wait (bounded) until `done()`: the proxy records a connection just after its answer."""
    async with asyncio.timeout(30):
        while not done():
            await asyncio.sleep(0.01)


@pytest.mark.anyio
async def test_a_task_proxy_on_tcp_forwards_listed_hosts_refuses_others_and_counts_both(
    upstream: int,
) -> None:
    async with task_proxy((f"127.0.0.1:{upstream}",), None) as proxy:
        variables = proxy.env()
        assert variables["HTTPS_PROXY"] == variables["HTTP_PROXY"]
        allowed = await _ask_tcp(variables, f"http://127.0.0.1:{upstream}/")
        refused = await _ask_tcp(variables, "http://refused.test/")
        await _until(lambda: proxy.counts() == (1, 1))
        port = proxy.path.port
    assert allowed.endswith(b"HELLO")
    assert refused.startswith(b"HTTP/1.1 403") and b"refused.test:80" in refused
    # Before the session log opens, the connections wait for it, in order.
    assert [(c.host, c.allowed) for c in proxy.sink.waiting] == [
        ("127.0.0.1", True),
        ("refused.test", False),
    ]
    with pytest.raises(OSError):  # stopped with the task
        await asyncio.open_connection("127.0.0.1", port)


@pytest.mark.anyio
async def test_a_task_proxy_on_a_unix_socket_listens_there_and_on_no_port(tmp_path: Path) -> None:
    socket = tmp_path / "proxy.sock"
    async with task_proxy(("allowed.test",), socket) as proxy:
        assert (proxy.path.socket, proxy.path.port, proxy.proxy.port) == (socket, 0, None)
        refused = await _ask_unix(socket, proxy.path.secret, "http://refused.test/")
        wrong = await _ask_unix(socket, "guess", "http://allowed.test/")
        await _until(lambda: proxy.counts() == (0, 2))
    assert refused.startswith(b"HTTP/1.1 403") and wrong.startswith(b"HTTP/1.1 407")
    with pytest.raises(OSError):  # stopped with the task
        await asyncio.open_unix_connection(str(socket))


@pytest.mark.anyio
async def test_two_task_proxies_have_their_own_secrets(tmp_path: Path) -> None:
    async with (
        task_proxy(("a.test",), tmp_path / "a.sock") as one,
        task_proxy(("a.test",), tmp_path / "b.sock") as two,
    ):
        assert one.path.secret != two.path.secret
        other = await _ask_unix(tmp_path / "b.sock", one.path.secret, "http://a.test/")
    assert other.startswith(b"HTTP/1.1 407")


def _sandbox(backend: Backend, tmp_path: Path) -> Sandbox:
    """A sandbox as `probe` would choose it, with the host's network until the allowlist."""
    scratch = tmp_path / "s"
    scratch.mkdir()
    return Sandbox(backend, "/usr/bin/true", tmp_path, scratch, network=True, readable=(tmp_path,))


OFF = SandboxRecord("off", network=True)


@pytest.mark.anyio
async def test_without_an_allowlist_nothing_changes_and_no_proxy_starts(tmp_path: Path) -> None:
    sandbox = _sandbox("bwrap", tmp_path)
    async with with_allowlist(None, OFF, sandbox, True) as got:
        assert got == (OFF, sandbox, None, None)
        assert unconfined_env() == {}


@pytest.mark.anyio
async def test_unconfined_commands_get_the_proxy_variables_while_the_task_runs(
    upstream: int,
) -> None:
    async with with_allowlist((f"127.0.0.1:{upstream}",), OFF, None, True) as got:
        record, sandbox, proxy, error = got
        assert proxy is not None and sandbox is None and error is None
        variables = dict(unconfined_env())
        assert variables == proxy.env()
        assert (await _ask_tcp(variables, f"http://127.0.0.1:{upstream}/")).endswith(b"HELLO")
    assert unconfined_env() == {}
    # What the reports say: the list, not enforced (nothing stops a program that ignores it).
    assert (record.status, record.network, record.allowlist, record.allowlist_enforced) == (
        "off", False, (f"127.0.0.1:{upstream}",), False,
    )  # fmt: skip


@pytest.mark.anyio
async def test_under_bubblewrap_the_proxy_is_a_socket_in_the_private_folder(
    tmp_path: Path,
) -> None:
    given = _sandbox("bwrap", tmp_path)
    enforced = SandboxRecord("enforced", "bwrap", network=True)
    async with with_allowlist(("allowed.test",), enforced, given, True) as got:
        record, sandbox, proxy, error = got
        assert proxy is not None and sandbox is not None and error is None
        assert sandbox.proxy == proxy.path and sandbox.network is False
        assert proxy.path.socket == given.scratch / "proxy.sock" and proxy.proxy.port is None
        # The forwarder's Python must be readable inside, besides what was readable before.
        assert sandbox.readable == (tmp_path, *interpreter_dirs())
        assert unconfined_env() == {}  # its commands reach the proxy through the sandbox
        answer = await _ask_unix(given.scratch / "proxy.sock", proxy.path.secret, "http://x.test/")
    assert answer.startswith(b"HTTP/1.1 403")
    assert (record.network, record.allowlist, record.allowlist_enforced) == (
        False, ("allowed.test",), True,
    )  # fmt: skip


@pytest.mark.anyio
@pytest.mark.parametrize("abi", [4, 7])
async def test_landlock_holds_a_host_list_by_port_only_so_it_is_missing_net_allowlist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, abi: int
) -> None:
    """Landlock's rule "connect to the proxy's port" lets a command reach any host on that port
    number: the record says so, and `required` refuses the task (DESIGN 24)."""
    monkeypatch.setattr(network, "landlock_abi", lambda: abi)  # the kernel's answer
    given = _sandbox("landlock", tmp_path)
    enforced = SandboxRecord("enforced", "landlock", network=True, enforced=("fs",))
    async with with_allowlist(("allowed.test",), enforced, given, True) as got:
        record, sandbox, proxy, error = got
        assert isinstance(error, SandboxUnavailable) and proxy is None and sandbox == given
        assert "by port, not by address" in str(error) and "bubblewrap" in str(error)
    assert record.missing == ("net-allowlist",) and record.allowlist_enforced is False
    assert record.reason.startswith("net-allowlist: Landlock limits TCP connect by port")
    async with with_allowlist(("allowed.test",), enforced, given, False) as got:
        record, sandbox, proxy, error = got
        assert proxy is not None and sandbox is not None and error is None
        assert proxy.path.socket is None and proxy.path.port == proxy.proxy.port
        assert sandbox.proxy == proxy.path and sandbox.network is False
        assert sandbox.readable == given.readable and unconfined_env() == {}
    assert record.missing == ("net-allowlist",) and record.allowlist_enforced is False
    assert "not confined: net-allowlist (net-allowlist: Landlock" in record.line()


@pytest.mark.anyio
async def test_without_a_backend_the_record_names_net_allowlist_too(upstream: int) -> None:
    degraded = SandboxRecord("degraded", reason="none", network=True, missing=("fs",))
    async with with_allowlist(("a.test",), degraded, None, False) as got:
        record = got[0]
    assert record.missing == ("fs", "net-allowlist") and record.reason == "none"


@pytest.mark.anyio
async def test_landlock_without_network_rules_is_an_error_only_when_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(network, "landlock_abi", lambda: 3)
    given = _sandbox("landlock", tmp_path)
    enforced = SandboxRecord("enforced", "landlock", network=True)
    async with with_allowlist(("allowed.test",), enforced, given, True) as got:
        record, sandbox, proxy, error = got
        assert isinstance(error, SandboxUnavailable) and "bubblewrap" in str(error)
        assert "has no network rules (ABI 4)" in str(error)
        assert proxy is None and sandbox == given
    assert (record.allowlist, record.allowlist_enforced) == (("allowed.test",), False)
    assert record.missing == ("net-allowlist",)
    async with with_allowlist(("allowed.test",), enforced, given, False) as got:
        record, sandbox, proxy, error = got
        assert error is None and proxy is not None and sandbox is not None
        assert sandbox.proxy == proxy.path and proxy.path.port == proxy.proxy.port
    assert record.allowlist_enforced is False


def _connection(host: str, allowed: bool = False) -> Connection:
    rule, reason = ("a.test", "") if allowed else (None, "not in the allowlist")
    return Connection(host, 443, allowed, "CONNECT", rule, reason, 0, 0, 0.001)


def _network_events(log: SessionLogWriter) -> list[dict[str, Any]]:
    return [e for e in read_session(log.path).events if e["type"] == "network"]


@pytest.mark.anyio
async def test_the_session_log_gets_every_connection_with_its_turn_and_none_after_its_end(
    tmp_path: Path, upstream: int
) -> None:
    said: list[str] = []
    turn = [0]
    long_host = "h" * 248 + ".test"  # 253 characters, the longest name the proxy reads
    log = create(tmp_path, "network", golden=False)
    async with task_proxy((f"127.0.0.1:{upstream}",), None) as proxy:
        variables = proxy.env()
        await _ask_tcp(variables, "http://early.test/")  # before the log opens
        await _until(lambda: proxy.counts() == (0, 1))
        turn[0] = 1
        log_network(proxy, log, lambda: turn[0], said.append)
        turn[0] = 2
        await _ask_tcp(variables, f"http://127.0.0.1:{upstream}/")
        await _ask_tcp(variables, f"http://{long_host}/")
        await _until(lambda: proxy.counts() == (1, 2))
        log.end("passed", "done", Totals(turns=2))
        await _ask_tcp(variables, "http://late.test/")  # after the end line: counted only
        await _until(lambda: proxy.counts() == (1, 3))
    log.close()
    events = _network_events(log)
    assert [(e["turn"], e["host"], e["allowed"]) for e in events] == [
        (1, "early.test", False),
        (2, "127.0.0.1", True),
        (2, long_host, False),
    ]
    early, allowed, _ = events
    assert (early["port"], early["method"], early["rule"], early["reason"]) == (
        80, "GET", None, "not in the allowlist",
    )  # fmt: skip
    assert (allowed["port"], allowed["rule"], allowed["reason"]) == (
        upstream, f"127.0.0.1:{upstream}", None,
    )  # fmt: skip
    assert allowed["bytes_down"] == len(UPSTREAM) and allowed["duration_s"] >= 0
    assert log_schema_errors(log.path) == [] and said == []


def test_a_log_holds_max_logged_connections_and_one_warning_says_the_rest_are_counted(
    tmp_path: Path,
) -> None:
    said: list[str] = []
    sink = NetworkSink()
    log = create(tmp_path, "many", golden=False)
    proxy = TaskProxy(NetworkProxy([], "s"), NetPath(None), sink)
    for n in range(MAX_LOGGED - 1):
        sink(_connection(f"early-{n}.test"))
    log_network(proxy, log, lambda: 1, said.append)
    assert len(_network_events(log)) == MAX_LOGGED - 1 and said == []
    sink(_connection("last.test", allowed=True))
    assert len(_network_events(log)) == MAX_LOGGED and said == []
    for n in range(3):
        sink(_connection(f"more-{n}.test"))
    events = read_session(log.path).events
    assert [e["host"] for e in events if e["type"] == "network"][-1] == "last.test"
    warnings = [e["message"] for e in events if e["type"] == "warning"]
    assert (
        warnings
        == said
        == [f"more than {MAX_LOGGED} network connections: the rest are counted only"]
    )


def test_connections_beyond_the_log_that_come_before_it_opens_are_warned_of_too(
    tmp_path: Path,
) -> None:
    said: list[str] = []
    sink = NetworkSink()
    for n in range(MAX_LOGGED + 5):
        sink(_connection(f"early-{n}.test"))
    assert len(sink.waiting) <= MAX_LOGGED + 1  # bounded while the log is not open
    log = create(tmp_path, "early", golden=False)
    log_network(TaskProxy(NetworkProxy([], "s"), NetPath(None), sink), log, lambda: 0, said.append)
    assert len(_network_events(log)) == MAX_LOGGED and len(said) == 1


def test_a_task_without_a_proxy_logs_nothing(tmp_path: Path) -> None:
    log = create(tmp_path, "none", golden=False)
    log_network(None, log, lambda: 0, print)
    assert _network_events(log) == []
