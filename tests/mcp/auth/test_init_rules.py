"""The face of runner/mcp/auth: `open_auth` gives a server's auth with its first token, obtained
through an HTTP client that closes with the caller's exit stack, every value registered; against
the real authlib authorization server in a thread of this process."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from runner.mcp.auth import AuthError, BearerAuth, ClientCredentialsAuth, open_auth
from tests.mcp.auth.inprocess import authorization_server

SECRET = "cs-face-secret-0123456"


async def _open(cfg: Any, server_url: str, tmp_path: Path) -> tuple[Any, list[str], Any]:
    registered: list[str] = []
    async with contextlib.AsyncExitStack() as stack:
        auth = await open_auth(
            cfg,
            server="tracker",
            server_url=server_url,
            stack=stack,
            env={},
            cwd=tmp_path,
            register=registered.extend,
        )
        client = getattr(auth._source, "_client", None)
        assert client is None or not client.is_closed
    return auth, registered, client


def test_open_auth_gets_the_first_token_from_the_servers_authorization_server(
    tmp_path: Path,
) -> None:
    clients = {"cc": {"secret": SECRET, "methods": ["client_secret_basic"]}}
    with authorization_server(tmp_path / "as", clients=clients) as world:
        cfg = ClientCredentialsAuth(type="client_credentials", client_id="cc", client_secret=SECRET)
        auth, registered, client = asyncio.run(_open(cfg, world.mcp_url, tmp_path))
        (issued,) = world.events("issued")
    assert auth.record.as_json()["server"] == "tracker"
    assert auth.record.issuer == world.as_url
    assert issued["token"] in registered and issued["resource"] == world.mcp_url
    assert auth._token.headers == {"Authorization": f"Bearer {issued['token']}"}
    assert client is not None and client.is_closed  # closed with the stack


def test_open_auth_registers_a_bearer_token_before_any_request(tmp_path: Path) -> None:
    cfg = BearerAuth(type="bearer", token="tok-face-1")
    auth, registered, _ = asyncio.run(_open(cfg, "http://127.0.0.1:9/mcp", tmp_path))
    assert registered == ["Bearer tok-face-1", "tok-face-1"]
    assert auth.record.server == "tracker" and auth.record.type == "bearer"


def test_open_auth_fails_as_an_outage_when_the_server_cannot_be_reached(tmp_path: Path) -> None:
    cfg = ClientCredentialsAuth(type="client_credentials", client_id="cc", client_secret=SECRET)
    with pytest.raises(AuthError) as caught:
        asyncio.run(_open(cfg, "http://127.0.0.1:9/mcp", tmp_path))
    assert caught.value.kind == "unreachable"
