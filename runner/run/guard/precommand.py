"""The command a precommand runs: `nice -n 5 git push` runs `git push` (DESIGN 18, issue 47).

A deny rule such as `execute_command(git push*)` matches each simple command inside a command
line (`runner.run.guard.commandline` has already dropped leading `VAR=value` assignments and
reserved words such as `time` and `!`). A precommand in front (`command`, `exec`, `builtin`,
`nohup`, `nice`, `env`, `timeout`, `stdbuf`, `setsid`, `ionice`, `chrt`, `sudo`, `doas`, and the
bash `time -p`) runs the rest as its own command, so the deny rule is also matched against what
follows it, with the precommand's options (and their arguments) skipped. Allow rules never see
these forms: a precommand in front is a command the allow rule must itself name.

Reading options is best effort (a guard against mistakes, not against a determined agent: the
sandbox is the boundary). Every step of the unwrapping is a form, so an option read wrongly can
only give a deny rule more forms to match, never fewer.
"""

from __future__ import annotations

__all__ = ["PRECOMMANDS", "unwrapped"]

PRECOMMANDS: dict[str, frozenset[str]] = {
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "nohup": frozenset(),
    "time": frozenset(),
    "nice": frozenset({"-n", "--adjustment"}),
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "setsid": frozenset(),
    "ionice": frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid"}),
    "chrt": frozenset(),
    "sudo": frozenset({"-u", "--user", "-g", "--group", "-h", "--host", "-p", "--prompt"})
    | frozenset({"-C", "--close-from", "-D", "--chdir", "-r", "--role", "-t", "--type"}),
    "doas": frozenset({"-u", "-C"}),
}
"""Each precommand and its options that take the next word as their argument."""
_POSITIONAL = {"timeout": 1, "chrt": 1}
"""Words after the options that are the precommand's own (`timeout 5`, `chrt 10`)."""
_MAX_STEPS = 16


def unwrapped(command: str) -> list[str]:
    """The commands `command` runs through its leading precommands, innermost last
    (`nice -n 5 env A=1 git push` -> `env A=1 git push`, `git push`); [] when it has none."""
    words = command.split()
    found: list[str] = []
    for _ in range(_MAX_STEPS):
        if not words or words[0] not in PRECOMMANDS:
            break
        words = _after(words[0], words[1:])
        if words:
            found.append(" ".join(words))
    return found


def _after(name: str, words: list[str]) -> list[str]:
    """The words after precommand `name`'s options and own arguments."""
    takes = PRECOMMANDS[name]
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if name == "env" and "=" in word and not word.startswith("-"):
            i += 1  # env's VAR=value
        elif word.startswith("-") and word != "-":
            i += 2 if word in takes else 1  # `-n 5`; `-n5`, `--adjustment=5`, `-p` alone
        elif name == "env" and word == "-":
            i += 1
        else:
            break
    return words[i + _POSITIONAL.get(name, 0) :]
