"""Runner settings, and the one module that reads `os.environ`.

Precedence, highest first: CLI flags > environment (`AGENT_RUNNER_*`, plus the providers'
usual `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`) > the
project config (`./agent-runner.yaml`, or `--config FILE`) > the user config
(`$XDG_CONFIG_HOME/agent-runner/config.yaml`) > defaults.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from runner.errors import ConfigError

__all__ = [
    "PROJECT_CONFIG",
    "ModelInfo",
    "RetrySettings",
    "Settings",
    "WorkspaceLimits",
    "environ",
    "load_settings",
    "secret_env_values",
    "user_config_path",
]

PROJECT_CONFIG = Path("agent-runner.yaml")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)


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


class ModelInfo(BaseModel):
    """Context window and prices of one model; config can add or override entries."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context_window: int = Field(gt=0)
    """Tokens the model accepts in one request, prompt and reply together."""
    input_usd_per_mtok: float = Field(0.0, ge=0)
    """Price per million input tokens."""
    output_usd_per_mtok: float = Field(0.0, ge=0)
    """Price per million output tokens."""
    cache_read_usd_per_mtok: float | None = Field(None, ge=0)
    """Price per million tokens read from the prompt cache; None = the input price."""
    cache_write_usd_per_mtok: float | None = Field(None, ge=0)
    """Price per million tokens written to the prompt cache; None = the input price."""


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
    temperature: float | None = None
    """Sampling temperature; None leaves the provider's default."""
    max_output_tokens: int = Field(8192, gt=0)
    """Largest reply per model call."""
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
    """Cost cap for the whole run."""
    mcp_startup_timeout_s: float = Field(30.0, gt=0)
    """Time an MCP server has to start and list its tools."""
    tool_timeout_s: float = Field(120.0, gt=0)
    """Default time limit of one tool call."""
    workspace_limits: WorkspaceLimits = WorkspaceLimits()
    """Size limits of the built-in workspace's tools."""
    shutdown_grace_s: float = Field(5.0, gt=0)
    """After SIGINT or SIGTERM, how long the run may take to stop before a watchdog writes the
    reports from what it knows and exits."""
    log_level: Literal["debug", "info", "warning", "error"] = "warning"
    """Verbosity of the runner's own diagnostics on stderr."""

    def secret_values(self) -> list[str]:
        """Values that must never be written anywhere: API keys and secret-named env vars."""
        values = [
            key.get_secret_value()
            for key in (self.openai_api_key, self.anthropic_api_key)
            if key is not None
        ]
        return values + secret_env_values()


def user_config_path() -> Path:
    """The user config file: `$XDG_CONFIG_HOME/agent-runner/config.yaml` (default ~/.config)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "agent-runner" / "config.yaml"


def environ() -> dict[str, str]:
    """A copy of the process environment, for `${VAR}` interpolation and server environments."""
    return dict(os.environ)


def secret_env_values() -> list[str]:
    """Values of environment variables whose names contain KEY, TOKEN, SECRET or PASSWORD."""
    return [value for name, value in os.environ.items() if _SECRET_NAME.search(name) and value]


class _YamlFileSource(PydanticBaseSettingsSource):
    """Settings from one YAML file; a missing optional file gives nothing."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path, required: bool) -> None:
        super().__init__(settings_cls)
        self._data = _read_config_file(path, required)

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._data)


def _read_config_file(path: Path, required: bool) -> dict[str, Any]:
    if not path.is_file():
        if required:
            raise ConfigError(f"{path}: config file not found (check the --config path)")
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: config is not valid YAML (fix the syntax)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1:1: config must be a mapping of settings (key: value)")
    return data


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
                _YamlFileSource(settings_cls, project_file, project_required),
                _YamlFileSource(settings_cls, user_file, required=False),
            )

    given = {key: value for key, value in (overrides or {}).items() if value is not None}
    try:
        return _Bound(**given)
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"])
            # Never echo the rejected input: it may be a secret.
            lines.append(f"setting {where}: {error['msg']}")
        raise ConfigError(
            "invalid settings (from flags, AGENT_RUNNER_* variables or config files):\n  "
            + "\n  ".join(lines)
        ) from None
