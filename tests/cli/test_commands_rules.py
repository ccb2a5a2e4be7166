"""The handlers of `run`, `resume` and `list` (runner/cli/commands.py), each rule pinned as a
rule: every flag reaches the run's options or settings (and a flag a command lacks leaves its
default); the stdout flags are refused in pairs and all three together; `--param` splits at the
first `=`; a prompt from `-p`, `-p -` or `--prompt-file` runs as the task named and placed as
the flags say, its result on stdout; a prompt that is not UTF-8 or over the limit is refused,
whichever way it came. The runs use the replay provider in this process (no server, no model)."""

from __future__ import annotations

import ctypes
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.cli import build_parser, main
from runner.cli.commands import PROMPT_LIMIT_BYTES, parse_params, settings_and_options
from runner.errors import ConfigError
from runner.run import RunOptions, TaskOverrides
from tests.conftest import REPO

REPLAY = REPO / "examples" / "sessions" / "hello.jsonl"
STEERING = ("AGENT_RUNNER_", "OPENAI_", "ANTHROPIC_", "GITHUB_")
PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean folder to run in: no config file, no environment that steers the runner."""
    for key in list(os.environ):
        if key.startswith(STEERING):
            monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _options(*argv: str) -> Any:
    return settings_and_options(build_parser().parse_args(list(argv)))


# Every flag reaches the run.


def test_every_run_flag_reaches_the_runs_options_and_settings(here: Path) -> None:
    settings, options = _options(
        *("run", "t.yaml", "--out", "O", "--junit", "j.xml", "--output", "json", "-q", "-v"),
        *("--fail-fast", "--isolation", "worktree", "--keep-worktrees", "--events", "e.jsonl"),
        *("--result-file", "r.txt", "--repeat", "4", "--min-pass-rate", "0.5"),
        *("--max-turns", "3", "--max-tokens", "100", "--task-max-cost-usd", "0.5"),
        *("--timeout", "90s", "--allow-tool", "read_file(a*)", "--allow-tool", "list_files"),
        *("--deny-tool", "execute_command", "--append-system-prompt", "Be brief."),
        *("--jobs", "3", "--max-cost-usd", "2", "--log-level", "debug", "--sandbox", "off"),
        *("--sandbox-backend", "none", "--tool-mode", "xml", "--allow-host", "example.com"),
        *("--fail-on", "note", "--fleet-max-cost-usd", "9"),
    )
    assert options == RunOptions(
        out=Path("O"),
        junit=Path("j.xml"),
        output="json",
        quiet=True,
        verbose=True,
        fail_fast=True,
        isolation="worktree",
        keep_worktrees=True,
        overrides=TaskOverrides(
            max_turns=3,
            max_tokens=100,
            max_cost_usd=0.5,
            timeout="90s",
            allow=("read_file(a*)", "list_files"),
            deny=("execute_command",),
            append_system_prompt="Be brief.",
        ),
        events="e.jsonl",
        result_file=Path("r.txt"),
        repeat=4,
        min_pass_rate=0.5,
    )
    chosen = (settings.jobs, settings.max_cost_usd, settings.log_level, settings.fail_on)
    assert chosen == (3, 2.0, "debug", "note")
    assert (settings.sandbox_mode, settings.sandbox_backend) == ("off", "none")
    assert (settings.tool_mode, settings.allow_hosts) == ("xml", ("example.com",))
    assert (settings.fleet_max_cost_usd, settings.out) == (9.0, Path("O"))


def test_a_run_without_flags_has_the_documented_options(here: Path) -> None:
    _, options = _options("run", "t.yaml")
    assert options == RunOptions(out=Path("agent-runs"), junit=None)


def test_resume_takes_the_shared_flags_and_leaves_the_run_only_ones_at_their_defaults(
    here: Path,
) -> None:
    """`resume` has no --fail-fast, --isolation, --keep-worktrees, --repeat or --jobs."""
    _, options = _options(
        *("resume", "x.jsonl", "--out", "O", "--junit", "j.xml", "--max-turns", "2"),
        *("--events", "e.jsonl", "--min-pass-rate", "0.25", "-q"),
    )
    assert options == RunOptions(
        out=Path("O"),
        junit=Path("j.xml"),
        quiet=True,
        overrides=TaskOverrides(max_turns=2),
        events="e.jsonl",
        min_pass_rate=0.25,
    )
    assert (options.fail_fast, options.keep_worktrees) == (False, False)
    assert (options.isolation, options.repeat) == (None, None)


@pytest.mark.parametrize("command", [("run", "t.yaml"), ("resume", "x.jsonl")])
def test_the_config_file_named_is_read(here: Path, command: tuple[str, ...]) -> None:
    config = here / "conf" / "runner.yaml"
    config.parent.mkdir()
    config.write_text("out: from-config\njobs: 5\n", encoding="utf-8")
    settings, options = _options(*command, "--config", str(config))
    assert options.out == Path("from-config")
    assert settings.jobs == (5 if command[0] == "run" else settings.jobs)


def test_a_limit_flag_that_is_no_limit_is_refused_before_the_settings(here: Path) -> None:
    with pytest.raises(ConfigError, match="--max-turns 0"):
        _options("run", "t.yaml", "--max-turns", "0", "--config", str(here / "missing.yaml"))


@pytest.mark.parametrize("command", [("run", "t.yaml"), ("resume", "x.jsonl")])
def test_run_and_resume_make_the_process_undumpable_before_they_read_any_key(
    here: Path, command: tuple[str, ...]
) -> None:
    """No other process of the user may read /proc/PID/environ (the API keys) of a run."""
    libc = ctypes.CDLL(None)
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # as a fresh process is
    assert libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1
    _options(*command)
    assert libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0


# stdout has one writer.


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (("--output", "json", "--events", "-"), "--output json and --events -"),
        (("--output", "json", "--result-file", "-"), "--output json and --result-file -"),
        (("--events", "-", "--result-file", "-"), "--events - and --result-file -"),
    ],
)
def test_each_pair_of_stdout_flags_is_refused_naming_both(
    here: Path, flags: tuple[str, ...], named: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        _options("run", "t.yaml", *flags)
    assert str(refused.value) == (
        f"{named} both write to stdout: give one of them a file (--events FILE, "
        "--result-file FILE) or drop --output json"
    )


def test_all_three_stdout_flags_are_refused_together(here: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        _options("run", "t.yaml", "--output", "json", "--events", "-", "--result-file", "-")
    assert str(refused.value) == (
        "--output json and --events - and --result-file - all write to stdout: keep one, "
        "and give the other a file"
    )


@pytest.mark.parametrize(
    "flags",
    [
        ("--result-file", "-"),
        ("--output", "json", "--result-file", "r.txt"),
        ("--events", "-", "--result-file", "out/-"),
        ("--events", "e.jsonl", "--output", "json", "--result-file", "r.txt"),
    ],
)
def test_one_stdout_flag_with_files_for_the_others_is_taken(
    here: Path, flags: tuple[str, ...]
) -> None:
    _, options = _options("run", "t.yaml", *flags)
    assert options.result_file == Path(flags[flags.index("--result-file") + 1])


# --param.


def test_a_param_splits_at_its_first_equals_sign_and_its_key_is_trimmed() -> None:
    given = [" who = the world", "expr=a=b", "empty=", "who2=x"]
    assert parse_params(given) == {"who": " the world", "expr": "a=b", "empty": "", "who2": "x"}
    assert parse_params([]) == {}
    assert parse_params(["k=1", "k=2"]) == {"k": "2"}


@pytest.mark.parametrize("pair", ["novalue", " = x", "=x", ""])
def test_a_param_without_an_equals_sign_or_a_key_is_refused_naming_it(pair: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_params(["ok=1", pair])
    assert str(refused.value) == f"--param {pair!r}: write it as KEY=VALUE"


# A prompt's run, in this process, on the replay provider.


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["run", *argv, "--model", f"replay:{REPLAY}", "--sandbox", "off"])
    said = capsys.readouterr()
    return code, said.out, said.err


def _summary(root: Path, out: str = "agent-runs") -> dict[str, Any]:
    return dict(json.loads((root / out / "summary.json").read_text(encoding="utf-8")))


def test_run_p_prints_only_the_result_on_stdout_as_the_task_named_prompt(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "-p", "Say hi.")
    assert code == 0, err
    [task] = _summary(here)["tasks"]
    assert task["name"] == "prompt" and task["status"] == "passed"
    assert task["result"] and out == task["result"] + "\n"
    assert "PASS" in err


def test_run_p_takes_its_name_and_workdir_from_the_flags(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "w").mkdir()
    code, _, err = _run(capsys, "-p", "Say hi.", "--name", "greet", "--workdir", "w")
    assert code == 0, err
    [task] = _summary(here)["tasks"]
    assert task["name"] == "greet"
    header = json.loads((here / task["session_log"]).read_text(encoding="utf-8").splitlines()[0])
    assert Path(header["task"]["workdir"]) == (here / "w").resolve()


def test_a_prompt_from_stdin_or_a_file_is_the_tasks_prompt(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for how, given in (("stdin", "Read it from stdin."), ("file", "Read it from a file.")):
        if how == "stdin":
            monkeypatch.setattr(sys, "stdin", _Stdin(given.encode()))
            argv: tuple[str, ...] = ("-p", "-", "--out", "o-stdin")
        else:
            (here / "p.md").write_text(given, encoding="utf-8")
            argv = ("--prompt-file", "p.md", "--out", "o-file")
        code, _, err = _run(capsys, *argv)
        assert code == 0, err
        [task] = _summary(here, argv[-1])["tasks"]
        log = (here / task["session_log"]).read_text(encoding="utf-8")
        assert given in log, how


class _Stdin:
    """What the process's stdin gives: bytes, read through `buffer` as `-p -` does."""

    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


@pytest.mark.parametrize(
    ("how", "data", "said"),
    [
        ("stdin", b"\xff\xfe not text", "-p - (stdin): the prompt is not UTF-8 text"),
        ("file", b"\xff\xfe not text", "--prompt-file p.md: the prompt is not UTF-8 text"),
        ("stdin", b"x" * (PROMPT_LIMIT_BYTES + 1), "-p - (stdin): the prompt is over 1048576"),
        ("file", b"y" * (PROMPT_LIMIT_BYTES + 1), "--prompt-file p.md: the prompt is over"),
        ("stdin", b" \n\t", "the prompt is empty"),
        ("file", b"", "the prompt is empty"),
    ],
)
def test_a_prompt_that_is_not_text_over_the_limit_or_empty_is_refused_however_it_came(
    here: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    data: bytes,
    said: str,
) -> None:
    if how == "stdin":
        monkeypatch.setattr(sys, "stdin", _Stdin(data))
        argv: tuple[str, ...] = ("-p", "-")
    else:
        (here / "p.md").write_bytes(data)
        argv = ("--prompt-file", "p.md")
    code, out, err = _run(capsys, *argv)
    assert code == 2 and said in err and out == ""
    assert not (here / "agent-runs").exists()


def test_a_prompt_at_the_limit_from_stdin_is_read_whole(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the limit the prompt is taken (the run goes on to the next check, a bad flag)."""
    monkeypatch.setattr(sys, "stdin", _Stdin(b"z" * PROMPT_LIMIT_BYTES))
    code, _, err = _run(capsys, "-p", "-", "--max-turns", "0")
    assert code == 2 and "--max-turns 0" in err
    assert PROMPT_LIMIT_BYTES == 1024 * 1024


def test_task_files_run_with_their_filter_shard_params_and_model(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = {
        "defaults": {"workdir": ".", "params": {"who": "nobody"}},
        "tasks": [{"name": f"t{i}", "prompt": f"Greet {{{{who}}}} ({i})."} for i in range(4)],
    }
    (here / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    argv = ("suite.yaml", "--filter", "t2", "--param", "who=Ada")
    code, out, err = _run(capsys, *argv, "--shard", "2/2")
    assert code == 0 and _summary(here)["tasks"] == [], err  # the file's tasks are shard 1's
    code, out, err = _run(capsys, *argv, "--shard", "1/2")
    assert code == 0, err
    tasks = _summary(here)["tasks"]
    assert [t["name"] for t in tasks] == ["t2"]
    assert tasks[0]["model"].startswith("replay:")  # the --model given: the file names none
    log = (here / tasks[0]["session_log"]).read_text(encoding="utf-8")
    assert "Greet Ada (2)." in log
    assert out.strip() != tasks[0]["result"]  # task files print the console, not the result


# list, in this process.


def test_list_takes_its_flags_and_the_config_file(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = {"defaults": {"workdir": "."}, "tasks": [{"name": "a", "prompt": "Do it."}]}
    (here / "s.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    config = here / "c.yaml"
    config.write_text("model: openai:from-config\n", encoding="utf-8")
    argv = ["list", "s.yaml", "--config", str(config), "--output", "json"]
    flags = ["--isolation", "worktree", "--tool-mode", "xml", "--sandbox", "required"]
    assert main([*argv, *flags, "--repeat", "2"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["sample"], r["of"]) for r in rows] == [
        ("a [1/2]", 1, 2),
        ("a [2/2]", 2, 2),
    ]
    picked = {(r["model"], r["isolation"], r["tool_mode"], r["sandbox"]) for r in rows}
    assert picked == {("openai:from-config", "worktree", "xml", "required")}
    assert main(["list", "s.yaml", "--log-level", "debug"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[-1] == "1 task(s)" and not text.startswith("[")
    assert main(["list", "s.yaml", "--param", "x=1"]) == 2
    assert "--param: x: no task declares this param" in capsys.readouterr().err


# resume, in this process.


def test_resume_reruns_a_failed_task_with_the_params_given_from_the_latest_run_or_its_log(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The task's check passes only with `who=Bob`: the first run fails with its default;
    `resume` with `--param` sees the change (refused until accepted), then passes."""
    suite = {
        "defaults": {"workdir": ".", "params": {"who": "nobody"}},
        "tasks": [
            {"name": "t", "prompt": "Hi {{who}}.", "success": {"check": "test {{who}} = Bob"}}
        ],
    }
    (here / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    code, _, err = _run(capsys, "suite.yaml")
    assert code == 1, err
    [first] = _summary(here)["tasks"]
    resume = ["resume", "--model", f"replay:{REPLAY}", "--sandbox", "off"]
    assert main([*resume, "--latest"]) == 1
    capsys.readouterr()
    assert main([*resume, "--latest", "--param", "who=Bob"]) == 2
    assert "drifted since the session: params" in capsys.readouterr().err
    log = first["session_log"]
    accepted = [*resume, log, "--param", "who=Bob", "--accept-task-changes", "--out", "o2"]
    assert main(accepted) == 0, capsys.readouterr().err
    [again] = _summary(here, "o2")["tasks"]
    assert again["status"] == "passed"
