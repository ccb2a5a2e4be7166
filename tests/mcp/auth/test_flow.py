"""The per-server `httpx2.Auth` (runner/mcp/auth/flow.py): tokens renewed before they expire,
one retry after a 401, one renewal however many requests see the same 401, every value
registered for masking the moment it is obtained."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

import httpx2

from runner.mcp.auth import AuthRecord, Token
from runner.mcp.auth.flow import ServerAuth


class Numbered:
    """A token source handing out tok-1, tok-2, ... each `lifetime` seconds long."""

    def __init__(self, lifetime: float | None = 3600.0) -> None:
        self.lifetime = lifetime
        self.count = 0

    async def fetch(self) -> Token:
        self.count += 1
        await asyncio.sleep(0)  # let concurrent requests pile up on the lock
        expires = time.monotonic() + self.lifetime if self.lifetime is not None else None
        return Token(
            {"Authorization": f"Bearer tok-{self.count}"}, expires, "a:read", self.lifetime
        )


def _server(accepted: set[str], seen: list[str]) -> httpx2.MockTransport:
    def handle(request: httpx2.Request) -> httpx2.Response:
        token = request.headers.get("Authorization", "")
        seen.append(token)
        return httpx2.Response(200 if token in accepted else 401)

    return httpx2.MockTransport(handle)


def _auth(source: Numbered) -> tuple[ServerAuth, list[str]]:
    registered: list[str] = []

    def register(values: Iterable[str]) -> None:
        registered.extend(values)

    return ServerAuth(source, AuthRecord("tracker", "client_credentials"), register), registered


async def _get(auth: ServerAuth, transport: httpx2.MockTransport, n: int = 1) -> list[int]:
    async with httpx2.AsyncClient(transport=transport, auth=auth) as client:
        answers = await asyncio.gather(*(client.get("https://mcp.example/mcp") for _ in range(n)))
    return [a.status_code for a in answers]


def test_a_401_is_retried_once_with_a_fresh_token() -> None:
    source = Numbered()
    auth, registered = _auth(source)
    seen: list[str] = []
    asyncio.run(auth.start())
    assert asyncio.run(_get(auth, _server({"Bearer tok-2"}, seen))) == [200]
    assert seen == ["Bearer tok-1", "Bearer tok-2"]
    assert {"Bearer tok-1", "tok-1", "Bearer tok-2", "tok-2"} <= set(registered)
    assert auth.record.renewals == 1 and auth.record.scopes == ["a:read"]
    assert not auth.refused


def test_a_second_401_is_the_servers_answer_and_marks_the_token_refused() -> None:
    source = Numbered()
    auth, _ = _auth(source)
    seen: list[str] = []
    assert asyncio.run(_get(auth, _server(set(), seen))) == [401]
    assert seen == ["Bearer tok-1", "Bearer tok-2"]
    assert auth.refused


def test_many_requests_refused_at_once_renew_the_token_once() -> None:
    source = Numbered()
    auth, _ = _auth(source)
    asyncio.run(auth.start())
    seen: list[str] = []
    assert asyncio.run(_get(auth, _server({"Bearer tok-2"}, seen), n=8)) == [200] * 8
    assert source.count == 2


def test_a_token_about_to_expire_is_renewed_before_it_is_sent() -> None:
    source = Numbered(lifetime=0.0)  # already due: a fifth of nothing is left
    auth, _ = _auth(source)
    asyncio.run(auth.start())
    seen: list[str] = []
    asyncio.run(_get(auth, _server({"Bearer tok-2"}, seen)))
    assert seen == ["Bearer tok-2"]  # never sent the expiring one


def test_a_token_without_expiry_is_kept_until_refused() -> None:
    source = Numbered(lifetime=None)
    auth, _ = _auth(source)
    seen: list[str] = []
    asyncio.run(_get(auth, _server({"Bearer tok-1"}, seen), n=3))
    assert source.count == 1 and auth.record.expires_at is None
