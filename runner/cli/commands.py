"""The handlers of `run`, `resume` and `list`: flags -> settings, options and overrides -> `run`.

Each imports what it needs when it runs, so `--help` imports no SDK.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from runner.errors import ConfigError

if TYPE_CHECKING:
    from runner.run import PromptTask, RunOptions
    from runner.settings import Settings

__all__ = ["list_command", "parse_params", "resume_command", "run_command"]

PROMPT_LIMIT_BYTES = 1024 * 1024
"""The largest prompt `-p -` and `--prompt-file` read; a bigger one is refused, not cut."""


def parse_params(pairs: Sequence[str]) -> dict[str, str]:
    """`KEY=VALUE` pairs from `--param`."""
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param {pair!r}: write it as KEY=VALUE")
        params[key.strip()] = value
    return params


def settings_and_options(args: argparse.Namespace) -> tuple[Settings, RunOptions]:
    from runner.run import RunOptions, TaskOverrides
    from runner.settings import load_settings
    from runner.workspace import make_undumpable

    _one_stdout(args)
    task_overrides = TaskOverrides(
        max_turns=args.max_turns,
        max_tokens=args.max_tokens,
        max_cost_usd=args.task_max_cost_usd,
        timeout=args.timeout,
        allow=tuple(args.allow_tool),
        deny=tuple(args.deny_tool),
        append_system_prompt=args.append_system_prompt,
    )
    task_overrides.check()
    make_undumpable()  # run, resume: commands must not read the API keys in /proc/PID/environ

    overrides = {
        "jobs": getattr(args, "jobs", None),
        "out": args.out,
        "max_cost_usd": args.max_cost_usd,
        "governor_url": args.governor_url,
        "fleet_max_cost_usd": args.fleet_max_cost_usd,
        "log_level": args.log_level,
        "sandbox_mode": args.sandbox,
        "sandbox_backend": args.sandbox_backend,
        "tool_mode": getattr(args, "tool_mode", None),
        "allow_hosts": args.allow_host,
        "fail_on": args.fail_on,
    }
    settings = load_settings(overrides, config_file=args.config)
    options = RunOptions(
        out=settings.out,
        junit=args.junit,
        output=args.output,
        quiet=args.quiet,
        verbose=args.verbose,
        fail_fast=getattr(args, "fail_fast", False),
        isolation=getattr(args, "isolation", None),
        keep_worktrees=getattr(args, "keep_worktrees", False),
        overrides=task_overrides,
        events=args.events,
        result_file=args.result_file,
        repeat=getattr(args, "repeat", None),
        min_pass_rate=args.min_pass_rate,
    )
    return settings, options


def _one_stdout(args: argparse.Namespace) -> None:
    """Refuse two flags that would both write to stdout."""
    takers = []
    if args.output == "json":
        takers.append("--output json")
    if args.events == "-":
        takers.append("--events -")
    if args.result_file is not None and str(args.result_file) == "-":
        takers.append("--result-file -")
    if len(takers) > 1:
        raise ConfigError(
            f"{' and '.join(takers)} all write to stdout: keep one, and give the other a file"
            if len(takers) > 2
            else f"{takers[0]} and {takers[1]} both write to stdout: give one of them a file"
            " (--events FILE, --result-file FILE) or drop --output json"
        )


def run_command(args: argparse.Namespace) -> int:
    from runner.run import PromptTask, run_tasks

    source: PromptTask | list[str] | None = _prompt_task(args)
    if source is None:
        if not args.paths:
            raise ConfigError(
                'run: name task files (PATH...), or give a prompt: -p "PROMPT", '
                "--prompt-file FILE, or -p - to read it from stdin"
            )
        if "-" in args.paths:
            raise ConfigError("run -: to read a prompt from stdin, write run -p -")
        if args.workdir is not None or args.name is not None:
            raise ConfigError(
                "--workdir and --name go with -p or --prompt-file; a task file sets its own "
                "`workdir:` and `name:`"
            )
        source = args.paths
    elif args.paths:
        raise ConfigError(
            f"run: a prompt (-p or --prompt-file) or task files ({' '.join(args.paths)}), not "
            "both; drop one"
        )
    settings, options = settings_and_options(args)
    if isinstance(source, PromptTask):
        options = dataclasses.replace(options, print_result=True)
    return run_tasks(
        source,
        parse_params(args.param),
        (args.filter, args.shard),
        args.model,
        settings,
        options,
    )


def _prompt_task(args: argparse.Namespace) -> PromptTask | None:
    """The `PromptTask` of `-p`/`--prompt-file`, or None when neither is given."""
    from runner.run import PromptTask

    if args.prompt is None and args.prompt_file is None:
        return None
    if args.prompt == "-":
        text = _bounded(sys.stdin.buffer.read(PROMPT_LIMIT_BYTES + 1), "-p - (stdin)")
    elif args.prompt is not None:
        text = args.prompt
    else:
        text = _read_prompt_file(args.prompt_file)
    if not text.strip():
        raise ConfigError("the prompt is empty: give the task something to do")
    return PromptTask(prompt=text, name=args.name or "prompt", workdir=args.workdir or Path())


def _read_prompt_file(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            return _bounded(handle.read(PROMPT_LIMIT_BYTES + 1), f"--prompt-file {path}")
    except OSError as error:
        raise ConfigError(f"--prompt-file {path}: {error.strerror or error}") from None


def _bounded(data: bytes, what: str) -> str:
    if len(data) > PROMPT_LIMIT_BYTES:
        raise ConfigError(f"{what}: the prompt is over {PROMPT_LIMIT_BYTES} bytes; shorten it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{what}: the prompt is not UTF-8 text") from None


def resume_command(args: argparse.Namespace) -> int:
    from runner.run import latest_run_logs, resume_sessions

    paths = args.paths
    if args.latest and paths:
        raise ConfigError(f"resume: --latest or logs ({' '.join(paths)}), not both")
    if not args.latest and not paths:
        raise ConfigError(
            "resume: name session logs or folders (LOG_OR_DIR...), or pass --latest to resume "
            "the newest run under --out"
        )
    settings, options = settings_and_options(args)
    args.params = parse_params(args.param)
    if args.latest:
        paths = [str(path) for path in latest_run_logs(options.out)]
    return resume_sessions(paths, args, settings, options)


def list_command(args: argparse.Namespace) -> int:
    from runner.run import list_tasks
    from runner.settings import load_settings

    overrides = {
        "log_level": args.log_level,
        "tool_mode": args.tool_mode,
        "sandbox_mode": args.sandbox,
    }
    settings = load_settings(overrides, config_file=args.config)
    return list_tasks(
        args.paths,
        parse_params(args.param),
        (args.filter, args.shard),
        args.model,
        settings,
        isolation=args.isolation,
        json_output=args.output == "json",
        repeat=args.repeat,
    )
