"""Permission rules: parsing, the main argument, and the forms a rule is matched against."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from runner.errors import ConfigError
from runner.run.guard.permissions import PermissionGate, check_rules_match, main_argument
from runner.task import Permissions, parse_rule
from runner.toolcall import ToolSpec

COMMAND = ToolSpec("execute_command", "", {}, server="workspace")
WRITE = ToolSpec("write_to_file", "", {}, server="workspace")
MCP = ToolSpec(
    "create_issue",
    "",
    {
        "type": "object",
        "properties": {"count": {"type": "integer"}, "title": {"type": "string"}},
        "required": ["count", "title"],
    },
    server="github",
)


def gate(tmp_path: Path, **rules: list[str]) -> PermissionGate:
    return PermissionGate(Permissions(**rules), tmp_path)


def test_a_rule_is_a_tool_glob_with_an_optional_argument_glob() -> None:
    rule = parse_rule("execute_command(git push*)")
    assert (rule.tool, rule.argument) == ("execute_command", "git push*")
    assert parse_rule("github__*").argument is None
    with pytest.raises(ValueError, match="TOOL\\(GLOB\\)"):
        parse_rule("(no tool)")


def test_a_malformed_rule_is_a_task_file_error() -> None:
    with pytest.raises(ValidationError):
        Permissions(deny=["two words(x)"])


def test_the_main_argument_is_command_path_or_the_first_required_string() -> None:
    assert main_argument(COMMAND) == "command"
    assert main_argument(WRITE) == "path"
    assert main_argument(MCP) == "title"
    assert main_argument(ToolSpec("x", "", {"type": "object"})) is None


@pytest.mark.parametrize(
    "command",
    [
        "git push",
        "git   push origin main",
        "cd src && git push",
        "make || git push --force",
        "echo $(git push)",
        "FOO=1 BAR=2 git push",
        "true\ngit push",
    ],
)
def test_deny_rules_see_through_command_spelling(tmp_path: Path, command: str) -> None:
    refusal = gate(tmp_path, deny=["execute_command(git push*)"]).refusal(
        COMMAND, {"command": command}
    )
    assert refusal is not None and "'execute_command(git push*)'" in refusal


def test_other_commands_and_other_tools_are_not_denied(tmp_path: Path) -> None:
    rules = gate(tmp_path, deny=["execute_command(git push*)"])
    assert rules.refusal(COMMAND, {"command": "git status"}) is None
    assert rules.refusal(WRITE, {"path": "git push"}) is None


@pytest.mark.parametrize("path", [".github/ci.yml", "./.github/ci.yml", "src/../.github/x/y.yml"])
def test_deny_rules_match_the_path_as_written_or_normalised(tmp_path: Path, path: str) -> None:
    refusal = gate(tmp_path, deny=["write_to_file(.github/**)"]).refusal(WRITE, {"path": path})
    assert refusal is not None


def test_deny_rules_match_the_real_path_through_a_symlink(tmp_path: Path) -> None:
    (tmp_path / ".github").mkdir()
    (tmp_path / "ci").symlink_to(tmp_path / ".github")
    refusal = gate(tmp_path, deny=["write_to_file(.github/**)"]).refusal(
        WRITE, {"path": "ci/deploy.yml"}
    )
    assert refusal is not None


def test_allow_rules_match_a_single_simple_command(tmp_path: Path) -> None:
    rules = gate(tmp_path, allow=["execute_command(echo *)", "execute_command(ls*)"])
    assert rules.refusal(COMMAND, {"command": "echo a"}) is None
    assert rules.refusal(COMMAND, {"command": "echo 'a; b' \"c && d\""}) is None
    refusal = rules.refusal(COMMAND, {"command": "echo a; rm -rf build"})
    assert refusal is not None and "permissions.allow" in refusal


@pytest.mark.parametrize(
    "command",
    [
        "git status > FILE",
        "git status >> FILE",
        "git status 2>/tmp/x",
        "> .github/x",
        "git status < /etc/passwd",
        "git status | sh",
        "git status; rm -rf /",
        "git status && rm -rf /",
        "git status || rm -rf /",
        "git status & rm -rf /",
        "git status\nrm -rf /",
        "(git status)",
        "git status $(rm -rf /)",
        "git status `rm -rf /`",
        'git status "$(rm -rf /)"',
        "git status <(rm -rf /)",
        "GIT_EXTERNAL_DIFF=evil git status",
        "git status 'unterminated",
    ],
)
def test_an_allow_rule_never_matches_a_compound_command(tmp_path: Path, command: str) -> None:
    rules = gate(tmp_path, allow=["execute_command(git status*)"])
    refusal = rules.refusal(COMMAND, {"command": command})
    assert refusal is not None and "single simple command" in refusal


@pytest.mark.parametrize(
    "command",
    ["echo `git push`", "(cd x; git push)", "git status | git push", "diff <(git push) x"],
)
def test_deny_rules_match_any_simple_command_inside(tmp_path: Path, command: str) -> None:
    rules = gate(tmp_path, deny=["execute_command(git push*)"])
    assert rules.refusal(COMMAND, {"command": command}) is not None


def test_allow_rules_match_the_real_path(tmp_path: Path) -> None:
    rules = gate(tmp_path, allow=["write_to_file(src/**)"])
    assert rules.refusal(WRITE, {"path": "src/a.py"}) is None
    assert rules.refusal(WRITE, {"path": "src/../setup.py"}) is not None


def test_deny_wins_over_allow(tmp_path: Path) -> None:
    rules = gate(tmp_path, allow=["execute_command(git *)"], deny=["execute_command(git push*)"])
    assert rules.refusal(COMMAND, {"command": "git status"}) is None
    refusal = rules.refusal(COMMAND, {"command": "git push"})
    assert refusal is not None and "permissions.deny" in refusal


def test_mcp_tools_are_matched_on_their_first_required_string(tmp_path: Path) -> None:
    rules = gate(tmp_path, deny=["create_*(*secret*)"])
    assert rules.refusal(MCP, {"count": 1, "title": "a secret plan"}) is not None
    assert rules.refusal(MCP, {"count": 1, "title": "a plan"}) is None


def test_a_rule_that_names_no_tool_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match=r"permissions.deny\[1\] 'execute_comand\(x\)'"):
        check_rules_match(
            Permissions(deny=["execute_command(y)", "execute_comand(x)"]),
            ["execute_command", "read_file"],
            "t.yaml:1",
        )
    check_rules_match(Permissions(allow=["read_*"]), ["read_file"], "t.yaml:1")


def test_a_rule_may_name_a_tool_as_server__tool(tmp_path: Path) -> None:
    rules = gate(tmp_path, deny=["workspace__execute_command(rm *)"])
    assert rules.refusal(COMMAND, {"command": "rm -rf build"}) is not None
    assert rules.refusal(COMMAND, {"command": "ls"}) is None


def test_a_misspelled_permissions_key_is_refused_not_ignored() -> None:
    # `alow:` ignored would leave every call allowed while the task file says otherwise.
    with pytest.raises(ValidationError, match="alow"):
        Permissions.model_validate({"alow": ["read_file"]})


@pytest.mark.parametrize(
    ("rules", "any_rule"),
    [({}, False), ({"allow": ["read_file"]}, True), ({"deny": ["write_to_file"]}, True)],
)
def test_permissions_count_as_set_when_either_list_has_a_rule(
    rules: dict[str, list[str]], any_rule: bool
) -> None:
    assert bool(Permissions.model_validate(rules)) is any_rule


def test_only_leading_assignments_of_a_command_are_dropped_before_matching(
    tmp_path: Path,
) -> None:
    rules = gate(tmp_path, deny=["execute_command(rm -rf build)"])
    assert rules.refusal(COMMAND, {"command": "CI=1 rm -rf build"}) is not None
    # `X=1` after the command's name is an argument: this is not `rm -rf build`.
    assert rules.refusal(COMMAND, {"command": "rm X=1 -rf build"}) is None


def test_a_tool_of_another_server_named_like_a_workspace_tool_matches_its_own_argument(
    tmp_path: Path,
) -> None:
    schema = {
        "type": "object",
        "properties": {"query": {"type": "string"}, "path": {"type": "string"}},
        "required": ["query"],
    }
    docs_read = ToolSpec("docs__read_file", "", schema, server="docs", remote_name="read_file")
    assert main_argument(docs_read) == "query"
    lookup = ToolSpec("lookup", "", {**schema, "required": ["path"]}, server="docs")
    # The runner cannot know what another server means by `path`: it is matched as written.
    rules = gate(tmp_path, deny=["lookup(secret*)"])
    assert rules.refusal(lookup, {"path": "docs/../secret.txt"}) is None
    assert rules.refusal(lookup, {"path": "secret.txt"}) is not None


def test_a_denied_command_inside_a_substitution_or_after_an_assignment_is_refused(
    tmp_path: Path,
) -> None:
    rules = gate(tmp_path, deny=["execute_command(rm -rf build)"])
    for command in ("echo $(rm -rf build)", "echo `CI=1 rm -rf build`", "(rm -rf build)"):
        assert rules.refusal(COMMAND, {"command": command}) is not None, command


def test_a_path_rule_holds_for_an_empty_path_and_one_outside_the_workdir(tmp_path: Path) -> None:
    allowed = gate(tmp_path, allow=["write_to_file(src/*)"])
    assert allowed.refusal(WRITE, {"path": ""}) is not None
    outside = "../" * 30 + "etc/passwd"
    denied = gate(tmp_path, deny=["write_to_file(/etc/*)"])
    assert denied.refusal(WRITE, {"path": outside}) is not None


def test_the_unmatched_rule_error_lists_the_tools_there_are() -> None:
    with pytest.raises(ConfigError, match=r"\(tools: read_file, write_to_file; fix the tool"):
        check_rules_match(Permissions(deny=["rm"]), ["write_to_file", "read_file"], "t.yaml:1")
    with pytest.raises(ConfigError, match=r"\(tools: none; fix the tool"):
        check_rules_match(Permissions(deny=["rm"]), [], "t.yaml:1")
