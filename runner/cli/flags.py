"""The flags of `run`, `resume` and `list` (DESIGN sections 2 and 20), one group per concern.

A flag that `run` and `resume` share is defined once, in `run_options` (how the run is made and
reported) or `task_overrides` (a task limit or policy the flag overrides); adding one is one
`add_argument` in the group it belongs to. The handlers are in `runner.cli.commands`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TypeAlias

from runner.cli.commands import list_command, resume_command, run_command

__all__ = ["add_list", "add_params", "add_resume", "add_run", "common"]

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def common(parser: argparse.ArgumentParser) -> None:
    """`--config` and `--log-level`: every command that reads the config."""
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help="config file instead of ./agent-runner.yaml"
    )
    parser.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        help="verbosity of the runner's own diagnostics",
    )


def add_params(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help=help_text)


def run_options(parser: argparse.ArgumentParser) -> None:
    """How `run` and `resume` run and report: model, artifacts, console, sandbox, streams."""
    common(parser)
    parser.add_argument("--model", metavar="PROVIDER:MODEL", help="model for every task")
    parser.add_argument(
        "--out", type=Path, metavar="DIR", help="artifacts folder (default: agent-runs/)"
    )
    parser.add_argument("--junit", type=Path, metavar="PATH", help="JUnit XML report path")
    parser.add_argument("--max-cost-usd", type=float, metavar="X", help="cost cap for the run")
    parser.add_argument(
        "--governor-url",
        metavar="URL",
        help="share one cost cap and rate limits with the run's other shards through this store"
        " (redis://, rediss://, unix://, file://; docs/fleet.md)",
    )
    parser.add_argument(
        "--fleet-max-cost-usd",
        type=float,
        metavar="X",
        help="cost cap of every shard of the run together (needs a governor)",
    )
    parser.add_argument(
        "--output", choices=["text", "json"], default="text", help="console summary format"
    )
    parser.add_argument("--sandbox", choices=["auto", "required", "off"], help="mode of every task")
    parser.add_argument(
        "--sandbox-backend",
        choices=["auto", "bwrap", "landlock", "none"],
        help="what confines commands (default auto: bwrap, else Landlock)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        metavar="HOST",
        help="let commands reach HOST (name, *.domain, IP; :PORT) through the task's proxy"
        " (repeatable; adds to sandbox.network)",
    )
    parser.add_argument("--tool-mode", choices=["xml", "native", "auto"], help="for every task")
    parser.add_argument(
        "--fail-on",
        choices=["error", "warning", "note", "never"],
        help="a task with a finding this severe or more fails (findings: tasks; default never)",
    )
    parser.add_argument(
        "--min-pass-rate",
        type=float,
        default=1.0,
        metavar="R",
        help="a repeated task passes when this share of its samples pass (default 1: all)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="failures and summary only")
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per turn; transcripts")
    parser.add_argument(
        "--events",
        metavar="FILE|-",
        help="stream every session-log record as it is written, one JSON line each with the "
        "task name (- for stdout; the console then goes to stderr)",
    )
    parser.add_argument(
        "--result-file",
        type=Path,
        metavar="FILE",
        help="write the final result: its text (one task) or a JSON map of task to result",
    )


def task_overrides(parser: argparse.ArgumentParser) -> None:
    """Each task limit and policy, overriding the tasks' own (`runner.run.TaskOverrides`)."""
    group = parser.add_argument_group("task limits and policy (override the tasks')")
    group.add_argument("--max-turns", type=int, metavar="N", help="model calls per task")
    group.add_argument("--max-tokens", type=int, metavar="N", help="tokens per task")
    group.add_argument("--task-max-cost-usd", type=float, metavar="X", help="cost per task")
    group.add_argument("--timeout", metavar="DURATION", help="wall time per task (90s, 20m, 1h)")
    group.add_argument(
        "--allow-tool",
        action="append",
        default=[],
        metavar="RULE",
        help="a permission rule TOOL(GLOB) added to the tasks' allow rules (repeatable)",
    )
    group.add_argument(
        "--deny-tool",
        action="append",
        default=[],
        metavar="RULE",
        help="a permission rule TOOL(GLOB) added to the tasks' deny rules (repeatable)",
    )
    group.add_argument(
        "--append-system-prompt",
        metavar="TEXT",
        help="text added to the system prompt as a section of its own",
    )


def headless(parser: argparse.ArgumentParser) -> None:
    """`run -p`: one ad-hoc task instead of task files (`runner.run.PromptTask`)."""
    group = parser.add_argument_group("one task without a task file")
    source = group.add_mutually_exclusive_group()
    source.add_argument("-p", "--prompt", metavar="PROMPT", help="the task's prompt (- for stdin)")
    source.add_argument("--prompt-file", type=Path, metavar="FILE", help="the prompt from a file")
    group.add_argument(
        "--workdir", type=Path, metavar="DIR", help="where the task's tools work (default: .)"
    )
    group.add_argument("--name", metavar="NAME", help="the task's name (default: prompt)")


def selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shard", metavar="K/N", help="only shard K of N (1-based)")
    parser.add_argument("--filter", action="append", metavar="GLOB", help="task names to take")


def add_run(commands: Commands) -> None:
    run = commands.add_parser(
        "run",
        help="run task files, or one prompt",
        description="Run task files (files, directories or globs), or one task from a prompt "
        '(-p "PROMPT", --prompt-file FILE, -p - for stdin) in --workdir.',
    )
    run.add_argument("paths", nargs="*", metavar="PATH")
    headless(run)
    run_options(run)
    task_overrides(run)
    run.add_argument("--jobs", type=int, metavar="N", help="tasks run at once")
    run.add_argument("--repeat", type=int, metavar="K", help="run each task K times, as samples")
    selection(run)
    add_params(run, "set a declared param (repeatable)")
    run.add_argument("--fail-fast", action="store_true", help="stop at the first failed task")
    run.add_argument("--isolation", choices=["none", "worktree"], help="tasks in git worktrees")
    run.add_argument("--keep-worktrees", action="store_true", help="do not remove the worktrees")
    run.set_defaults(handler=run_command)


def add_resume(commands: Commands) -> None:
    resume = commands.add_parser(
        "resume",
        help="continue sessions from their logs",
        description="Continue sessions from their logs, in the checkout where resume runs. A "
        "directory resumes, per task, its latest session when that did not pass.",
    )
    resume.add_argument("paths", nargs="*", metavar="LOG_OR_DIR")
    resume.add_argument(
        "--latest",
        action="store_true",
        help="resume the newest run under --out: its sessions that did not pass (all of them "
        "when every one passed)",
    )
    resume.add_argument("--message", help="the user message to continue with")
    run_options(resume)
    task_overrides(resume)
    add_params(resume, "a param of the task file (the log's params are not reused)")
    resume.add_argument(
        "--workdir",
        type=Path,
        metavar="DIR",
        help="run the tools in DIR instead of the task's workdir in this checkout",
    )
    resume.add_argument(
        "--from-log",
        action="store_true",
        help="when the task file is missing, run the task as the log recorded it: its success "
        "check, extension commands and servers run as written in the log",
    )
    resume.add_argument(
        "--accept-task-changes",
        action="store_true",
        help="resume even though the task file's extensions, hooks, success, sandbox, "
        "permissions, tools, agents or skills differ from the session's (by default resume "
        "refuses, exit 2: they decide what runs)",
    )
    resume.set_defaults(handler=resume_command)


def add_list(commands: Commands) -> None:
    listing = commands.add_parser(
        "list",
        help="print the tasks run would run",
        description="Print the tasks `run` would run with the same paths, --filter and --shard: "
        "name, file:line, workdir, model, tool mode, isolation and sandbox.",
    )
    listing.add_argument("paths", nargs="+", metavar="PATH")
    selection(listing)
    add_params(listing, "set a declared param (repeatable)")
    listing.add_argument("--model", metavar="PROVIDER:MODEL", help="model for every task")
    listing.add_argument("--tool-mode", choices=["xml", "native", "auto"], help="for every task")
    listing.add_argument("--sandbox", choices=["auto", "required", "off"], help="for every task")
    listing.add_argument("--isolation", choices=["none", "worktree"], help="for every task")
    listing.add_argument(
        "--repeat", type=int, metavar="K", help="as run --repeat K: list the samples, worst cost"
    )
    listing.add_argument(
        "--output", choices=["text", "json"], default="text", help="format of the listing"
    )
    common(listing)
    listing.set_defaults(handler=list_command)
