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
        ("find . -exec rm {} \\;", "find . -exec rm {} ;"),
        ('echo "a\\"b"', 'echo a"b'),
        ("git commit -m 'a b' -q", "git commit -m a b -q"),
        ('git commit -m "a b" -q', "git commit -m a b -q"),
        ("git log --format=''%h", "git log --format=%h"),
        ('grep "a\\.b" f', "grep a\\.b f"),
        # Only NAME=... before the command is an assignment.
        ("a-b=1 make", "a-b=1 make"),
        ("ab-=1 make", "ab-=1 make"),
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
        ("git status> out", ["git status"]),
        ("git log >f -1", ["git log -1"]),
        ("git status 2>&1 -s", ["git status -s"]),
        ("echo x >| f y", ["echo x y"]),
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
        ("a\nb # c\nd", ["a", "b", "d"]),
        ("f() { git push; }; f", ["f", "git push", "f"]),
        ("(a)", ["a"]),
        ("(a; b) && c", ["a", "b", "c"]),
        ("echo $(git push)", ["git push", "echo $(git push)"]),
        ('echo "$(git push)"', ["git push", "echo $(git push)"]),
        ("echo `git push`", ["git push", "echo `git push`"]),
        ("diff <(git show) b", ["git show", "diff b"]),
        ("tee >(git push)", ["git push", "tee"]),
        ("echo $((1 + 2))", ["1 + 2", "echo $((1 + 2))"]),
        ("FOO=1 git status", ["git status"]),
        ("A=1 B=2 git status", ["git status"]),
        ("FOO=1", []),
        ("echo $()", ["echo $()"]),
        ("echo $(", ["echo $("]),  # cut off: the word keeps its text
        ('echo "$()"', ["echo $()"]),
        ("echo ``", ["echo ``"]),
        ("echo $(git push) x", ["git push", "echo $(git push) x"]),
        ("echo `git push` x", ["git push", "echo `git push` x"]),
        (
            "echo `echo \\`git push\\``",
            ["git push", "echo `git push`", "echo `echo \\`git push\\``"],
        ),
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
        "echo `a\\`",
        'echo "a\\"',
        "diff <(git show",
        "cat <(",
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


def test_a_line_of_exactly_the_longest_length_is_still_read() -> None:
    text = "echo " + "x" * (MAX_COMMAND_CHARS - len("echo "))
    assert split_command(text).plain == text


@pytest.mark.parametrize(("open_", "close"), [("(", ")"), ("$(", ")"), ("<(", ")"), ('"$(', ')"')])
def test_nesting_as_deep_as_the_limit_is_read_and_one_level_deeper_is_not(
    open_: str, close: str
) -> None:
    deepest = open_ * MAX_DEPTH + "git push" + close * MAX_DEPTH
    line = split_command(f"echo {deepest}")
    assert line.readable and "git push" in line.commands
    too_deep = split_command(f"echo {open_}{deepest}{close}")
    assert not too_deep.readable and too_deep.plain is None


def test_backticks_count_towards_the_nesting_limit() -> None:
    outer = MAX_DEPTH - 1
    for quoted in ("echo `git push`", 'echo "`git push`"'):
        read = split_command("(" * outer + quoted + ")" * outer)
        assert read.readable and "git push" in read.commands, quoted
    for inner in ("`git push`", "`(git push)`"):
        line = split_command("(" * (outer + 1) + f"echo {inner}" + ")" * (outer + 1))
        assert not line.readable and line.plain is None, inner
    line = split_command("(" * outer + "echo `(git push)`" + ")" * outer)
    assert not line.readable and line.plain is None


RICH = (
    'FOO=1 git status -s \'a b\' "c $(d `e \\` f` g) h\\"" i\\ j >out 2>&1 <<EOF'
    ' | k <(l) >(m) && { n; } || (o) & p # q\n r $((1+2)) "s\\'
)


@pytest.mark.parametrize("end", range(len(RICH) + 1))
def test_every_cut_of_a_command_is_read_without_error(end: int) -> None:
    # A model's command can stop anywhere: reading it must never raise.
    line = split_command(RICH[:end])
    assert all(command for command in line.commands)
