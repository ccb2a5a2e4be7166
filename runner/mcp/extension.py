"""MCP server configuration in the seed format (DESIGN section 3).

Shared by task files and the config file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from runner.mcp.auth import AuthConfig

__all__ = ["WORKSPACE", "ExtensionConfig", "ToolPolicy", "overlay"]

WORKSPACE = "workspace"
"""Name of the built-in workspace server, enabled for every task unless turned off."""


class ExtensionConfig(BaseModel):
    """One MCP server: a stdio command, or an SSE / streamable HTTP endpoint."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    """Server name; defaults to the key under `extensions:`."""
    type: Literal["stdio", "sse", "streamable_http"] = "stdio"
    """Transport."""
    cmd: str | None = None
    """stdio: the command to start."""
    args: list[str] = Field(default_factory=list)
    """stdio: the command's arguments."""
    envs: dict[str, str] = Field(default_factory=dict)
    """stdio: extra environment; values take `${VAR}` and `${VAR:-default}`; which
    are secrets: runner/task/secrets.py."""
    uri: str | None = None
    """sse / streamable_http: the endpoint URL."""
    headers: dict[str, str] = Field(default_factory=dict)
    """sse / streamable_http: HTTP headers; values take `${VAR}`; which are secrets:
    runner/task/secrets.py."""
    auth: AuthConfig | None = None
    """sse / streamable_http: how to get a token (bearer, command, client_credentials,
    jwt_bearer; DESIGN 26, docs/mcp-auth.md). Its secrets are masked everywhere."""
    enabled: bool = True
    """False leaves the server out of the task."""
    required: bool = True
    """True: failing to start fails the task (exit 4). False: skipped with a warning."""
    timeout: float | None = Field(None, gt=0)
    """Seconds per tool call; None = the runner's default tool timeout."""

    @model_validator(mode="after")
    def _transport_fields(self) -> ExtensionConfig:
        if not self.enabled:
            return self
        if self.type == "stdio" and not self.cmd:
            raise ValueError("a stdio server needs `cmd` (the command to start)")
        if self.type != "stdio" and not self.uri:
            raise ValueError(f"a {self.type} server needs `uri` (the endpoint URL)")
        if self.type == "stdio" and self.auth is not None:
            raise ValueError(
                "`auth` is for sse and streamable_http servers; give a stdio server its token "
                "in `envs`"
            )
        if self.auth is not None and any(k.lower() == "authorization" for k in self.headers):
            raise ValueError("set either `auth` or an `Authorization` header, not both")
        return self


class ToolPolicy(BaseModel):
    """Glob patterns over tool names; deny wins over allow."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow: list[str] = Field(default_factory=lambda: ["*"])
    """Tools the agent may call (fnmatch globs)."""
    deny: list[str] = Field(default_factory=list)
    """Tools the agent may not call, even when allowed."""


def overlay(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """One extension entry written over another: each field `over` sets replaces the base's,
    except `envs` and `headers`, which merge variable by variable."""
    out = dict(base)
    for field, value in over.items():
        if field in {"envs", "headers"} and isinstance(value, Mapping):
            out[field] = {**out.get(field, {}), **value}
        else:
            out[field] = value
    return out
