"""The rules of a token or assertion command (runner/mcp/auth/command.py), each pinned for every
instance: both output streams are bounded, the time limit holds however the command spends it,
and nothing the command started outlives it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from pathlib import Path

import pytest

from runner.mcp.auth import AuthError
from runner.mcp.auth.command import MAX_OUTPUT, parse_token_output, run_command


def _run(code: str, tmp_path: Path, timeout: float = 30.0) -> str:
    return asyncio.run(
        run_command(
            [sys.executable, "-c", code],
            env=dict(os.environ),
            cwd=tmp_path,
            timeout_s=timeout,
            what="the token command",
        )
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child not yet reaped by its (dead) parent's reaper is a zombie: dead.
    status = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
    return status != "Z"


_CHILD = (
    "import subprocess, sys\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],\n"
    "    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "open('child.pid', 'w').write(str(child.pid))\n"
)


def _wait_dead(pid: int) -> bool:
    """Whether `pid` is gone within a bounded number of checks (its killer may still be at it)."""
    for _ in range(200):
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_command_that_closes_its_output_and_keeps_running_is_stopped_at_its_time_limit(
    tmp_path: Path,
) -> None:
    # The output ends at once; the program does not. The limit is on the program, not its pipes.
    code = "import os, time\nos.close(1)\nos.close(2)\ntime.sleep(60)"
    with pytest.raises(AuthError, match=r"did not finish within 0\.5 s"):
        _run(code, tmp_path, timeout=0.5)


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_every_output_stream_is_bounded(stream: str, tmp_path: Path) -> None:
    code = f"import sys\nwhile True: sys.{stream}.write('x' * 65536)"
    with pytest.raises(AuthError, match=f"printed more than {MAX_OUTPUT} bytes") as caught:
        _run(code, tmp_path)
    assert caught.value.kind == "config"


def test_output_of_exactly_the_limit_is_read_in_full(tmp_path: Path) -> None:
    code = f"import sys\nsys.stdout.write('t' * {MAX_OUTPUT})\nsys.stderr.write('e' * {MAX_OUTPUT})"
    assert _run(code, tmp_path) == "t" * MAX_OUTPUT


@pytest.mark.parametrize(
    ("ending", "timeout"),
    [
        ("print('tok-1')", 30.0),  # it ends well
        ("import time; time.sleep(60)", 0.5),  # it runs out of time
        ("import sys\nwhile True: sys.stdout.write('x' * 65536)", 30.0),  # it prints too much
        ("import sys; sys.exit(3)", 30.0),  # it fails
    ],
)
def test_nothing_a_command_started_outlives_it(ending: str, timeout: float, tmp_path: Path) -> None:
    with contextlib.suppress(AuthError):
        _run(_CHILD + ending, tmp_path, timeout=timeout)
    pid = int((tmp_path / "child.pid").read_text(encoding="utf-8"))
    try:
        assert _wait_dead(pid), "the command's child outlived it"
    finally:
        if _alive(pid):
            os.kill(pid, 9)


def test_the_end_of_stderr_is_quoted_when_a_command_prints_nothing(tmp_path: Path) -> None:
    with pytest.raises(AuthError, match="printed nothing; its stderr ends with: 'no token today'"):
        _run("import sys; sys.stderr.write('  no token today\\n')", tmp_path)


def test_only_the_last_300_characters_of_stderr_are_quoted(tmp_path: Path) -> None:
    code = "import sys; sys.stderr.write('H' * 500 + 'T' * 300); sys.exit(1)"
    with pytest.raises(AuthError) as caught:
        _run(code, tmp_path)
    assert "T" * 300 in str(caught.value) and "H" not in str(caught.value).split("ends with")[1]


def test_a_command_runs_in_the_given_folder_with_the_given_environment_and_no_input(
    tmp_path: Path,
) -> None:
    code = "import os, sys; print(os.getcwd(), os.environ['TOKEN_SEED'], repr(sys.stdin.read()))"
    out = asyncio.run(
        run_command(
            [sys.executable, "-c", code],
            env={"TOKEN_SEED": "seed-1", "PATH": os.environ["PATH"]},
            cwd=tmp_path,
            timeout_s=30,
            what="the token command",
        )
    )
    assert out == f"{tmp_path} seed-1 ''"


def test_the_output_limit_is_64_kib_on_each_stream(tmp_path: Path) -> None:
    # The documented limit, written out: 65,536 bytes are read, one more is refused.
    fits = "import sys\nsys.stdout.write('t' * 65536)\nsys.stderr.write('e' * 65536)"
    assert len(_run(fits, tmp_path)) == 65536
    for stream in ("stdout", "stderr"):
        with pytest.raises(AuthError, match="printed more than 65536 bytes"):
            _run(f"import sys\nsys.{stream}.write('x' * 65537)", tmp_path)


def test_a_command_that_prints_too_much_is_killed_at_once_not_left_to_finish(
    tmp_path: Path,
) -> None:
    # It would write `finished` half a minute later: killed with its group, it never does.
    code = (
        "import sys, time\nsys.stdout.write('x' * 70000)\nsys.stdout.flush()\n"
        "time.sleep(30)\nopen('finished', 'w').close()"
    )
    with pytest.raises(AuthError, match="printed more than"):
        _run(code, tmp_path, timeout=120)
    assert not (tmp_path / "finished").exists()


def test_a_command_gets_no_standard_input_even_when_the_runner_has_one(tmp_path: Path) -> None:
    reading, writing = os.pipe()
    os.write(writing, b"typed-by-someone")
    os.close(writing)
    saved = os.dup(0)
    os.dup2(reading, 0)  # the runner's own stdin: a pipe with something in it
    try:
        out = _run("import sys; print(repr(sys.stdin.read()) + ' read')", tmp_path)
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(reading)
    assert out == "'' read"


def test_a_program_that_cannot_start_is_named_with_the_reason(tmp_path: Path) -> None:
    for program, reason in [
        (tmp_path / "missing", "No such file or directory"),
        (tmp_path, "Permission denied"),  # a folder is no program
    ]:
        with pytest.raises(AuthError) as caught:
            asyncio.run(
                run_command(
                    [str(program)], env={}, cwd=tmp_path, timeout_s=5, what="the assertion command"
                )
            )
        assert (
            str(caught.value) == f"the assertion command {str(program)!r} could not start: {reason}"
        )
        assert caught.value.kind == "config"


@pytest.mark.parametrize(
    ("output", "lifetime"),
    [
        ('{"token": "t", "expires_in": 0.5}', 0.5),  # any positive number, a fraction too
        ('{"token": "t", "expires_in": 30}', 30.0),
        ('{"headers": {"X-Key": "k"}, "expires_in": 7}', 7.0),
    ],
)
def test_every_positive_expires_in_is_the_tokens_lifetime(output: str, lifetime: float) -> None:
    token = parse_token_output(output)
    assert token.lifetime_s == lifetime and token.scope is None
    assert token.expires_at is not None
    assert time.monotonic() < token.expires_at <= time.monotonic() + lifetime


@pytest.mark.parametrize("expires", ["0", "-0.5", '"30"', "null"])
def test_an_expires_in_that_is_not_a_positive_number_is_refused_or_ignored(expires: str) -> None:
    output = f'{{"token": "t", "expires_in": {expires}}}'
    if expires == "null":  # not given
        assert parse_token_output(output).expires_at is None
        return
    with pytest.raises(AuthError, match="not a positive number"):
        parse_token_output(output)


def test_expires_in_wins_over_refresh_every_which_applies_only_without_it() -> None:
    assert (
        parse_token_output('{"token": "t", "expires_in": 30}', refresh_every=100).lifetime_s == 30
    )
    assert parse_token_output('{"token": "t"}', refresh_every=100).lifetime_s == 100
    assert parse_token_output("t", refresh_every=100).lifetime_s == 100
    assert parse_token_output('{"token": "t"}').lifetime_s is None


@pytest.mark.parametrize(
    "output",
    [
        '{"token": ""}',  # an empty token is none
        '{"token": 5}',  # a token that is not text is none
        '{"token": null, "headers": {}}',
        '{"headers": ["Authorization: Bearer t"]}',  # headers that are not an object
        '{"headers": "Authorization: Bearer t"}',
    ],
)
def test_every_output_without_a_usable_token_or_headers_is_refused(output: str) -> None:
    with pytest.raises(AuthError, match='neither "token" nor "headers"') as caught:
        parse_token_output(output)
    assert caught.value.kind == "config"


def test_a_token_beside_headers_is_sent_as_the_bearer_header_alone() -> None:
    token = parse_token_output('{"token": "t1", "headers": {"X-Key": "k"}}')
    assert token.headers == {"Authorization": "Bearer t1"}


@pytest.mark.parametrize("value", ["1", "null", '["a"]', '{"a": "b"}', "true"])
def test_every_header_value_must_be_text(value: str) -> None:
    with pytest.raises(AuthError, match="map names to strings"):
        parse_token_output(f'{{"headers": {{"X-Key": "k", "X-Other": {value}}}}}')


def test_json_that_is_not_an_object_is_refused() -> None:
    for output in ('{"token": "t"} trailing', "{"):
        with pytest.raises(AuthError, match="not JSON"):
            parse_token_output(output)
