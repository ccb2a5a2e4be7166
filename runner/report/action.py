"""The composite action's glue (`action.yml`): its inputs checked and turned into the runner's
command line, and the default name of the artifact it uploads, before anything runs.

The action's run step calls `python -P -m runner.report.action`, which reads the inputs from the
environment, writes the `agent-runner` arguments NUL-separated to stdout (bash reads them with
`mapfile -d ''` and `exec`s the runner) and the artifact's name to `$GITHUB_OUTPUT`. No input goes
through bash's word splitting or globbing: `tasks` and `args` are split here with shell-like
quoting (shlex, no expansion), so `agent-tasks/**/*.yaml` and `--filter docs-*` reach the runner
as written and the runner globs them. A bad input (an unclosed quote, a malformed `shard`) is a
configuration error: exit code 2 with the step outputs and summary a run's error gets.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

from runner.errors import ConfigError, ExitCode
from runner.report.github import GitHubActions, escape_data, write_usage_error

__all__ = ["artifact_name", "command_line", "main", "split_words"]

_SHARD = re.compile(r"([1-9][0-9]{0,5})/([1-9][0-9]{0,5})")
_NAME_PART = re.compile(r"[^A-Za-z0-9._]+")
_ARTIFACT_FORBIDDEN = frozenset('":<>|*?\r\n\\/')
"""Characters upload-artifact v4 refuses in an artifact's name."""
_MATRIX_PART_LIMIT = 60
_CALLS_FILE = "agent-runner-calls"
"""In `$RUNNER_TEMP` (emptied for every job): how many times this job called the action."""

_VALUE_FLAGS = (
    ("MODEL", "--model"),
    ("JOBS", "--jobs"),
    ("SHARD", "--shard"),
    ("MAX_COST", "--max-cost-usd"),
    ("OUT", "--out"),
    ("JUNIT", "--junit"),
    ("WORKDIR", "--workdir"),
    ("MAX_TURNS", "--max-turns"),
    ("MAX_TOKENS", "--max-tokens"),
    ("TIMEOUT", "--timeout"),
    ("APPEND_SYSTEM_PROMPT", "--append-system-prompt"),
)
"""Inputs (by the run step's environment name) that become one `--flag=value` each when set; the
`=` form keeps a value that starts with `-` a value."""
_RULE_FLAGS = (("ALLOW_TOOLS", "--allow-tool"), ("DENY_TOOLS", "--deny-tool"))
"""Inputs holding one permission rule per line (rules may hold spaces)."""


def split_words(text: str, what: str) -> list[str]:
    """`text` split as a shell would, without expanding anything: quotes group, a backslash
    escapes, newlines separate like spaces. Raises ConfigError for an unclosed quote."""
    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError as exc:
        raise ConfigError(
            f"input `{what}`: {exc} (close every quote; a path with spaces is written "
            "'my tasks/a.yaml' or \"my tasks/a.yaml\")"
        ) from None


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _check_shard(shard: str) -> tuple[str, str]:
    match = _SHARD.fullmatch(shard)
    if match is None or int(match[1]) > int(match[2]):
        raise ConfigError(
            f"input `shard`: {shard[:40]!r} is not K/N (two whole numbers, 1 <= K <= N, "
            "e.g. ${{ matrix.shard }}/4)"
        )
    return match[1], match[2]


def command_line(env: Mapping[str, str]) -> list[str]:
    """The `agent-runner` arguments for the action's inputs, as found in `env` (the run step's
    environment names: TASKS, PROMPT, EXTRA, ...). Raises ConfigError for a bad input."""
    tasks = split_words(env.get("TASKS", ""), "tasks")
    prompt = env.get("PROMPT", "")
    if not tasks and not prompt.strip():
        raise ConfigError("set the input `tasks` (task files, folders or globs) or `prompt`")
    if env.get("SHARD"):
        _check_shard(env["SHARD"])
    argv = ["run", *tasks]
    if prompt.strip():
        # Attached, so that a prompt that starts with `-` is not read as an option.
        argv += [f"-p{prompt}"] if prompt.startswith("-") else ["-p", prompt]
    for name, flag in _VALUE_FLAGS:
        if env.get(name, "").strip():
            argv.append(f"{flag}={env[name].strip()}")
    for name, flag in _RULE_FLAGS:
        argv += [f"{flag}={rule}" for rule in _lines(env.get(name, ""))]
    return argv + split_words(env.get("EXTRA", ""), "args")


def _matrix_part(text: str) -> str:
    """The job's matrix values (`toJSON(matrix)`) as one name part, e.g. `ubuntu-latest-3`."""
    try:
        matrix = json.loads(text) if text.strip() else None
    except json.JSONDecodeError:
        return ""
    values: list[str] = []

    def leaves(value: object) -> None:
        if isinstance(value, dict):
            for item in value.values():
                leaves(item)
        elif isinstance(value, list):
            for item in value:
                leaves(item)
        elif value is not None:
            values.append(_NAME_PART.sub("-", str(value)).strip("-"))

    leaves(matrix)
    return "-".join(v for v in values if v)[:_MATRIX_PART_LIMIT].strip("-")


def _call_number(runner_temp: str) -> int:
    """1 for the job's first call of the action, 2 for its second, ..."""
    if not runner_temp or not Path(runner_temp).is_dir():
        return 1
    counter = Path(runner_temp) / _CALLS_FILE
    try:
        number = int(counter.read_text(encoding="utf-8").strip() or 0) + 1
    except (OSError, ValueError):
        number = 1
    try:
        counter.write_text(str(number), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot count the action's calls in $RUNNER_TEMP: {exc}") from None
    return number


def artifact_name(env: Mapping[str, str]) -> str:
    """The `artifact-name` input, or the default: `agent-runs-JOB[-MATRIX][-shard-K-of-N]
    [-call-M]-attempt-A`, unique for each matrix job, each call of the action in one job and
    each attempt. Counts this call (a file in `$RUNNER_TEMP`). Raises ConfigError for a name
    upload-artifact would refuse."""
    number = _call_number(env.get("RUNNER_TEMP", ""))
    given = env.get("NAME", "").strip()
    if given:
        bad = sorted({c for c in given if c in _ARTIFACT_FORBIDDEN})
        if bad:
            raise ConfigError(
                f"input `artifact-name`: {given[:80]!r} holds {''.join(bad)!r}, which "
                'upload-artifact refuses (no " : < > | * ? \\ / or line breaks)'
            )
        return given
    job = _NAME_PART.sub("-", env.get("GITHUB_JOB", "") or "job").strip("-")
    parts = ["agent-runs", job or "job"]
    if matrix := _matrix_part(env.get("MATRIX", "")):
        parts.append(matrix)
    if env.get("SHARD"):
        k, n = _check_shard(env["SHARD"])
        parts.append(f"shard-{k}-of-{n}")
    if number > 1:
        parts.append(f"call-{number}")
    parts.append(f"attempt-{env.get('GITHUB_RUN_ATTEMPT') or '1'}")
    return "-".join(parts)


def main(env: Mapping[str, str]) -> int:
    """Write the arguments to stdout and the artifact's name to `$GITHUB_OUTPUT`; for a bad
    input, say why (an `::error` line, the step outputs and summary) and return 2."""
    github = GitHubActions.from_env(env)
    try:
        name = artifact_name(env)
        if github is not None and github.output is not None:
            with github.output.open("a", encoding="utf-8") as handle:
                handle.write(f"artifact-name={name}\n")
        argv = command_line(env)
    except ConfigError as exc:
        message = str(exc)
        # stderr: stdout carries the arguments (GitHub reads workflow commands on both).
        print(f"agent-runner: {message}", file=sys.stderr)
        print(f"::error title=agent-runner input::{escape_data(message)}", file=sys.stderr)
        if github is not None:
            write_usage_error(github, message)
        return ExitCode.USAGE
    sys.stdout.write("".join(f"{arg}\0" for arg in argv))
    return ExitCode.OK


if __name__ == "__main__":
    from runner.settings import environ

    raise SystemExit(main(environ()))
