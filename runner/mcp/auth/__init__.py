"""MCP servers behind OAuth without a browser (DESIGN 26): the `auth:` config of an HTTP
extension, its four token sources (bearer, command, client credentials, JWT bearer), discovery
of the authorization server, and an `httpx2.Auth` that renews tokens before they expire.

Importing this face imports no MCP SDK (task loading and `validate` use the config alone);
`open_auth` imports the rest when a server with `auth:` connects.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.mcp.auth.config import (
    AuthConfig,
    BearerAuth,
    ClientCredentialsAuth,
    CommandAuth,
    JwtBearerAuth,
    auth_secret_values,
)
from runner.mcp.auth.token import AuthError, AuthRecord, Token

if TYPE_CHECKING:
    from runner.mcp.auth.flow import ServerAuth

__all__ = [
    "AuthConfig",
    "AuthError",
    "AuthRecord",
    "BearerAuth",
    "ClientCredentialsAuth",
    "CommandAuth",
    "JwtBearerAuth",
    "Token",
    "auth_secret_values",
    "open_auth",
]


async def open_auth(
    cfg: BearerAuth | CommandAuth | ClientCredentialsAuth | JwtBearerAuth,
    *,
    server: str,
    server_url: str,
    stack: Any,
    env: Mapping[str, str],
    cwd: Path,
    register: Any,
) -> ServerAuth:
    """The server's `httpx2.Auth`, its first token obtained; its HTTP client closes with `stack`
    (an AsyncExitStack). `register(values)` is told every secret value as soon as it is known.

    Raises:
        AuthError: no token could be obtained; `kind` says whether it is a configuration error
            (exit 2) or an unreachable authorization server (exit 4).
    """
    from runner.mcp.auth.flow import auth_client, open_server_auth

    client = await stack.enter_async_context(auth_client())
    return await open_server_auth(
        cfg,
        server=server,
        server_url=server_url,
        client=client,
        env=env,
        cwd=cwd,
        register=register,
    )
