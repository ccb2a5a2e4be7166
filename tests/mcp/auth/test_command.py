"""Token and assertion commands (runner/mcp/auth/command.py): real subprocesses, no shell,
bounded time and output, and the two output formats."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from runner.mcp.auth import AuthError
from runner.mcp.auth.command import MAX_OUTPUT, parse_token_output, run_command


def _run(
    code: str, tmp_path: Path, timeout: float = 30.0, env: dict[str, str] | None = None
) -> str:
    return asyncio.run(
        run_command(
            [sys.executable, "-c", code],
            env=env or dict(os.environ),
            cwd=tmp_path,
            timeout_s=timeout,
            what="the token command",
        )
    )


def test_a_bare_token_line_becomes_a_bearer_header_with_no_known_expiry() -> None:
    token = parse_token_output("tok-abc\nignored second line")
    assert token.headers == {"Authorization": "Bearer tok-abc"}
    assert token.expires_at is None and not token.due(60)


def test_json_with_a_token_and_expires_in_is_renewed_before_it_expires() -> None:
    token = parse_token_output('{"token": "tok-abc", "expires_in": 2}')
    assert token.headers == {"Authorization": "Bearer tok-abc"}
    assert token.lifetime_s == 2
    assert token.expires_at is not None and token.expires_at <= time.monotonic() + 2
    assert not token.due(60)  # a fifth of a 2 s lifetime is the margin, not 60 s


def test_json_headers_are_sent_as_given() -> None:
    token = parse_token_output('{"headers": {"X-Api-Key": "k-1234", "Authorization": "Token t"}}')
    assert token.headers == {"X-Api-Key": "k-1234", "Authorization": "Token t"}
    assert set(token.values()) == {"k-1234", "Token t", "t"}


def test_refresh_every_gives_a_token_without_expires_in_a_lifetime() -> None:
    assert parse_token_output("tok", refresh_every=30).lifetime_s == 30


@pytest.mark.parametrize(
    ("output", "said"),
    [
        ("{not json", "not JSON"),
        ("[1]", None),
        ('{"expires_in": 5}', "neither"),
        ('{"token": "t", "expires_in": -1}', "positive"),
        ('{"token": "t", "expires_in": "soon"}', "positive"),
        ('{"headers": {"A": 1}}', "map names to strings"),
        ('{"headers": {}}', "neither"),
    ],
)
def test_malformed_output_is_a_configuration_error(output: str, said: str | None) -> None:
    if output.startswith("["):  # not an object and not starting with `{`: a bare token
        assert parse_token_output(output).headers == {"Authorization": "Bearer [1]"}
        return
    with pytest.raises(AuthError) as caught:
        parse_token_output(output)
    assert caught.value.kind == "config"
    assert said is not None and said in str(caught.value)


def test_the_output_of_a_command_is_read_without_a_shell(tmp_path: Path) -> None:
    # `$HOME` and `;` reach the program as text: no shell expands or splits them.
    out = _run("import sys; print(' '.join(sys.argv[1:]) or 'tok-$HOME;x')", tmp_path)
    assert out == "tok-$HOME;x"


def test_a_failing_command_names_its_exit_code_and_the_end_of_its_stderr(tmp_path: Path) -> None:
    with pytest.raises(AuthError) as caught:
        _run("import sys; sys.stderr.write('no credentials here'); sys.exit(3)", tmp_path)
    assert "exited with 3" in str(caught.value)
    assert "no credentials here" in str(caught.value)


def test_a_command_that_prints_nothing_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AuthError, match="printed nothing"):
        _run("pass", tmp_path)


def test_a_command_that_hangs_is_stopped_after_its_timeout(tmp_path: Path) -> None:
    with pytest.raises(AuthError, match=r"did not finish within 0\.5 s"):
        _run("import time; time.sleep(60)", tmp_path, timeout=0.5)


def test_a_command_that_prints_too_much_is_stopped(tmp_path: Path) -> None:
    with pytest.raises(AuthError, match=f"more than {MAX_OUTPUT} bytes"):
        _run("import sys\nwhile True: sys.stdout.write('x' * 65536)", tmp_path)


def test_a_missing_program_is_named(tmp_path: Path) -> None:
    with pytest.raises(AuthError, match="could not start"):
        asyncio.run(
            run_command(
                ["/no/such/token-helper"], env={}, cwd=tmp_path, timeout_s=5, what="the command"
            )
        )
