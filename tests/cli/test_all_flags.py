"""Every flag of `run`, `resume` and `list` (runner.cli.flags, DESIGN 2 and 20), each pinned: the
type its value is read as, how a repeated flag adds up, the defaults, and what `--help` says of it
(its form with the value it takes, and what it does). In-process, through `build_parser`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.cli import build_parser
from runner.cli.commands import list_command, resume_command, run_command

SHARED_HELP = [
    ("--config FILE", "config file instead of ./agent-runner.yaml"),
    ("--log-level {debug,info,warning,error}", "verbosity of the runner's own diagnostics"),
    ("--model PROVIDER:MODEL", "model for every task"),
    ("--out DIR", "artifacts folder (default: agent-runs/)"),
    ("--junit PATH", "JUnit XML report path"),
    ("--max-cost-usd X", "cost cap for the run"),
    ("--governor-url URL", "share one cost cap and rate limits"),
    ("--fleet-max-cost-usd X", "cost cap of every shard of the run together"),
    ("--output {text,json}", "console summary format"),
    ("--sandbox {auto,required,off}", "mode of every task"),
    ("--sandbox-backend {auto,bwrap,landlock,none}", "what confines commands"),
    ("--allow-host HOST", "let commands reach HOST"),
    ("--tool-mode {xml,native,auto}", "for every task"),
    ("--fail-on {error,warning,note,never}", "a task with a finding this severe"),
    ("--min-pass-rate R", "a repeated task passes when this share"),
    ("-q, --quiet", "failures and summary only"),
    ("-v, --verbose", "a line per turn; transcripts"),
    ("--events FILE|-", "stream every session-log record"),
    ("--result-file FILE", "write the final result"),
    ("--max-turns N", "model calls per task"),
    ("--max-tokens N", "tokens per task"),
    ("--task-max-cost-usd X", "cost per task"),
    ("--timeout DURATION", "wall time per task (90s, 20m, 1h)"),
    ("--allow-tool RULE", "a permission rule TOOL(GLOB) added to the tasks' allow rules"),
    ("--deny-tool RULE", "a permission rule TOOL(GLOB) added to the tasks' deny rules"),
    ("--append-system-prompt TEXT", "text added to the system prompt"),
]
"""What `run --help` and `resume --help` both say, flag by flag."""
HELP = {
    "run": [
        *SHARED_HELP,
        ("-p PROMPT, --prompt PROMPT", "the task's prompt (- for stdin)"),
        ("--prompt-file FILE", "the prompt from a file"),
        ("--workdir DIR", "where the task's tools work"),
        ("--name NAME", "the task's name (default: prompt)"),
        ("--jobs N", "tasks run at once"),
        ("--repeat K", "run each task K times, as samples"),
        ("--shard K/N", "only shard K of N (1-based)"),
        ("--filter GLOB", "task names to take"),
        ("--param KEY=VALUE", "set a declared param (repeatable)"),
        ("--fail-fast", "stop at the first failed task"),
        ("--isolation {none,worktree}", "tasks in git worktrees"),
        ("--keep-worktrees", "do not remove the worktrees"),
    ],
    "resume": [
        *SHARED_HELP,
        ("--latest", "resume the newest run under --out"),
        ("--message MESSAGE", "the user message to continue with"),
        ("--param KEY=VALUE", "a param of the task file (the log's params are not reused)"),
        ("--workdir DIR", "run the tools in DIR instead of the task's workdir"),
        ("--from-log", "when the task file is missing, run the task as the log recorded it"),
        ("--accept-task-changes", "resume even though the task file's extensions"),
    ],
    "list": [
        ("--shard K/N", "only shard K of N (1-based)"),
        ("--filter GLOB", "task names to take"),
        ("--param KEY=VALUE", "set a declared param (repeatable)"),
        ("--model PROVIDER:MODEL", "model for every task"),
        ("--tool-mode {xml,native,auto}", "for every task"),
        ("--sandbox {auto,required,off}", "for every task"),
        ("--isolation {none,worktree}", "for every task"),
        ("--repeat K", "as run --repeat K: list the samples, worst cost"),
        ("--output {text,json}", "format of the listing"),
        ("--config FILE", "config file instead of ./agent-runner.yaml"),
        ("--log-level {debug,info,warning,error}", "verbosity of the runner's own diagnostics"),
    ],
}
POSITIONALS = {"run": "[PATH ...]", "resume": "[LOG_OR_DIR ...]", "list": "PATH [PATH ...]"}
"""How each command's usage line names its paths."""
DESCRIPTIONS = {
    "run": "Run task files (files, directories or globs), or one task from a prompt",
    "resume": "Continue sessions from their logs, in the checkout where resume runs.",
    "list": "Print the tasks `run` would run with the same paths, --filter and --shard",
}
SUMMARIES = {
    "run": "run task files, or one prompt",
    "resume": "continue sessions from their logs",
    "list": "print the tasks run would run",
}
PATHS = {"run": ("t.yaml",), "resume": ("x.jsonl",), "list": ("t.yaml",)}


def _help(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args([*words, "--help"])
    assert stopped.value.code == 0
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("command", sorted(HELP))
def test_every_flag_says_in_help_what_it_takes_and_what_it_does(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    said = _help(capsys, command)
    for form, what in HELP[command]:
        assert f"{form} {what}" in said, form
    assert DESCRIPTIONS[command] in said
    usage = said.split(" options: ")[0]
    assert POSITIONALS[command] in usage


def test_the_commands_help_names_each_command_with_its_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    said = _help(capsys)
    for command, summary in SUMMARIES.items():
        assert f"{command} {summary}" in said


TYPED = {
    "run": {
        Path: ["--config", "--out", "--junit", "--result-file", "--prompt-file", "--workdir"],
        int: ["--max-turns", "--max-tokens", "--jobs", "--repeat"],
        float: ["--max-cost-usd", "--fleet-max-cost-usd", "--min-pass-rate", "--task-max-cost-usd"],
        str: [
            "--model",
            "--governor-url",
            "--events",
            "--timeout",
            "--append-system-prompt",
            "--shard",
            "--name",
            "--prompt",
        ],
    },
    "resume": {
        Path: ["--config", "--out", "--junit", "--result-file", "--workdir"],
        int: ["--max-turns", "--max-tokens"],
        float: ["--max-cost-usd", "--fleet-max-cost-usd", "--min-pass-rate", "--task-max-cost-usd"],
        str: ["--model", "--governor-url", "--events", "--timeout", "--append-system-prompt"],
    },
    "list": {
        Path: ["--config"],
        int: ["--repeat"],
        str: ["--model", "--shard"],
    },
}
SAMPLE = {Path: ("d/f", Path("d/f")), int: ("7", 7), float: ("0.5", 0.5), str: ("a:b", "a:b")}


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _cases() -> list[tuple[str, str, type]]:
    return [
        (command, flag, kind)
        for command, kinds in TYPED.items()
        for kind, flags in kinds.items()
        for flag in flags
    ]


@pytest.mark.parametrize(("command", "flag", "kind"), _cases())
def test_every_value_flag_is_read_as_its_type(command: str, flag: str, kind: type) -> None:
    text, value = SAMPLE[kind]
    args = build_parser().parse_args([command, *PATHS[command], flag, text])
    read = getattr(args, _dest(flag))
    assert read == value and isinstance(read, kind)


@pytest.mark.parametrize(("command", "flag"), [(c, f) for c, f, k in _cases() if k in (int, float)])
def test_a_number_flag_refuses_what_is_no_number(
    capsys: pytest.CaptureFixture[str], command: str, flag: str
) -> None:
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args([command, *PATHS[command], flag, "many"])
    assert stopped.value.code == 2
    assert f"argument {flag}" in capsys.readouterr().err


REPEATABLE = {
    "run": ["--allow-host", "--allow-tool", "--deny-tool", "--filter", "--param"],
    "resume": ["--allow-host", "--allow-tool", "--deny-tool", "--param"],
    "list": ["--filter", "--param"],
}


@pytest.mark.parametrize(
    ("command", "flag"), [(c, f) for c, flags in REPEATABLE.items() for f in flags]
)
def test_a_repeatable_flag_keeps_every_value_in_order(command: str, flag: str) -> None:
    args = build_parser().parse_args([command, *PATHS[command], flag, "a=1", flag, "b=2"])
    assert getattr(args, _dest(flag)) == ["a=1", "b=2"]


SWITCHES = {
    "run": ["--quiet", "--verbose", "--fail-fast", "--keep-worktrees"],
    "resume": ["--quiet", "--verbose", "--latest", "--from-log", "--accept-task-changes"],
}


@pytest.mark.parametrize(("command", "flag"), [(c, f) for c, fs in SWITCHES.items() for f in fs])
def test_a_switch_is_off_unless_given(command: str, flag: str) -> None:
    parser = build_parser()
    assert getattr(parser.parse_args([command, *PATHS[command]]), _dest(flag)) is False
    assert getattr(parser.parse_args([command, *PATHS[command], flag]), _dest(flag)) is True


def test_the_short_switches_are_the_long_ones() -> None:
    args = build_parser().parse_args(["run", "-q", "-v", "-p", "hi"])
    assert (args.quiet, args.verbose, args.prompt) == (True, True, "hi")


@pytest.mark.parametrize("command", ["run", "resume", "list"])
def test_the_defaults_of_every_command_are_the_documented_ones(command: str) -> None:
    args = build_parser().parse_args([command, *PATHS[command]])
    assert (args.output, args.param) == ("text", [])
    if command != "list":
        assert (args.min_pass_rate, args.allow_tool, args.deny_tool) == (1.0, [], [])
        assert (args.allow_host, args.events) == (None, None)
    if command != "resume":
        assert args.filter is None


def test_run_and_resume_take_any_number_of_paths_and_list_at_least_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = build_parser()
    assert parser.parse_args(["run"]).paths == []
    assert parser.parse_args(["run", "a.yaml", "b/"]).paths == ["a.yaml", "b/"]
    assert parser.parse_args(["resume"]).paths == []
    assert parser.parse_args(["resume", "a.jsonl", "runs/"]).paths == ["a.jsonl", "runs/"]
    assert parser.parse_args(["list", "a.yaml", "b/"]).paths == ["a.yaml", "b/"]
    with pytest.raises(SystemExit) as stopped:
        parser.parse_args(["list"])
    assert stopped.value.code == 2
    assert "the following arguments are required: PATH" in capsys.readouterr().err


def test_a_prompt_and_a_prompt_file_together_are_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["run", "-p", "hi", "--prompt-file", "p.md"])
    assert stopped.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "handler"),
    [("run", run_command), ("resume", resume_command), ("list", list_command)],
)
def test_each_command_is_handled_by_its_own_function(command: str, handler: Any) -> None:
    assert build_parser().parse_args([command, *PATHS[command]]).handler is handler


@pytest.mark.parametrize("command", ["validate", "run", "resume", "list"])
def test_every_command_that_reads_the_config_takes_config_and_log_level(command: str) -> None:
    args = build_parser().parse_args(
        [command, "t.yaml", "--config", "c.yaml", "--log-level", "debug"]
    )
    assert (args.config, args.log_level) == (Path("c.yaml"), "debug")
