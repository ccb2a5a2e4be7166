"""The rules of a server's auth (runner/mcp/auth/flow.py) for each of the four token sources, the
OAuth ones against the real authlib authorization server (in a thread of this process, one per
test module): the first token before anything connects, discovery once, every secret value
registered before it is used, the record the reports keep, and how a source's failure reads."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic import TypeAdapter

from runner.mcp.auth import AuthConfig, AuthError, Token
from runner.mcp.auth.flow import ServerAuth, auth_client, open_server_auth
from tests.mcp.auth.inprocess import Sent, authorization_server, recording_client
from tests.mcp.auth.world import OIDC_ISSUER, World, key_pair, oidc_assertion

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
SECRET = "cs-flow-secret-0123456"
OIDC_KEY = key_pair()
CLIENTS: dict[str, Any] = {
    "cc-basic": {"secret": SECRET, "methods": ["client_secret_basic"], "scopes": ["tools:read"]},
    "ci-workload": {
        "assertion_issuer": OIDC_ISSUER,
        "assertion_public_key": OIDC_KEY.public,
        "methods": ["none"],
        "grants": [JWT_BEARER],
    },
}
AUTH: TypeAdapter[Any] = TypeAdapter(AuthConfig)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("as")
    with authorization_server(root, clients=CLIENTS, lifetime=900) as world:
        yield world


class Opened:
    """What opening a server's auth did: the auth, the values registered, the requests sent."""

    def __init__(self) -> None:
        self.registered: list[str] = []
        self.sent: list[Sent] = []
        self.auth: ServerAuth | None = None


def _open(
    auth: dict[str, Any],
    server_url: str,
    tmp_path: Path,
    env: dict[str, str] | None = None,
    renewals: int = 0,
) -> Opened:
    opened = Opened()

    async def go() -> None:
        async with recording_client(opened.sent) as client:
            opened.auth = await open_server_auth(
                AUTH.validate_python(auth),
                server="tracker",
                server_url=server_url,
                client=client,
                env=env if env is not None else dict(os.environ),
                cwd=tmp_path,
                register=opened.registered.extend,
            )
            for _ in range(renewals):
                await opened.auth._renew(opened.auth._token)

    asyncio.run(go())
    return opened


def _header(opened: Opened) -> str:
    assert opened.auth is not None and opened.auth._token is not None
    return opened.auth._token.headers["Authorization"]


def test_a_bearer_token_is_sent_as_it_is_and_registered(tmp_path: Path) -> None:
    opened = _open(
        {"type": "bearer", "token": "tok-fixed-1"}, "https://nowhere.invalid/mcp", tmp_path
    )
    assert _header(opened) == "Bearer tok-fixed-1"
    assert {"Bearer tok-fixed-1", "tok-fixed-1"} <= set(opened.registered)
    assert opened.sent == []  # a bearer token needs no request
    assert opened.auth is not None and opened.auth.refused is False
    assert opened.auth.record.as_json() == {
        "server": "tracker",
        "type": "bearer",
        "issuer": None,
        "scopes": [],
        "expires_at": None,
        "renewals": 0,
    }


def test_a_token_command_runs_in_the_workdir_with_the_runners_environment(tmp_path: Path) -> None:
    code = "import os; print('tok-' + os.environ['SEED'] + '-' + os.path.basename(os.getcwd()))"
    env = {"SEED": "s1", "PATH": os.environ["PATH"]}
    auth = {"type": "command", "command": [sys.executable, "-c", code], "refresh_every": 45}
    opened = _open(auth, "https://nowhere.invalid/mcp", tmp_path, env=env, renewals=1)
    assert _header(opened) == f"Bearer tok-s1-{tmp_path.name}"
    assert opened.auth is not None and opened.auth._token is not None
    assert opened.auth._token.lifetime_s == 45
    assert opened.auth.record.type == "command" and opened.auth.record.renewals == 1
    assert f"tok-s1-{tmp_path.name}" in opened.registered


def test_a_token_command_is_held_to_its_timeout_and_named_as_the_token_command(
    tmp_path: Path,
) -> None:
    auth = {
        "type": "command",
        "command": [sys.executable, "-c", "import time; time.sleep(60)"],
        "timeout": 0.5,
    }
    with pytest.raises(AuthError) as caught:
        _open(auth, "https://nowhere.invalid/mcp", tmp_path)
    assert str(caught.value) == f"the token command {sys.executable!r} did not finish within 0.5 s"


def test_client_credentials_discover_once_and_ask_for_a_token_at_each_renewal(
    world: World, tmp_path: Path
) -> None:
    auth = {"type": "client_credentials", "client_id": "cc-basic", "client_secret": SECRET}
    opened = _open(auth, world.mcp_url, tmp_path, renewals=2)
    token_requests = [s for s in opened.sent if s.url == f"{world.as_url}/token"]
    assert len(token_requests) == 3
    assert len(opened.sent) - 3 == len([s for s in opened.sent if s.method == "GET"])
    first_token = opened.sent.index(token_requests[0])
    assert all(s.method == "POST" for s in opened.sent[first_token:])  # discovery only once
    assert opened.auth is not None
    record = opened.auth.record
    assert (record.server, record.type, record.issuer) == (
        "tracker",
        "client_credentials",
        world.as_url,
    )
    assert record.renewals == 2 and record.expires_at is not None
    issued = [e["token"] for e in world.events("issued")]
    assert _header(opened).removeprefix("Bearer ") in issued
    assert set(issued[-3:]) <= set(opened.registered)
    assert SECRET not in opened.registered  # the config's secrets are registered by the caller


def test_a_client_assertion_is_registered_before_it_is_sent(world: World, tmp_path: Path) -> None:
    # The world's log has every assertion it received: each was registered.
    cc_key = key_pair()
    clients = {"cc-key": {"public_key": cc_key.public, "methods": ["private_key_jwt"]}}
    with authorization_server(tmp_path / "as", clients=clients) as keyed:
        auth = {"type": "client_credentials", "client_id": "cc-key", "private_key": cc_key.private}
        opened = _open(auth, keyed.mcp_url, tmp_path)
        received = [e["value"] for e in keyed.events("client_assertion")]
    assert received and set(received) <= set(opened.registered)


def test_jwt_bearer_reads_the_first_line_of_its_assertion_file_again_at_each_renewal(
    world: World, tmp_path: Path
) -> None:
    file = tmp_path / "id-token"
    first = oidc_assertion(OIDC_KEY, world.as_url)
    file.write_text(f"  {first}  \nnot-the-assertion\n", encoding="utf-8")
    auth = {"type": "jwt_bearer", "assertion_file": str(file)}
    opened = Opened()

    async def go() -> None:
        async with recording_client(opened.sent) as client:
            opened.auth = await open_server_auth(
                AUTH.validate_python(auth),
                server="tracker",
                server_url=world.mcp_url,
                client=client,
                env={},
                cwd=tmp_path,
                register=opened.registered.extend,
            )
            file.write_text(oidc_assertion(OIDC_KEY, world.as_url), encoding="utf-8")
            await opened.auth._renew(opened.auth._token)

    asyncio.run(go())
    posted = [s.form["assertion"] for s in opened.sent if s.method == "POST"]
    assert posted[0] == first and posted[1] == file.read_text(encoding="utf-8")
    assert set(posted) <= set(opened.registered)
    assert opened.auth is not None and opened.auth.record.issuer == world.as_url
    assert opened.auth.record.type == "jwt_bearer"


def test_jwt_bearer_runs_its_assertion_command_in_the_workdir_and_takes_its_first_line(
    world: World, tmp_path: Path
) -> None:
    (tmp_path / "token.jwt").write_text(oidc_assertion(OIDC_KEY, world.as_url), encoding="utf-8")
    code = "import os; print(' ' + open('token.jwt').read() + ' '); print(os.environ['SECOND'])"
    auth = {"type": "jwt_bearer", "assertion_command": [sys.executable, "-c", code]}
    env = {"SECOND": "second-line", "PATH": os.environ["PATH"]}
    opened = _open(auth, world.mcp_url, tmp_path, env=env)
    (posted,) = [s.form["assertion"] for s in opened.sent if s.method == "POST"]
    assert posted == (tmp_path / "token.jwt").read_text(encoding="utf-8")
    assert posted in opened.registered


def test_an_assertion_command_is_held_to_its_timeout_and_named(
    world: World, tmp_path: Path
) -> None:
    auth = {
        "type": "jwt_bearer",
        "assertion_command": [sys.executable, "-c", "import time; time.sleep(60)"],
        "timeout": 0.5,
    }
    with pytest.raises(AuthError) as caught:
        _open(auth, world.mcp_url, tmp_path)
    assert str(caught.value) == (
        f"the assertion command {sys.executable!r} did not finish within 0.5 s"
    )


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "cannot read `assertion_file` {path}: No such file or directory"),
        ("", "`assertion_file` {path} is empty"),
        ("  \n\n", "`assertion_file` {path} is empty"),
    ],
)
def test_an_assertion_file_that_is_missing_or_empty_is_a_configuration_error(
    content: str | None, said: str, world: World, tmp_path: Path
) -> None:
    path = tmp_path / "id-token"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(AuthError) as caught:
        _open({"type": "jwt_bearer", "assertion_file": str(path)}, world.mcp_url, tmp_path)
    assert caught.value.kind == "config"
    assert str(caught.value) == said.format(path=path)


def test_the_auth_client_is_bounded_and_follows_no_redirect() -> None:
    async def go() -> tuple[Any, bool]:
        async with auth_client() as client:
            return client.timeout, client.follow_redirects

    timeout, follows = asyncio.run(go())
    assert (timeout.connect, timeout.read, timeout.write, timeout.pool) == (15.0,) * 4
    assert follows is False


def test_server_auth_refuses_a_synchronous_client() -> None:
    class Fixed:
        async def fetch(self) -> Token:
            return Token({"Authorization": "Bearer t"})

    from runner.mcp.auth import AuthRecord

    auth = ServerAuth(Fixed(), AuthRecord("tracker", "bearer"), lambda values: None)
    with (
        httpx2.Client(transport=httpx2.MockTransport(lambda r: httpx2.Response(200))) as client,
        pytest.raises(RuntimeError, match="async only"),
    ):
        client.get("https://mcp.example/mcp", auth=auth)
