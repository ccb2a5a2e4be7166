"""A deny rule `execute_command(git push*)` holds whatever is written in front of the command:
every reserved word of the shell, every precommand (with its options), one in another; an
allow rule is never widened by them. And `TOOL()` with an empty argument glob means "the empty
argument", never "any argument" (that is the bare `TOOL`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.run.guard.permissions import PermissionGate
from runner.run.guard.precommand import PRECOMMANDS, unwrapped
from runner.task import Permissions
from runner.toolcall import ToolSpec

COMMAND = ToolSpec("execute_command", "", {}, server="workspace")
WRITE = ToolSpec("write_to_file", "", {}, server="workspace")
MCP = ToolSpec(
    "create_issue",
    "",
    {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
    server="github",
)

RESERVED = [
    "time git push",
    "time -p git push",
    "! git push",
    "coproc git push",
    "{ git push; }",
    "if true; then git push; fi",
    "if false; then :; elif git push; then :; fi",
    "if false; then :; else git push; fi",
    "while true; do git push; done",
    "until false; do git push; done",
    "for x in 1; do git push; done",
    "select x in a; do git push; done",
    "case x in x) git push;; esac",
    "[[ -d . ]] && git push",
]
PREFIXED = [
    "command git push",
    "command -p git push",
    "builtin git push",
    "exec git push",
    "exec -a other git push",
    "nohup git push",
    "nice git push",
    "nice -n 5 git push",
    "nice -5 git push",
    "nice --adjustment=5 git push",
    "env git push",
    "env -i git push",
    "env A=1 B=2 git push",
    "env -u HOME git push",
    "env -- git push",
    "timeout 5 git push",
    "timeout -s KILL -k 2 30s git push",
    "timeout --preserve-status 5 git push",
    "stdbuf -o0 git push",
    "stdbuf -o L git push",
    "setsid git push",
    "ionice -c 3 git push",
    "chrt 10 git push",
    "sudo git push",
    "sudo -u root git push",
    "doas -u root git push",
    "sudo -u root nice -n 5 env A=1 timeout 5 nohup git push --force",
    "cd src && nice git push",
    "echo $(env git push)",
]


def gate(tmp_path: Path, **rules: list[str]) -> PermissionGate:
    return PermissionGate(Permissions(**rules), tmp_path)


@pytest.mark.parametrize("command", [*RESERVED, *PREFIXED])
def test_a_deny_rule_holds_whatever_is_written_in_front(tmp_path: Path, command: str) -> None:
    refusal = gate(tmp_path, deny=["execute_command(git push*)"]).refusal(
        COMMAND, {"command": command}
    )
    assert refusal is not None and "git push*" in refusal and "permissions.deny" in refusal


def test_every_precommand_is_read() -> None:
    """Each precommand the module names, with none of its options: its command is found."""
    for name in PRECOMMANDS:
        positional = "5 " if name in ("timeout", "chrt") else ""
        assert unwrapped(f"{name} {positional}git push")[-1] == "git push", name


def test_a_precommand_with_nothing_after_it_runs_nothing_to_match() -> None:
    assert unwrapped("nice -n 5") == [] and unwrapped("git push") == []


@pytest.mark.parametrize("command", ["nice git push", "env A=1 git status", "time git status"])
def test_an_allow_rule_is_not_widened_by_a_precommand(tmp_path: Path, command: str) -> None:
    checked = gate(tmp_path, allow=["execute_command(git *)"])
    assert checked.refusal(COMMAND, {"command": command}) is not None
    assert checked.refusal(COMMAND, {"command": "git status"}) is None


@pytest.mark.parametrize(
    ("spec", "key", "value"),
    [(COMMAND, "command", "ls"), (WRITE, "path", "a.txt"), (MCP, "title", "a bug")],
)
def test_an_empty_argument_glob_means_the_empty_argument_not_any(
    tmp_path: Path, spec: ToolSpec, key: str, value: str
) -> None:
    rule = f"{spec.name}()"
    deny = gate(tmp_path, deny=[rule])
    assert deny.refusal(spec, {key: value}) is None
    assert deny.refusal(spec, {key: ""}) is not None
    allow = gate(tmp_path, allow=[rule])
    assert allow.refusal(spec, {key: value}) is not None
    # The bare tool name is the rule for any argument.
    assert gate(tmp_path, deny=[spec.name]).refusal(spec, {key: value}) is not None


@pytest.mark.parametrize(
    ("command", "forms"),
    [
        ("nice -n 5 env A=1 git push", ["env A=1 git push", "git push"]),
        ("env -u HOME -i A=1 -- git push", ["git push"]),
        ("env - git push", ["git push"]),
        ("env -i - A=1 git push", ["git push"]),
        ("env --unset=HOME git push", ["git push"]),
        ("timeout -s KILL 5 git push", ["git push"]),
        ("timeout --signal=KILL 5 git push", ["git push"]),
        ("exec -a name git push", ["git push"]),
        ("sudo -u root -- git push", ["git push"]),
        ("stdbuf -oL git push", ["git push"]),
        ("chrt -f 10 git push", ["git push"]),
        ("nice -- -x git push", ["-x git push"]),  # `--` ends the options
        ("nice a=b", ["a=b"]),  # only env reads VAR=value
        ("nice - git push", ["- git push"]),  # only env reads a lone `-`
        ("command -v", []),
        ("nice", []),
        ("git push", []),
        ("", []),
    ],
)
def test_each_precommand_form_is_read_as_written(command: str, forms: list[str]) -> None:
    assert unwrapped(command) == forms


def test_unwrapping_stops_after_sixteen_precommands() -> None:
    forms = unwrapped("nice " * 20 + "git push")
    assert len(forms) == 16 and forms[-1] == "nice " * 4 + "git push"


OPTIONS_WITH_AN_ARGUMENT = {
    "exec": ["-a"],
    "nice": ["-n", "--adjustment"],
    "env": ["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
    "timeout": ["-s", "--signal", "-k", "--kill-after"],
    "stdbuf": ["-i", "-o", "-e", "--input", "--output", "--error"],
    "ionice": ["-c", "--class", "-n", "--classdata", "-p", "--pid"],
    "sudo": [
        *("-u", "--user", "-g", "--group", "-h", "--host", "-p", "--prompt", "-C"),
        *("--close-from", "-D", "--chdir", "-r", "--role", "-t", "--type"),
    ],
    "doas": ["-u", "-C"],
}
"""Each precommand's options that take the next word, as their manuals say (written out here,
not read from the module, so that one dropped there is noticed)."""


@pytest.mark.parametrize(
    ("name", "option"),
    [(name, option) for name, options in OPTIONS_WITH_AN_ARGUMENT.items() for option in options],
)
def test_every_option_that_takes_an_argument_skips_it(name: str, option: str) -> None:
    positional = "5 " if name == "timeout" else ""
    assert unwrapped(f"{name} {option} ARG {positional}git push")[-1] == "git push"
    refusal = PermissionGate(Permissions(deny=["execute_command(git push*)"]), Path(".")).refusal(
        COMMAND, {"command": f"{name} {option} ARG {positional}git push"}
    )
    assert refusal is not None
