"""The promises of `--events` (runner.sessionlog.events, DESIGN 20): a reader that goes away does
not fail the run (in-process and through the CLI with a closed pipe), a stream that cannot be
written for another reason is a log write error, and with `--events -` under GitHub Actions
stdout holds only the JSON records: every `::error` and `::add-mask` line goes to stderr."""

from __future__ import annotations

import errno
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.sessionlog import EventStream
from runner.sessionlog.format import LogWriteError
from tests.e2e.conftest import API_KEY, MODEL, RUN_TIMEOUT_S, call, clean_env, kill
from tests.fakes.model_server import FakeModelServer, reply


class _Gone:
    """A handle whose reader left: each write raises `error`, and counts itself."""

    def __init__(self, error: Exception) -> None:
        self.error, self.writes, self.closed = error, 0, False

    def write(self, text: str) -> int:
        self.writes += 1
        raise self.error

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    "error", [BrokenPipeError(errno.EPIPE, "gone"), ValueError("I/O on closed file")]
)
def test_a_reader_that_goes_away_ends_the_stream_not_the_run(error: Exception) -> None:
    handle = _Gone(error)
    stream = EventStream(handle, None)  # type: ignore[arg-type]
    stream.record("t", "s1", '{"type": "message"}')
    stream.record("t", "s1", '{"type": "end"}')  # the run goes on: nothing more is tried
    stream.close()
    assert handle.writes == 1 and not handle.closed  # stdout is left open


def test_a_stream_that_cannot_be_written_otherwise_is_a_log_write_error(tmp_path: Path) -> None:
    stream = EventStream(_Gone(OSError(errno.ENOSPC, "full")), tmp_path / "e.jsonl")  # type: ignore[arg-type]
    with pytest.raises(LogWriteError, match=r"e\.jsonl"):
        stream.record("t", "s1", "{}")


def _env(root: Path, server: FakeModelServer, **extra: str) -> dict[str, str]:
    return clean_env(
        root, {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": API_KEY, **extra}
    )


def _run(root: Path, server: FakeModelServer, *args: str) -> list[str]:
    return [sys.executable, "-m", "runner", "run", "-p", "Say done.", "--model", MODEL, *args]


def test_a_closed_events_pipe_does_not_fail_the_run(tmp_path: Path) -> None:
    steps = [reply(call("attempt_completion", result="done"))]
    with FakeModelServer(steps) as server:
        process = subprocess.Popen(
            _run(tmp_path, server, "--events", "-"),
            cwd=tmp_path,
            env=_env(tmp_path, server),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert process.stdout is not None
            process.stdout.close()  # the reader leaves before the first record
            _, err = process.communicate(timeout=RUN_TIMEOUT_S)
        finally:
            kill(process)
    assert process.returncode == 0, err.decode()
    assert b"Traceback" not in err and b"BrokenPipe" not in err
    summary = json.loads((tmp_path / "agent-runs" / "summary.json").read_text(encoding="utf-8"))
    assert summary["tasks"][0]["status"] == "passed"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("--max-turns", "1"), 5),  # a task that did not pass: its `::error` annotation
        (("--max-turns", "0"), 2),  # a usage error: the configuration error's annotation
    ],
)
def test_under_github_actions_stdout_holds_only_the_records(
    tmp_path: Path, args: tuple[str, ...], code: int
) -> None:
    steps = [reply("I will not call a tool.")] * 3
    summary = tmp_path / "step-summary.md"
    with FakeModelServer(steps) as server:
        env = _env(
            tmp_path,
            server,
            GITHUB_ACTIONS="true",
            GITHUB_STEP_SUMMARY=str(summary),
            GITHUB_OUTPUT=str(tmp_path / "output.txt"),
            AGENT_RUNNER_SECRETS='["EXTRA_SECRET"]',
            EXTRA_SECRET="a-secret-to-add-mask-0123",
        )
        done = subprocess.run(
            _run(tmp_path, server, "--events", "-", *args),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
    assert done.returncode == code, done.stderr
    assert "::error" in done.stderr
    assert ("::add-mask::" in done.stderr) == (code == 5)  # a run that started masks its secrets
    for line in done.stdout.splitlines():
        assert isinstance(json.loads(line)["record"], dict), line
    assert "::" not in done.stdout


def test_closing_the_stream_leaves_stdout_open_and_closes_a_file(tmp_path: Path) -> None:
    stdout = io.StringIO()
    stream = EventStream(stdout, None)
    stream.record("t", "s1", "{}")
    stream.close()
    assert (
        not stdout.closed
        and stdout.getvalue() == '{"task": "t", "session_id": "s1", "record": {}}\n'
    )
    to_file = EventStream.open(str(tmp_path / "e.jsonl"))
    handle = to_file._handle
    to_file.close()
    assert handle is not None and handle.closed


def test_an_events_file_that_cannot_be_opened_says_why_in_words(tmp_path: Path) -> None:
    target = str(tmp_path / "no" / "e.jsonl")
    with pytest.raises(ConfigError) as refused:
        EventStream.open(target)
    assert str(refused.value) == f"--events {target}: cannot write it: No such file or directory"


def test_stdout_that_cannot_be_written_is_a_log_write_error_naming_it() -> None:
    stream = EventStream(_Gone(OSError(errno.ENOSPC, "full")), None)  # type: ignore[arg-type]
    with pytest.raises(LogWriteError, match="<stdout>"):
        stream.record("t", "s1", "{}")


def test_closing_a_stream_twice_is_harmless(tmp_path: Path) -> None:
    stream = EventStream.open(str(tmp_path / "e.jsonl"))
    stream.close()
    stream.close()
    stream.record("t", "s1", "{}")  # after the end: nothing, no error
    assert (tmp_path / "e.jsonl").read_text(encoding="utf-8") == ""


def test_events_dash_streams_to_stdout_with_the_task_name_as_written(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stream = EventStream.open("-")
    stream.record("tâche ✓", "s1", '{"text": "déjà"}')
    stream.close()
    out = capsys.readouterr().out
    assert out == '{"task": "tâche ✓", "session_id": "s1", "record": {"text": "déjà"}}\n'


def test_a_lone_surrogate_does_not_end_the_stream(tmp_path: Path) -> None:
    """JSON allows `"\\ud83d"` alone; the file gets it escaped, and the stream goes on."""
    stream = EventStream.open(str(tmp_path / "e.jsonl"))
    stream.record("t", "s1", '{"text": "\ud83d"}')
    stream.record("t", "s1", '{"text": "after"}')
    stream.close()
    lines = (tmp_path / "e.jsonl").read_text(encoding="utf-8").splitlines()
    assert (
        len(lines) == 2
        and "\\ud83d" in lines[0]
        and json.loads(lines[1])["record"]["text"] == "after"
    )


def test_an_events_file_is_utf8_under_an_ascii_locale(tmp_path: Path) -> None:
    target = tmp_path / "e.jsonl"
    code = (
        "from runner.sessionlog import EventStream\n"
        f"s = EventStream.open({str(target)!r})\n"
        "s.record('t', 's1', '{\"text\": \"d\\u00e9j\\u00e0\"}')\n"
        "s.close()\n"
    )
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    assert "déjà" in target.read_bytes().decode("utf-8")
