"""The runner's error family and the exit codes they map to (DESIGN section 2).

Errors for the operator are raised as one of these and turned into an exit code in one place
(`cli.main`). Errors meant for the model (a bad tool call, a failing tool) never use this family:
they become tool results.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

__all__ = [
    "ConfigError",
    "ContextLengthError",
    "ExitCode",
    "McpAuthError",
    "McpServerError",
    "Problem",
    "ProviderError",
    "RunnerError",
    "SandboxUnavailable",
    "TaskFileError",
    "worst_exit_code",
]


class ExitCode(IntEnum):
    """Process exit codes, as documented in docs/cli.md (and the README's table)."""

    OK = 0
    FAILED = 1
    USAGE = 2
    INTERNAL = 3
    INFRASTRUCTURE = 4
    BUDGET = 5
    SIGINT = 130
    SIGTERM = 143


# Worst first: with several tasks the first code of this order that occurs wins.
_SEVERITY = (
    ExitCode.SIGTERM,
    ExitCode.SIGINT,
    ExitCode.INTERNAL,
    ExitCode.USAGE,  # a task found misconfigured once its servers listed their tools
    ExitCode.INFRASTRUCTURE,
    # A configuration error found only once a task ran (e.g. a sub-agent allowlist that matches
    # none of the tools its servers listed): never reported as a pass.
    ExitCode.USAGE,
    ExitCode.FAILED,
    ExitCode.BUDGET,
    ExitCode.OK,
)


def worst_exit_code(codes: list[ExitCode]) -> ExitCode:
    """The one exit code of a run of several tasks: 3, 2, 4, 1, 5, 0 (interrupts win over all)."""
    for code in _SEVERITY:
        if code in codes:
            return code
    return ExitCode.OK


class RunnerError(Exception):
    """Base of every error the operator sees; `exit_code` says how the process ends."""

    exit_code: ExitCode = ExitCode.INTERNAL


class ConfigError(RunnerError):
    """Bad flag, bad config file, missing API key, unknown provider: nothing ran."""

    exit_code = ExitCode.USAGE


@dataclass(frozen=True)
class Problem:
    """One problem in a file, printed as `path:line:column: field: message (hint)`."""

    path: str
    line: int
    column: int
    field: str
    message: str
    hint: str = ""

    def __str__(self) -> str:
        # Line 0 marks a problem that is not in a file (a command-line flag).
        where = f"{self.path}:{self.line}:{self.column}" if self.line else self.path
        field = f" {self.field}:" if self.field else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"{where}:{field} {self.message}{hint}"


class TaskFileError(ConfigError):
    """One or more problems in task files; each is reported on its own line."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class ProviderError(RunnerError):
    """The model provider is unreachable or refused us after retries."""

    exit_code = ExitCode.INFRASTRUCTURE


class SandboxUnavailable(RunnerError):
    """`sandbox: {mode: required}` and no backend confines commands on this host."""

    exit_code = ExitCode.INFRASTRUCTURE


class ContextLengthError(ProviderError):
    """The prompt is longer than the model's context window; the loop compacts and retries."""


class McpServerError(RunnerError):
    """A required MCP server could not be started or listed."""

    exit_code = ExitCode.INFRASTRUCTURE


class McpAuthError(ConfigError):
    """An MCP server's `auth:` cannot work: a wrong secret, a refused token, a server that only
    offers an interactive grant (DESIGN 26). Exit 2, before any model call."""
