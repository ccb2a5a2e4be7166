"""Reading a command line into its simple commands, for permission rules (DESIGN 18)."""

from __future__ import annotations

import pytest

from runner.run.guard.commandline import MAX_COMMAND_CHARS, MAX_DEPTH, split_command


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("git status", "git status"),
        ("\n git status\n\n", "git status"),
        ("  git   status\t-s ", "git status -s"),
        ("git status 'a;b'", "git status a;b"),
        ('git status "a && b"', "git status a && b"),
        ("git status a\\;b", "git status a;b"),
        ("git status a\\|b", "git status a|b"),
        ("echo 'x > y'", "echo x > y"),
        ('echo "it\'s"', "echo it's"),
        ("echo ${HOME}", "echo ${HOME}"),
        ("git status # ; rm -rf /", "git status"),
        ("echo a#b", "echo a#b"),
        ("git sta\\\ntus", "git status"),
        ('echo "a\\"b"', 'echo a"b'),
    ],
)
def test_a_plain_simple_command_is_its_words(text: str, command: str) -> None:
    line = split_command(text)
    assert line.plain == command, line


@pytest.mark.parametrize(
    ("text", "commands"),
    [
        ("git status > FILE", ["git status"]),
        ("> .github/x", []),
        ("git status >> FILE", ["git status"]),
        ("git status 2>&1", ["git status"]),
        ("git status 2> err", ["git status"]),
        ("git status &> out", ["git status"]),
        ("git status < in", ["git status"]),
        ("cat <<EOF", ["cat"]),
        ("a; b", ["a", "b"]),
        ("a && b", ["a", "b"]),
        ("a || b", ["a", "b"]),
        ("a | b", ["a", "b"]),
        ("a & b", ["a", "b"]),
        ("a &", ["a"]),
        ("a\nb", ["a", "b"]),
        ("(a)", ["a"]),
        ("(a; b) && c", ["a", "b", "c"]),
        ("echo $(git push)", ["git push", "echo $(git push)"]),
        ('echo "$(git push)"', ["git push", "echo $(git push)"]),
        ("echo `git push`", ["git push", "echo `git push`"]),
        ("diff <(git show) b", ["git show", "diff b"]),
        ("tee >(git push)", ["git push", "tee"]),
        ("echo $((1 + 2))", ["1 + 2", "echo $((1 + 2))"]),
        ("FOO=1 git status", ["git status"]),
        ("! git push", ["git push"]),
        ("{ git push; }", ["git push"]),
        ("if true; then git push; fi", ["true", "git push"]),
    ],
)
def test_a_compound_command_is_never_plain_and_names_every_command_inside(
    text: str, commands: list[str]
) -> None:
    line = split_command(text)
    assert line.plain is None
    assert sorted(line.commands) == sorted(commands)


@pytest.mark.parametrize(
    "text",
    [
        "echo 'unterminated",
        'echo "unterminated',
        "echo $(unterminated",
        "echo `unterminated",
        "echo )",
        "(" * (MAX_DEPTH + 2) + ")" * (MAX_DEPTH + 2),
        "x" * (MAX_COMMAND_CHARS + 1),
    ],
)
def test_what_cannot_be_read_is_never_plain(text: str) -> None:
    line = split_command(text)
    assert not line.readable and line.plain is None


def test_a_deny_rule_sees_commands_nested_deep_inside() -> None:
    line = split_command('echo "$(cat `git push --force` | (cd x && rm -rf y))"')
    assert "git push --force" in line.commands
    assert "rm -rf y" in line.commands


def test_reading_is_linear_on_hostile_input() -> None:
    # Many operators, quotes and substitutions: one pass, no backtracking.
    line = split_command("a;" * 20_000 + "'" + "x" * 1000 + "'")
    assert len(line.commands) == 20_001
