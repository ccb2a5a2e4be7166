"""The `auth:` block of an `sse` or `streamable_http` extension (DESIGN 26): four types.

Checked without contacting anything (`validate` and task loading use these models alone): the
fields each type needs, one source per secret, a private key that reads as PEM.
"""

from __future__ import annotations

import shlex
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "AuthConfig",
    "BearerAuth",
    "ClientCredentialsAuth",
    "CommandAuth",
    "JwtBearerAuth",
    "argv",
    "auth_secret_values",
]

_Argv = str | list[str]
"""A program and its arguments: a list, or one string split as a POSIX shell would split words
(no shell runs either way; write `[sh, -c, "..."]` to have one)."""


class _Auth(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BearerAuth(_Auth):
    """A fixed token, usually `${VAR}` from the environment (Codex's bearer_token_env_var)."""

    type: Literal["bearer"]
    token: str = Field(min_length=1)
    """The access token; sent as `Authorization: Bearer <token>`. Masked everywhere."""


class CommandAuth(_Auth):
    """A program that prints a token or headers (Claude Code's headersHelper), run before the
    first request, again before what it printed expires, and again after a 401."""

    type: Literal["command"]
    command: _Argv
    """The program and its arguments; no shell unless you write one (`[sh, -c, "..."]`).
    Output: a bare token on the first line, or JSON `{"token": ..., "expires_in": N}` or
    `{"headers": {...}, "expires_in": N}` (docs/mcp-auth.md)."""
    timeout: float = Field(30.0, gt=0, le=600)
    """Seconds the program may run; longer is a failure."""
    refresh_every: float | None = Field(None, gt=0)
    """Seconds after which the program runs again when its output names no `expires_in`;
    None: only after a 401."""

    @field_validator("command")
    @classmethod
    def _not_empty(cls, value: _Argv) -> _Argv:
        if not argv(value):
            raise ValueError("`command` is empty: name the program that prints the token")
        return value


class _OAuth(_Auth):
    scopes: list[str] = Field(default_factory=list)
    """Scopes to ask for; empty: the server's `scopes_supported`, else none."""
    issuer: str | None = None
    """The authorization server's issuer URL. Set: the server's protected resource metadata must
    list it, and its metadata must name it as `iss`. Unset: the first one the server lists."""

    @field_validator("issuer")
    @classmethod
    def _http_issuer(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("https://", "http://")):
            raise ValueError(f"`issuer` must be an http(s) URL, not {value!r}")
        return value


class ClientCredentialsAuth(_OAuth):
    """The OAuth client credentials grant (MCP `oauth-client-credentials` extension): a client
    secret, or a private key signing a JWT client assertion (RFC 7523, `private_key_jwt`)."""

    type: Literal["client_credentials"]
    client_id: str = Field(min_length=1)
    """The client id registered with the authorization server."""
    client_secret: str | None = None
    """The client secret (`client_secret_basic` unless `auth_method` says post). Masked."""
    private_key: str | None = None
    """A PEM private key: the client authenticates with a signed JWT (`private_key_jwt`). Masked."""
    auth_method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic"
    """How the client secret is sent to the token endpoint."""
    signing_alg: Literal["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"] = "RS256"
    """private_key: the JWT signing algorithm."""
    key_id: str | None = None
    """private_key: the `kid` header of the signed assertion, when the server wants one."""

    @model_validator(mode="after")
    def _one_credential(self) -> ClientCredentialsAuth:
        if (self.client_secret is None) == (self.private_key is None):
            raise ValueError(
                "client_credentials needs exactly one of `client_secret` and `private_key`"
            )
        if self.client_secret is not None and not self.client_secret:
            raise ValueError("`client_secret` is empty (is its ${VAR} set?)")
        if self.private_key is not None:
            _check_pem(self.private_key)
        return self


class JwtBearerAuth(_OAuth):
    """The JWT bearer grant (RFC 7523 section 2.1): an assertion from a file or a command (GitHub
    Actions OIDC, a workload identity) exchanged for an access token."""

    type: Literal["jwt_bearer"]
    assertion_file: str | None = None
    """A file holding the assertion (a JWT); read again when the token is renewed."""
    assertion_command: _Argv | None = None
    """A program printing the assertion on its first line; no shell unless you write one."""
    timeout: float = Field(30.0, gt=0, le=600)
    """assertion_command: seconds it may run."""
    client_id: str | None = None
    """Sent as `client_id` when the authorization server wants to know the client."""
    client_secret: str | None = None
    """When the client also authenticates (`client_secret_basic`). Masked."""

    @model_validator(mode="after")
    def _one_source(self) -> JwtBearerAuth:
        if (self.assertion_file is None) == (self.assertion_command is None):
            raise ValueError(
                "jwt_bearer needs exactly one of `assertion_file` and `assertion_command`"
            )
        if self.assertion_command is not None and not argv(self.assertion_command):
            raise ValueError("`assertion_command` is empty: name the program")
        return self


AuthConfig = Annotated[
    BearerAuth | CommandAuth | ClientCredentialsAuth | JwtBearerAuth, Field(discriminator="type")
]
"""One of the four types, told apart by `type`."""


def argv(command: _Argv) -> list[str]:
    """A configured command as the argument list it runs as."""
    return shlex.split(command) if isinstance(command, str) else list(command)


def _check_pem(key: str) -> None:
    text = key.strip()
    if not (text.startswith("-----BEGIN ") and "PRIVATE KEY-----" in text.splitlines()[0]):
        raise ValueError(
            "`private_key` is not a PEM private key (it must start with "
            "`-----BEGIN ... PRIVATE KEY-----`; pass the key itself, e.g. `${MY_KEY}`, not a path)"
        )


def auth_secret_values(
    auth: BearerAuth | CommandAuth | ClientCredentialsAuth | JwtBearerAuth,
) -> dict[str, str]:
    """The secrets an `auth:` block holds, by field name (the token, secret or key)."""
    found: dict[str, str] = {}
    for field in ("token", "client_secret", "private_key"):
        value = getattr(auth, field, None)
        if isinstance(value, str) and value:
            found[field] = value
    if isinstance(auth, ClientCredentialsAuth) and auth.private_key:
        # A PEM key is masked line by line too: an error may quote one line of it.
        for number, line in enumerate(auth.private_key.strip().splitlines()):
            if len(line) >= 16 and not line.startswith("-----"):
                found[f"private_key line {number}"] = line
    return found
