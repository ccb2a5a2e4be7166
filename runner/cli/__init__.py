"""Command line: argparse -> settings -> commands. The one place that turns errors into exit codes.

Nothing here imports an LLM or MCP SDK at module level, so `--version` and `--help` stay fast;
each command imports what it needs when it runs. The flags of `run`, `resume` and `list` are in
`flags` (their handlers in `commands`); a mistyped flag or command gets a "did you mean"
(`suggest`).
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from runner import __version__
from runner.cli.commands import parse_params
from runner.cli.flags import add_list, add_params, add_resume, add_run, common
from runner.cli.suggest import SuggestingParser
from runner.errors import ConfigError, ExitCode, RunnerError

__all__ = ["build_parser", "entry", "main", "parse_params"]

Handler = Callable[[argparse.Namespace], int]


class Terminated(BaseException):
    """SIGTERM arrived outside a run (which handles it itself)."""


def _on_sigterm(signum: int, frame: object) -> None:
    # A Python process that is PID 1 (in a container) ignores SIGTERM unless it handles it.
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)  # a usage error exits 2 here, with a "did you mean"
    except SystemExit as refused:
        if refused.code == ExitCode.USAGE:
            _report_refused_line()
        raise
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return ExitCode.USAGE
    if not isinstance(sys.stdout, _ReaderMayLeave):
        sys.stdout = _ReaderMayLeave(sys.stdout)
    try:
        return handler(args)
    except RunnerError as exc:
        from runner.run import report_error

        # stdout is one JSON document (--output json) or the event stream (--events -).
        json_output = getattr(args, "output", "") == "json"
        taken = json_output or getattr(args, "events", "") == "-"
        taken = taken or str(getattr(args, "result_file", "")) == "-"
        return report_error(exc, json_output=json_output, stdout_taken=taken)
    except BaseExceptionGroup as group:
        # Task groups wrap errors; an operator error inside one is still an operator error.
        leaf = _first_runner_error(group)
        if leaf is None:
            traceback.print_exc()
            return ExitCode.INTERNAL
        print(f"agent-runner: {leaf}", file=sys.stderr)
        return leaf.exit_code
    except KeyboardInterrupt:
        print("agent-runner: interrupted", file=sys.stderr)
        return ExitCode.SIGINT
    except Terminated:
        print("agent-runner: terminated", file=sys.stderr)
        return ExitCode.SIGTERM
    except Exception:
        traceback.print_exc()
        print("agent-runner: internal error (a bug); please report it", file=sys.stderr)
        return ExitCode.INTERNAL


def entry() -> None:
    """The console script and `python -m runner`: `main`, then an exit that skips the teardown.

    Freeing the SDKs' modules and a few hundred thousand objects at interpreter exit costs
    0.1-0.2 s, after the work is done. By now every file the run wrote is closed (logs and reports
    are closed as they finish, temporary folders removed), so only the standard streams are
    flushed. A reaper (`runner.workspace.sandbox.reaper`) needs no goodbye: it ends when its pipe
    closes with us.
    """
    code = main()
    if sys.getprofile() is not None or sys.gettrace() is not None:
        # A profiler or coverage tool is watching: it writes its data at the normal exit.
        raise SystemExit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class _ReaderMayLeave(io.TextIOBase):
    """stdout that outlives its reader (`agent-runner run ... | head -1`): once the pipe is
    broken, output goes to /dev/null and the run carries on to its own exit code, instead of a
    BrokenPipeError traceback from whichever line came next."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._divert()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._divert()

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def _divert(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())
        os.close(devnull)


def _report_refused_line() -> None:
    """A refused command line is a configuration error on GitHub too: annotation, step outputs
    and summary (on stderr: stdout may be a JSON document or the event stream)."""
    from runner.run import annotate_config_error

    message = SuggestingParser.refused or "the command line was refused (see the usage above)"
    annotate_config_error(f"usage error: {message}", json_output=True, outputs=True)


def _first_runner_error(group: BaseExceptionGroup[BaseException]) -> RunnerError | None:
    for exc in group.exceptions:
        if isinstance(exc, RunnerError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _first_runner_error(exc)
            if found is not None:
                return found
    return None


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = SuggestingParser(
        prog="agent-runner",
        description="Run LLM agents non-interactively: task files in; exit codes, JUnit, "
        "session logs and step summaries out.",
        epilog="Exit codes: 0 passed, 1 failed, 2 usage/config error, 3 internal error, "
        "4 infrastructure error, 5 budget exceeded, 130/143 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"agent-runner {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    add_run(commands)
    add_resume(commands)
    add_list(commands)
    _add_validate(commands)
    _add_prompt(commands)
    _add_log(commands)
    _add_report(commands)
    _add_mcp(commands)
    _add_fleet(commands)
    return parser


def _add_validate(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    validate = commands.add_parser(
        "validate",
        help="check task files and config without running",
        description="Check task files and config; print every problem as file:line: message.",
    )
    validate.add_argument("paths", nargs="+", metavar="PATH")
    add_params(validate, "set a declared param (repeatable)")
    common(validate)
    validate.set_defaults(handler=_validate)


def _add_prompt(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    prompt = commands.add_parser(
        "prompt",
        help="print the system prompt a task would get",
        description="Print the exact system prompt of a task (starts its MCP servers to list "
        "their tools).",
    )
    prompt.add_argument("task", metavar="TASK", help="a task file")
    prompt.add_argument("--name", help="which task of a suite file")
    prompt.add_argument(
        "--stats",
        action="store_true",
        help="print the first request's tokens by section and by tool instead of the prompt",
    )
    prompt.add_argument(
        "--output", choices=["text", "json"], default="text", help="format of --stats"
    )
    prompt.add_argument(
        "--tool-mode",
        choices=["xml", "native"],
        help="the prompt of this tool mode (default: the task's)",
    )
    prompt.add_argument(
        "--model", metavar="PROVIDER:MODEL", help="measure for this model (window, wire shape)"
    )
    add_params(prompt, "set a declared param (repeatable)")
    common(prompt)
    prompt.set_defaults(handler=_prompt)


def _add_log(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    log = commands.add_parser("log", help="read session logs")
    sub = log.add_subparsers(title="log commands", metavar="COMMAND")
    show = sub.add_parser("show", help="print a session log as a transcript")
    show.add_argument("log", type=Path, metavar="LOG")
    show.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show tool calls and results in full instead of one line each",
    )
    show.set_defaults(handler=_log_show)
    export = sub.add_parser(
        "export",
        help="export a session log (html: also every log of a run folder, as one page)",
    )
    export.add_argument("log", type=Path, metavar="LOG|DIR")
    export.add_argument(
        "--format", choices=["json", "markdown", "html"], default="json", help="default: json"
    )
    export.add_argument("-o", "--output", type=Path, metavar="FILE", help="write here, not stdout")
    export.set_defaults(handler=_log_export)


def _add_report(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = commands.add_parser("report", help="work with reports")
    sub = report.add_subparsers(title="report commands", metavar="COMMAND")
    merge = sub.add_parser(
        "merge",
        help="merge shard JUnit files (and their summary.json, findings.sarif, review.json)",
        description="Merge JUnit XML files from shards into one, and the findings.sarif and "
        "review.json beside them. With --summary, also merge the shards' summary.json files. A "
        "task found in several inputs (a re-run shard) is a warning.",
    )
    merge.add_argument("inputs", nargs="+", type=Path, metavar="JUNIT")
    merge.add_argument(
        "-o", "--output", type=Path, required=True, metavar="OUT", help="the merged JUnit file"
    )
    merge.add_argument(
        "--summary",
        nargs="+",
        type=Path,
        metavar="SUMMARY_JSON",
        help="also merge these summary.json files of the shards",
    )
    merge.add_argument(
        "--summary-output",
        type=Path,
        metavar="OUT",
        help="merged summary path (default: summary.json beside OUT)",
    )
    merge.add_argument(
        "--dedupe",
        choices=["none", "latest"],
        default="none",
        help="a task in several inputs: count every copy (none) or only the newest (latest)",
    )
    merge.set_defaults(handler=_report_merge)


def _add_mcp(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = commands.add_parser("mcp", help="built-in MCP servers")
    sub = mcp.add_subparsers(title="servers", metavar="SERVER")
    workspace = sub.add_parser(
        "workspace",
        help="the workspace MCP server over stdio",
        description="Serve the built-in workspace tools over stdio, confined to --root.",
    )
    workspace.add_argument("--root", type=Path, required=True, metavar="DIR")
    workspace.add_argument(
        "--output-dir",
        type=Path,
        metavar="DIR",
        help="keep full command outputs here (default: a temporary folder)",
    )
    workspace.set_defaults(handler=_mcp_workspace)


def _add_fleet(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fleet = commands.add_parser("fleet", help="the governor shared by a run's shards")
    sub = fleet.add_subparsers(title="fleet commands", metavar="COMMAND")
    status = sub.add_parser(
        "status",
        help="print a run's spend, reservations, shards, waits and 429s",
        description="Read the figures of run RUN from the governor's store while it goes on "
        "(docs/fleet.md).",
    )
    status.add_argument("run", metavar="RUN", help="the run key the shards share")
    status.add_argument("--governor-url", metavar="URL", help="the store (default: the config's)")
    status.add_argument("--json", action="store_true", help="one JSON object on stdout")
    common(status)
    status.set_defaults(handler=_fleet_status)


def _fleet_status(args: argparse.Namespace) -> int:
    import json

    from runner.fleet import read_status, status_line
    from runner.settings import load_settings

    settings = load_settings({"governor_url": args.governor_url}, config_file=args.config)
    url = settings.governor_url or settings.governor.url
    if url is None:
        raise ConfigError(
            "fleet status: no store: pass --governor-url, set AGENT_RUNNER_GOVERNOR_URL or "
            "governor.url in the config"
        )
    figures = read_status(url, args.run, settings.governor.timeout_s)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"run {figures['run']} on {figures['store']}: {status_line(figures)}")
    if figures["shards"] == 0:
        print(f"agent-runner: no shard has reported to run {args.run!r} yet", file=sys.stderr)
    return ExitCode.OK


def _validate(args: argparse.Namespace) -> int:
    from runner.run import validate

    return validate(args.paths, parse_params(args.param), args.config)


def _prompt(args: argparse.Namespace) -> int:
    from runner.run import print_prompt

    return print_prompt(
        args.task,
        args.name,
        parse_params(args.param),
        args.config,
        stats=args.stats,
        json_output=args.output == "json",
        tool_mode=args.tool_mode,
        model=args.model,
    )


def _mcp_workspace(args: argparse.Namespace) -> int:
    from runner.workspace.server import serve

    sys.stdout = sys.__stdout__  # the MCP stdio transport writes to stdout's binary buffer
    return serve(args.root, args.output_dir)


def _log_show(args: argparse.Namespace) -> int:
    from runner.sessionlog import show_text

    sys.stdout.write(show_text(args.log, verbose=args.verbose))
    return ExitCode.OK


def _log_export(args: argparse.Namespace) -> int:
    from runner.sessionlog import export_html, export_json, export_markdown

    exporters = {"json": export_json, "markdown": export_markdown, "html": export_html}
    text = exporters[args.format](args.log)
    if args.output is None:
        sys.stdout.write(text)
    else:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as error:
            raise ConfigError(f"cannot write {args.output}: {error.strerror or error}") from error
    return ExitCode.OK


def _report_merge(args: argparse.Namespace) -> int:
    from runner.report import merge_reports

    return merge_reports(args.inputs, args.output, args.summary, args.summary_output, args.dedupe)
