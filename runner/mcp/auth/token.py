"""What a token source hands out, what the reports say about it, and why getting one failed.

Free of the MCP SDK: the hub's face and the reports use these without importing it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = ["AuthError", "AuthRecord", "Token"]

FailureKind = Literal["config", "unreachable"]


class AuthError(Exception):
    """Getting a token failed. `config` (exit 2): a wrong secret, a refused grant, metadata that
    offers only an interactive grant, a failing command; `unreachable` (exit 4): the
    authorization server or the metadata could not be reached or answered 5xx/429."""

    def __init__(self, message: str, kind: FailureKind = "config") -> None:
        super().__init__(message)
        self.kind: FailureKind = kind


@dataclass(frozen=True)
class Token:
    """Headers to send, and until when (monotonic clock) they may be sent."""

    headers: dict[str, str]
    """Usually `{"Authorization": "Bearer ..."}`; a command may print others."""
    expires_at: float | None = None
    """`time.monotonic()` when it expires; None: not known (renewed after a 401 only)."""
    scope: str | None = None
    """The scopes granted, as the token response said."""
    lifetime_s: float | None = None
    """`expires_in` as given."""

    def due(self, margin_s: float) -> bool:
        """Whether it should be renewed now: it expires within `margin_s` (or within a fifth of
        its lifetime, for short-lived tokens)."""
        if self.expires_at is None:
            return False
        lead = margin_s if self.lifetime_s is None else min(margin_s, self.lifetime_s / 5)
        return time.monotonic() >= self.expires_at - lead

    def values(self) -> list[str]:
        """The secret values it carries: each header value and the token inside `Bearer ...`."""
        found: list[str] = []
        for value in self.headers.values():
            found.append(value)
            scheme, _, rest = value.partition(" ")
            if rest and scheme.lower() in {"bearer", "basic", "token", "dpop"}:
                found.append(rest.strip())
        return found


@dataclass
class AuthRecord:
    """Which auth a server used (session log header `mcp_auth`, summary.json): never a token."""

    server: str
    type: str
    issuer: str | None = None
    """The authorization server's issuer (client_credentials, jwt_bearer)."""
    scopes: list[str] = field(default_factory=list)
    """The scopes granted by the last token."""
    expires_at: str | None = None
    """When the last token expires (ISO 8601 UTC); None when not known."""
    renewals: int = 0
    """How many times a token was obtained after the first."""

    def note(self, token: Token, *, first: bool) -> None:
        """Record a token just obtained."""
        if not first:
            self.renewals += 1
        if token.scope is not None:
            self.scopes = token.scope.split()
        if token.lifetime_s is not None:
            when = datetime.now(UTC).timestamp() + token.lifetime_s
            self.expires_at = datetime.fromtimestamp(when, UTC).isoformat(timespec="seconds")
        else:
            self.expires_at = None

    def as_json(self) -> dict[str, Any]:
        """The record as written to the log and the summary."""
        return {
            "server": self.server,
            "type": self.type,
            "issuer": self.issuer,
            "scopes": list(self.scopes),
            "expires_at": self.expires_at,
            "renewals": self.renewals,
        }
