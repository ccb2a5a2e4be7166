"""Runner settings, and the one module that reads `os.environ`.

Precedence, highest first: CLI flags > environment (`AGENT_RUNNER_*`, plus the providers'
usual `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`) > the
project config (`./agent-runner.yaml`, or `--config FILE`) > the user config
(`$XDG_CONFIG_HOME/agent-runner/config.yaml`) > defaults.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from runner.configfile import YamlFileSource, explain_settings, locate_key
from runner.errors import ConfigError
from runner.fleet import GovernorSettings
from runner.redact import SUBSTRING_LENGTH, looks_secret

__all__ = [
    "PROJECT_CONFIG",
    "ModelInfo",
    "RetrySettings",
    "ToolSearchSettings",
    "SandboxSettings",
    "Settings",
    "WorkspaceLimits",
    "environ",
    "load_settings",
    "secret_env_values",
    "user_config_path",
]

PROJECT_CONFIG = Path("agent-runner.yaml")


class ToolSearchSettings(BaseModel):
    """When MCP tools are deferred behind `find_tools` (DESIGN 28, docs/prompt.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["auto", "always", "never"] = "auto"
    """`auto`: defer past either threshold; `always`: defer every MCP tool but the workspace's;
    `never`: describe every tool in full. A task's own `tool_search:` overrides it."""
    max_tools: int = Field(30, ge=0)
    """`auto` defers once the MCP tools (the workspace's aside) number more than this."""
    window_share: float = Field(0.1, gt=0, le=1)
    """`auto` defers once their definitions would take more than this share of the model's
    context window (when it is known)."""


class RetrySettings(BaseModel):
    """How model calls are retried (DESIGN section 6)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(6, ge=1)
    """Attempts per model call, the first one included."""
    max_total_wait_s: float = Field(300.0, ge=0)
    """Give up once the waits between attempts add up to more than this."""
    initial_backoff_s: float = Field(1.0, ge=0)
    """First backoff; it doubles per attempt, with jitter."""
    max_backoff_s: float = Field(30.0, ge=0)
    """Largest backoff between two attempts."""
    retry_after_cap_s: float = Field(60.0, ge=0)
    """A server's `retry-after` is honoured up to this many seconds."""
    idle_timeout_s: float = Field(120.0, gt=0)
    """A stream that sends nothing for this long is cut and the call retried."""
    request_timeout_s: float = Field(600.0, gt=0)
    """Timeout of one HTTP request to the provider."""
    shared_limiter: bool = True
    """A 429 seen by one task holds back every task on the same provider and server (its
    `retry-after` pause, and a cap on requests at once; `runner.llm.providers.limiter`). Off:
    each task backs off alone."""


class ModelInfo(BaseModel):
    """Context window and prices of one model; config can add or override entries."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context_window: int | None = Field(None, gt=0)
    """Tokens the model accepts in one request, prompt and reply together; None = not said (a
    local server's is asked for, or learned from its replies)."""
    input_usd_per_mtok: float = Field(0.0, ge=0)
    """Price per million input tokens."""
    output_usd_per_mtok: float = Field(0.0, ge=0)
    """Price per million output tokens."""
    cache_read_usd_per_mtok: float | None = Field(None, ge=0)
    """Price per million tokens read from the prompt cache; None = the input price."""
    cache_write_usd_per_mtok: float | None = Field(None, ge=0)
    """Price per million tokens written to the prompt cache; None = the input price."""
    native_tools: bool = True
    """The model calls tools through its provider's tool API (`tool_mode: auto` picks native)."""
    max_output_tokens: int | None = Field(None, gt=0)
    """Largest reply per model call for this model; None = the run's `max_output_tokens`."""
    max_concurrency: int | None = Field(None, gt=0)
    """Requests sent to this model's server at once, across every task of the run (1 for a
    server that runs one request at a time and interrupts it for the next: llama-cpp-python's
    `interrupt_requests`); None = no limit of its own."""


class WorkspaceLimits(BaseModel):
    """Sizes the built-in workspace's tools keep to (docs/workspace.md, "Limits")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    read_max_bytes: int = Field(2_000_000, gt=0)
    """read_file refuses larger files."""
    search_file_max_bytes: int = Field(1_000_000, gt=0)
    """search_files skips larger files."""
    command_output_max_bytes: int = Field(4_000_000, gt=0)
    """Bytes of a command's output kept in its output file; the rest is read and dropped, but
    for its last part, which is kept too."""


class SandboxSettings(BaseModel):
    """How the commands of a task are confined (DESIGN 15, docs/sandbox.md); a task's own
    `sandbox:` keys override the config's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["auto", "required", "off"] = "auto"
    """`auto`: confine when a backend works, else warn and run unconfined; `required`: a task
    with no working backend ends as an infrastructure error (exit 4); `off`: no sandbox."""
    network: bool | tuple[str, ...] = False
    """Commands may use the host's network (`true`), none (`false`), or only these hosts
    through the allowlist proxy (DESIGN 19: `pypi.org`, `*.npmjs.org`, `github.com:443`)."""
    writable: tuple[str, ...] = ()
    """Folders commands may write besides the workdir, relative to the workdir; each must exist
    inside the repository that holds the workdir."""
    git: Literal["read-only", "writable"] = "read-only"
    """The repository's git folder, when it lies in the workdir (DESIGN 24): `read-only` (the
    agent commits nothing), or `writable` (commands may commit; its config, hooks, info and the
    `.git` entry are still compared at the end, restored, and a change fails the task)."""


def _env_alias(name: str, *extra: str) -> AliasChoices:
    # The prefixed variable first: environment names match case-insensitively, so the bare field
    # name would otherwise pick up the provider variable (OPENAI_API_KEY) before it.
    return AliasChoices(f"AGENT_RUNNER_{name.upper()}", *extra, name)


class Settings(BaseSettings):
    """Everything a run can be configured with, outside the task files."""

    model_config = SettingsConfigDict(
        env_prefix="AGENT_RUNNER_",
        env_nested_delimiter="__",
        extra="forbid",
        populate_by_name=True,
        frozen=True,
    )

    model: str | None = None
    """Default model as `PROVIDER:MODEL` (or a bare model name to auto-detect the provider)."""
    openai_api_key: SecretStr | None = Field(
        None, validation_alias=_env_alias("openai_api_key", "OPENAI_API_KEY")
    )
    """Key for the `openai` provider."""
    openai_base_url: str | None = Field(
        None, validation_alias=_env_alias("openai_base_url", "OPENAI_BASE_URL")
    )
    """Base URL of an OpenAI-compatible server (vLLM, Ollama, OpenRouter, ...)."""
    anthropic_api_key: SecretStr | None = Field(
        None, validation_alias=_env_alias("anthropic_api_key", "ANTHROPIC_API_KEY")
    )
    """Key for the `anthropic` provider."""
    anthropic_base_url: str | None = Field(
        None, validation_alias=_env_alias("anthropic_base_url", "ANTHROPIC_BASE_URL")
    )
    """Base URL of the Anthropic API or a compatible proxy."""
    tool_mode: Literal["xml", "native", "auto"] | None = None
    """`--tool-mode`: overrides every task's `tool_mode` (DESIGN section 16); None keeps it."""
    findings: bool = False
    """Every task offers `report_finding`, as if it said `findings: true` (DESIGN 21)."""
    fail_on: Literal["error", "warning", "note", "never"] | None = None
    """`--fail-on`: a finding at or above it fails its task (DESIGN 21); None keeps each task's
    `findings.fail_on` (default `never`)."""
    anthropic_prompt_cache: Literal["rolling", "system", "off"] = "rolling"
    """Anthropic `cache_control` marks: `rolling` on the tools, the system prompt and the latest
    turns (a long session reads most of its prompt from the cache); `system` on the tools and
    system prompt only; `off` none (docs/caching-and-parallel-calls.md)."""
    openai_prompt_cache_key: bool | None = None
    """Send a `prompt_cache_key` stable for a session's prompt: None sends it to OpenAI's own
    API only (other compatible servers may refuse unknown fields); true or false always/never."""
    temperature: float | None = None
    """Sampling temperature; None leaves the provider's default."""
    max_output_tokens: int = Field(8192, gt=0)
    """Largest reply per model call. A model the table does not know gets at most
    `UNKNOWN_MODEL_MAX_OUTPUT` (4096) unless this is set or its `models` entry sets its own
    (`runner.llm.models.max_output_tokens_for`): a local server's whole window may be 8k."""
    # Bounds on what a repository, a model or an MCP server hands the runner (docs/limits.md).
    prompt_file_max_bytes: int = Field(1_000_000, gt=0)
    """Most bytes read of a file the prompt builder reads from the workdir (AGENTS.md,
    .gitignore); only regular files that resolve inside the workdir are read."""
    max_tool_calls_per_reply: int = Field(50, gt=0)
    """Tool calls run from one model reply; the rest get one error naming this limit."""
    max_turn_results_chars: int = Field(400_000, gt=0)
    """Characters of tool results one turn sends back, all calls together."""
    max_parallel_reads: int = Field(8, gt=0)
    """Calls of read-only tools from one reply that run at the same time (1: one at a time)."""
    mcp_max_message_chars: int = Field(256 * 1024 * 1024, gt=0)
    """Longest JSON-RPC line a stdio MCP server may write; a longer one closes the connection
    (a 50 MB tool result is about 100 MB on the wire: the SDK sends it as text and as JSON)."""
    mcp_max_description_chars: int = Field(10_000, gt=0)
    """Characters of one tool description put in the prompt; the rest is cut."""
    mcp_max_catalogue_chars: int = Field(250_000, gt=0)
    """Characters of all tool descriptions and schemas together; tools past it are dropped."""
    tool_search: ToolSearchSettings = ToolSearchSettings()
    """When a large set of MCP tools is listed by name only and loaded with `find_tools`."""
    retry: RetrySettings = RetrySettings()
    """Retry policy for model calls."""
    models: dict[str, ModelInfo] = Field(default_factory=dict)
    """Extra or overriding entries of the model table, keyed by model name."""
    extensions: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """MCP servers for every task; a task's own `extensions` are merged over these."""
    hooks: dict[str, Any] = Field(default_factory=dict)
    """Hooks for every task, run before a task's own (validated like a task's `hooks:`)."""
    agents: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Sub-agents for every task (DESIGN 13); a task's own `agents` are merged over these."""
    prompts: list[Path] = Field(default_factory=list)
    """Extra prompt section folders, after the defaults and before the task's own."""
    out: Path = Path("agent-runs")
    """Artifacts folder: session logs, prompts, JUnit, server stderr."""
    jobs: int = Field(1, ge=1)
    """Tasks run at once."""
    max_cost_usd: float | None = Field(None, ge=0)
    """Cost cap for the whole run (this process)."""
    governor: GovernorSettings = GovernorSettings()
    """One cost cap and shared rate limits for every shard of a run (docs/fleet.md)."""
    governor_url: str | None = None
    """`--governor-url` / AGENT_RUNNER_GOVERNOR_URL: the store, over `governor.url`."""
    fleet_max_cost_usd: float | None = Field(None, gt=0)
    """`--fleet-max-cost-usd`: the cap of every shard together, over `governor.max_cost_usd`."""
    mcp_startup_timeout_s: float = Field(30.0, gt=0)
    """Time an MCP server has to start and list its tools."""
    tool_timeout_s: float = Field(120.0, gt=0)
    """Default time limit of one tool call."""
    workspace_limits: WorkspaceLimits = WorkspaceLimits()
    """Size limits of the built-in workspace's tools."""
    sandbox: SandboxSettings = SandboxSettings()
    """The sandbox of every task; a task's own `sandbox:` keys override these."""
    sandbox_mode: Literal["auto", "required", "off"] | None = None
    """`--sandbox MODE`: the mode of every task, over the config's and the tasks' own."""
    sandbox_backend: Literal["auto", "bwrap", "landlock", "none"] = "auto"
    """`--sandbox-backend`: which backend the probe tries (`none`: no backend works)."""
    allow_hosts: tuple[str, ...] = ()
    """`--allow-host HOST`: hosts every task's commands may reach, besides its own list."""
    shutdown_grace_s: float = Field(5.0, gt=0)
    """After SIGINT or SIGTERM, how long the run may take to stop before a watchdog writes the
    reports from what it knows and exits."""
    progress_interval_s: float = Field(30.0, gt=0)
    """Seconds between the heartbeat lines of a running task on the console (DESIGN 17)."""
    log_level: Literal["debug", "info", "warning", "error"] = "warning"
    """Verbosity of the runner's own diagnostics on stderr."""

    secrets: list[str] = Field(default_factory=list)
    """Names of environment variables whose values are secrets, beyond those whose names say so."""
    _files: tuple[Path, ...] = PrivateAttr(default=())

    def where(self, *keys: str | int) -> str:
        """`file:line:column` of a key path in the config file that sets it (the project file
        before the user file), or the project file's name when none does."""
        return locate_key(self._files, keys)

    def secret_values(self) -> list[str]:
        """Values that must never be written anywhere (DESIGN 7b): see `named_secrets`."""
        return list(self.named_secrets().values())

    def named_secrets(self) -> dict[str, str]:
        """Secret values by where they came from: the provider keys, the variables listed under
        `secrets:`, and variables whose names say KEY, TOKEN, SECRET, ... (`looks_secret`).

        A variable picked up only by its name is skipped when its value is shorter than
        SUBSTRING_LENGTH: `TOKENIZERS_PARALLELISM=false` is no credential, and masking `false`
        would garble every artifact. Declared ones are kept whatever their length.
        """
        found = {
            name: key.get_secret_value()
            for name, key in (
                ("OPENAI_API_KEY", self.openai_api_key),
                ("ANTHROPIC_API_KEY", self.anthropic_api_key),
            )
            if key is not None and key.get_secret_value()
        }
        for where, url in (
            ("--governor-url", self.governor_url),
            ("governor.url", self.governor.url),
        ):
            if password := urlsplit(url or "").password:  # redis://:PASSWORD@host
                found[f"the password in {where}"] = unquote(password)
        found.update(
            (f"${name}", value)
            for name, value in os.environ.items()
            if value and looks_secret(name) and len(value) >= SUBSTRING_LENGTH
        )
        found.update(
            (f"${name} (secrets:)", os.environ[name])
            for name in self.secrets
            if os.environ.get(name)
        )
        return found


def user_config_path() -> Path:
    """The user config file: `$XDG_CONFIG_HOME/agent-runner/config.yaml` (default ~/.config)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "agent-runner" / "config.yaml"


def environ() -> dict[str, str]:
    """A copy of the process environment, for `${VAR}` interpolation and server environments."""
    return dict(os.environ)


def secret_env_values() -> list[str]:
    """Values of environment variables whose names look secret (`looks_secret`), long enough to
    be credentials (see `Settings.named_secrets`)."""
    return [
        value
        for name, value in os.environ.items()
        if value and looks_secret(name) and len(value) >= SUBSTRING_LENGTH
    ]


def load_settings(
    overrides: Mapping[str, Any] | None = None,
    config_file: Path | None = None,
) -> Settings:
    """Build settings from CLI overrides, environment and config files, in precedence order."""
    project_file = config_file or PROJECT_CONFIG
    project_required = config_file is not None
    user_file = user_config_path()

    class _Bound(Settings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (
                init_settings,
                env_settings,
                YamlFileSource(settings_cls, project_file, project_required),
                YamlFileSource(settings_cls, user_file, required=False),
            )

    given = {key: value for key, value in (overrides or {}).items() if value is not None}
    files = (project_file, user_file)
    try:
        settings = _Bound(**given)
    except ValidationError as exc:
        raise ConfigError(explain_settings(exc, files, Settings)) from None
    settings._files = files
    return settings
