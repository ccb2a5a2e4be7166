"""A server's credentials as an `httpx2.Auth`: a token source behind it, the token kept in
memory only, renewed before it expires, and one retry with a fresh token after a 401.

The four sources are built here from the `auth:` config. Every token, assertion and header value
they produce is handed to `register` the moment it is known, so that every redactor of the
process masks it (runner.redact.register_secrets).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Mapping
from pathlib import Path
from typing import Protocol

import anyio
import httpx2

from runner.mcp.auth.command import parse_token_output, run_command
from runner.mcp.auth.config import (
    BearerAuth,
    ClientCredentialsAuth,
    CommandAuth,
    JwtBearerAuth,
    argv,
)
from runner.mcp.auth.discovery import Discovered, discover
from runner.mcp.auth.grants import (
    CLIENT_CREDENTIALS,
    JWT_BEARER,
    client_credentials_form,
    jwt_bearer_form,
    request_token,
)
from runner.mcp.auth.token import AuthError, AuthRecord, Token

__all__ = ["ServerAuth", "auth_client", "open_server_auth"]

RENEW_MARGIN_S = 60.0
"""A token is renewed this long before it expires (or a fifth of its lifetime, if shorter)."""
_AUTH_TIMEOUT_S = 15.0
"""Each request to a metadata document or a token endpoint."""

Register = Callable[[Iterable[str]], None]
AnyAuth = BearerAuth | CommandAuth | ClientCredentialsAuth | JwtBearerAuth


class _Source(Protocol):
    async def fetch(self) -> Token: ...


class ServerAuth(httpx2.Auth):
    """Adds the current token's headers to every request of one server's transport."""

    def __init__(self, source: _Source, record: AuthRecord, register: Register) -> None:
        self._source = source
        self.record = record
        self._register = register
        self._token: Token | None = None
        self._lock = anyio.Lock()
        self.refused = False
        """The server answered 401 even to a fresh token: it does not accept what we send."""

    async def start(self) -> None:
        """Get the first token (before the transport connects)."""
        await self._renew(None)

    async def _renew(self, stale: Token | None) -> Token:
        async with self._lock:
            if self._token is not None and self._token is not stale:
                return self._token  # another request renewed it meanwhile
            token = await self._source.fetch()
            self._register(token.values())
            self.record.note(token, first=self._token is None)
            self._token = token
            return token

    async def _current(self) -> Token:
        token = self._token
        if token is None or token.due(RENEW_MARGIN_S):
            token = await self._renew(token)
        return token

    def sync_auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        raise RuntimeError("ServerAuth is async only")

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token = await self._current()
        request.headers.update(token.headers)
        response = yield request
        if response.status_code == 401:  # revoked or expired early: one retry, fresh token
            fresh = await self._renew(token)
            request.headers.update(fresh.headers)
            response = yield request
            self.refused = response.status_code == 401


class _Bearer:
    def __init__(self, cfg: BearerAuth) -> None:
        self._token = cfg.token

    async def fetch(self) -> Token:
        return Token({"Authorization": f"Bearer {self._token}"})


class _Command:
    def __init__(self, cfg: CommandAuth, env: Mapping[str, str], cwd: Path) -> None:
        self._cfg, self._env, self._cwd = cfg, env, cwd

    async def fetch(self) -> Token:
        out = await run_command(
            argv(self._cfg.command),
            env=self._env,
            cwd=self._cwd,
            timeout_s=self._cfg.timeout,
            what="the token command",
        )
        return parse_token_output(out, refresh_every=self._cfg.refresh_every)


class _OAuth:
    """Discovery once, then a token request per fetch."""

    def __init__(
        self,
        cfg: ClientCredentialsAuth | JwtBearerAuth,
        client: httpx2.AsyncClient,
        server_url: str,
        record: AuthRecord,
        register: Register,
        env: Mapping[str, str],
        cwd: Path,
    ) -> None:
        self._cfg, self._client, self._url = cfg, client, server_url
        self._record, self._register, self._env, self._cwd = record, register, env, cwd
        self._found: Discovered | None = None

    async def fetch(self) -> Token:
        cfg = self._cfg
        grant = CLIENT_CREDENTIALS if isinstance(cfg, ClientCredentialsAuth) else JWT_BEARER
        if self._found is None:
            self._found = await discover(self._client, self._url, issuer=cfg.issuer, grant=grant)
            self._record.issuer = self._found.issuer
        if isinstance(cfg, ClientCredentialsAuth):
            form = await client_credentials_form(cfg, self._found, self._register)
        else:
            assertion = await self._assertion(cfg)
            self._register([assertion])
            form = jwt_bearer_form(cfg, self._found, assertion)
        return await request_token(self._client, self._found, form)

    async def _assertion(self, cfg: JwtBearerAuth) -> str:
        if cfg.assertion_file is not None:
            path = Path(cfg.assertion_file)
            try:
                text = path.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise AuthError(
                    f"cannot read `assertion_file` {path}: {exc.strerror or exc}"
                ) from None
            if not text:
                raise AuthError(f"`assertion_file` {path} is empty")
            return text.splitlines()[0].strip()
        assert cfg.assertion_command is not None
        out = await run_command(
            argv(cfg.assertion_command),
            env=self._env,
            cwd=self._cwd,
            timeout_s=cfg.timeout,
            what="the assertion command",
        )
        return out.splitlines()[0].strip()


async def open_server_auth(
    cfg: AnyAuth,
    *,
    server: str,
    server_url: str,
    client: httpx2.AsyncClient,
    env: Mapping[str, str],
    cwd: Path,
    register: Register,
) -> ServerAuth:
    """The server's auth with its first token already obtained.

    `client` makes the metadata and token requests (the caller closes it).

    Raises:
        AuthError: no token could be obtained (see its `kind`).
    """
    record = AuthRecord(server=server, type=cfg.type)
    source: _Source
    if isinstance(cfg, BearerAuth):
        source = _Bearer(cfg)
    elif isinstance(cfg, CommandAuth):
        source = _Command(cfg, env, cwd)
    else:
        source = _OAuth(cfg, client, server_url, record, register, env, cwd)
    auth = ServerAuth(source, record, register)
    await auth.start()
    return auth


def auth_client() -> httpx2.AsyncClient:
    """The client for metadata and token requests: bounded, no redirects followed."""
    return httpx2.AsyncClient(timeout=_AUTH_TIMEOUT_S, follow_redirects=False)
