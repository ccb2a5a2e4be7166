"""The `governor:` block of the config file (DESIGN 25), and where the run key comes from.

Nothing here reads the environment: `runner.settings` hands over `AGENT_RUNNER_GOVERNOR_URL`
and the CI's variables, so this module stays below it without an import back up.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from runner.errors import ExitCode, RunnerError

__all__ = [
    "GovernorSettings",
    "RateLimit",
    "StoreDown",
    "default_run_key",
    "limits_for",
    "safe_url",
]

_RUN_KEY = re.compile(r"[A-Za-z0-9._:@/-]{1,200}")
"""A run key, matched whole (`fullmatch`: `$` would let a trailing newline through)."""


class RateLimit(BaseModel):
    """Requests and tokens per minute shared by every shard, for the models a glob matches."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rpm: int | None = Field(None, gt=0)
    """Requests sent per window (60 s unless `window_s` says otherwise), every shard together."""
    tpm: int | None = Field(None, gt=0)
    """Tokens per window: a request counts its prompt estimate plus its `max_tokens` until its
    reply says what it used."""
    window_s: float = Field(60.0, gt=0, le=3600)
    """The sliding window rpm and tpm count over; 60 s is a minute (a provider that states its
    limit per 10 s can say so)."""


class GovernorSettings(BaseModel):
    """One budget and one set of rate limits for every shard of a run (docs/fleet.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = None
    """The store: `redis://HOST:PORT/DB`, `rediss://` (TLS), `unix:///path/redis.sock`,
    `file:///path/state` (several processes on one host), `memory://` (this process only).
    None: no governor (everything per process), unless AGENT_RUNNER_GOVERNOR_URL sets it."""
    run: str | None = None
    """The key every shard of one run shares; default `GITHUB_RUN_ID-GITHUB_RUN_ATTEMPT`, or
    the Kubernetes Job's name (`JOB_NAME`), else the config must name one."""
    max_cost_usd: float | None = Field(None, gt=0)
    """The whole run's cost cap across every shard (`--fleet-max-cost-usd`)."""
    limits: dict[str, RateLimit] = Field(default_factory=dict)
    """Shared rate limits by `provider:model` glob (`openai:*`, `anthropic:claude-*`); a model
    counts against every glob that matches it."""
    on_error: Literal["fail", "local"] = "fail"
    """The store unreachable: `fail` ends the task as an infrastructure error (exit 4) before
    its next model call is sent; `local` goes on with per-process limits and says so."""
    reservation_ttl_s: float = Field(900.0, gt=0)
    """A call's reservation expires after this long, so a shard killed mid-call frees it;
    keep it above `retry.request_timeout_s` (600 s by default)."""
    timeout_s: float = Field(5.0, gt=0)
    """Time one store operation may take before the store counts as down."""

    @field_validator("run")
    @classmethod
    def _plain_key(cls, value: str | None) -> str | None:
        if value is not None and not _RUN_KEY.fullmatch(value):
            raise ValueError(
                "the run key may hold letters, digits and . _ : @ / - (at most 200 characters)"
            )
        return value

    @field_validator("limits")
    @classmethod
    def _globs(cls, value: dict[str, RateLimit]) -> dict[str, RateLimit]:
        for glob in value:
            if ":" not in glob:
                raise ValueError(f"limits key {glob!r} is not `provider:model` (e.g. `openai:*`)")
        return value


def default_run_key(env: Mapping[str, str]) -> str | None:
    """The run key a shard finds by itself: GitHub's run id and attempt (the same for every
    job of a matrix, new for a re-run), else a Kubernetes Job's name (`JOB_NAME`, set by the
    example's downward API; every pod of an Indexed Job shares it). None: nothing found."""
    run_id = env.get("GITHUB_RUN_ID")
    if run_id:
        return f"gh-{run_id}-{env.get('GITHUB_RUN_ATTEMPT') or '1'}"
    job = env.get("JOB_NAME")
    if job:
        return f"k8s-{job}"
    return None


def limits_for(limits: Mapping[str, RateLimit], provider: str, model: str) -> list[str]:
    """The globs of `limits` that `provider:model` counts against."""
    name = f"{provider}:{model}"
    return [glob for glob in limits if fnmatch.fnmatchcase(name, glob)]


class StoreDown(RunnerError):
    """The governor's store could not be reached (or answered nonsense)."""

    exit_code = ExitCode.INFRASTRUCTURE


def safe_url(url: str) -> str:
    """`url` without its password, for messages and reports."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return parts._replace(netloc=user + netloc).geturl()
