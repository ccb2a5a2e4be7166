"""DESIGN 20 through the CLI: `run -p`, the limit and policy flags, `--result-file`, `--events`
and `resume --latest`, each a runner process against the fake model server (the real SDK)."""

from __future__ import annotations

import json
import queue
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pytest

from runner.sessionlog import read_session
from tests.e2e.conftest import (
    API_KEY,
    MODEL,
    REPO,
    RUN_TIMEOUT_S,
    Scenario,
    call,
    clean_env,
    complete,
    kill,
    log_schema_errors,
    run_all,
    tool_reply,
)
from tests.fakes.model_server import FakeModelServer, Step, reply

NOTES = {"notes.txt": "the notes say hi\n"}
SECRET = "s3cr3t-value-for-events-0123"


def _read_notes(result: str) -> list[Step]:
    return [tool_reply("read_file", path="notes.txt"), complete(result)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The runs the tests look at, all at once: the suite's wall time is its slowest run."""
    base = tmp_path_factory.mktemp("headless")
    suite = {
        "tasks": [
            {"name": "first", "workdir": "w", "prompt": f"Say {SECRET} first."},
            {"name": "second", "workdir": "w", "prompt": "Say it second."},
        ]
    }
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    [line] = [ln for ln in readme.splitlines() if ln.startswith("agent-runner run -p ")]
    words = shlex.split(line)
    assert words[words.index("--model") + 1].startswith("anthropic:")
    with _StdinRun(base / "stdin") as stdin:
        done: dict[str, Any] = run_all(
            {
                "prompt": Scenario(
                    steps=_read_notes("the notes say hi"),
                    files=NOTES,
                    extra_files={"prompt.md": "Read notes.txt and report what it says.\n"},
                    args=[
                        *("run", "--prompt-file", "prompt.md"),
                        *("--workdir", "w", "--model", MODEL, "--out", "OUT"),
                        *("--result-file", "result.txt"),
                    ],
                ),
                "suite": Scenario(
                    task=suite,
                    steps=[complete(f"one {SECRET}"), complete("two")],
                    args=[
                        *("run", "t.yaml", "--model", MODEL, "--out", "OUT", "--jobs", "1"),
                        *("--result-file", "results.json", "--events", "events.jsonl"),
                    ],
                    env={"EVENTS_TEST_TOKEN": SECRET},
                ),
                "readme": Scenario(
                    steps=[complete("It is a folder.")],
                    args=words[1:],
                    env={"ANTHROPIC_API_KEY": API_KEY},
                ),
            },
            base,
        )
        done["stdin"] = stdin.wait()
    return done


class _StdinRun:
    """`run -p -` with its prompt on stdin, the name, policy and limit flags; runs while the
    other runs do."""

    def __init__(self, root: Path) -> None:
        (root / "w").mkdir(parents=True)
        (root / "w" / "notes.txt").write_text("hi\n", encoding="utf-8")
        self.root = root
        self.server = FakeModelServer(_read_notes("never"))
        flags = [
            *("--name", "from-stdin", "--max-turns", "1", "--deny-tool", "read_file(notes*)"),
            *("--append-system-prompt", "Answer in French.", "--model", MODEL),
        ]
        self.args = ["run", "-p", "-", "--workdir", "w", *flags]

    def __enter__(self) -> _StdinRun:
        self.server.start()
        self.process = _popen(self.root, self.server, *self.args, stdin=subprocess.PIPE)
        assert self.process.stdin is not None
        self.process.stdin.write("Read it.")
        self.process.stdin.close()
        return self

    def wait(self) -> tuple[int, FakeModelServer]:
        return self.process.wait(RUN_TIMEOUT_S), self.server

    def __exit__(self, *exc: object) -> None:
        kill(self.process)
        self.server.stop()


def test_a_prompt_file_runs_as_one_task_with_the_default_tools_and_the_usual_reports(
    runs: dict[str, Any],
) -> None:
    done = runs["prompt"]
    assert done.code == 0, done.explain()
    assert done.task()["name"] == "prompt" and done.task()["status"] == "passed"
    assert done.testcase("prompt") is not None
    [read] = done.events("tool_call")
    assert read["tool"] == "read_file" and "the notes say hi" in read["result"]
    first = done.requests[0].body["messages"]
    assert any("Read notes.txt and report" in str(m.get("content")) for m in first)
    task_file = done.out / "tasks" / "prompt.yaml"
    assert done.log().header["task_file"] == str(task_file.resolve())
    assert Path(done.log().header["task"]["workdir"]) == (done.root / "w").resolve()
    assert log_schema_errors(done.log().path) == []


def test_result_file_holds_the_one_tasks_result_text(runs: dict[str, Any]) -> None:
    assert (runs["prompt"].root / "result.txt").read_text(encoding="utf-8") == "the notes say hi"


def test_result_file_of_several_tasks_is_a_map_of_name_to_result_masked(
    runs: dict[str, Any],
) -> None:
    done = runs["suite"]
    assert done.code == 0, done.explain()
    results = json.loads((done.root / "results.json").read_text(encoding="utf-8"))
    assert results == {"first": "one ***", "second": "two"}


def test_events_file_has_every_log_record_with_its_task_masked_like_the_log(
    runs: dict[str, Any],
) -> None:
    done = runs["suite"]
    text = (done.root / "events.jsonl").read_text(encoding="utf-8")
    assert SECRET not in text
    lines = [json.loads(line) for line in text.splitlines()]
    for log in done.logs():
        name = log.header["task"]["name"]
        logged = log.path.read_text(encoding="utf-8").splitlines()
        streamed = [e for e in lines if e["session_id"] == log.session_id]
        assert {e["task"] for e in streamed} == {name}
        assert [json.dumps(e["record"], ensure_ascii=False) for e in streamed] == [
            json.dumps(json.loads(line), ensure_ascii=False) for line in logged
        ]


def test_resume_latest_continues_the_newest_run_with_the_limit_flags(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    root = runs["prompt"].root
    with FakeModelServer([complete("went on")]) as server:
        done = _cli(
            root,
            server,
            "resume",
            "--latest",
            *("--message", "Go on.", "--out", "OUT", "--max-turns", "7"),
            *("--result-file", str(tmp_path / "r.txt")),
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "r.txt").read_text(encoding="utf-8") == "went on"
    records = [read_session(p) for p in (root / "OUT" / "sessions").glob("*.jsonl")]
    [parent] = [r for r in records if not r.parent_id]
    [child] = [r for r in records if r.parent_id]
    assert child.parent_id == parent.session_id
    assert child.header["task"]["limits"]["max_turns"] == 7


def test_prompt_from_stdin_with_a_name_obeys_the_policy_and_limit_flags(
    runs: dict[str, Any],
) -> None:
    code, server = runs["stdin"]
    assert code == 5  # the turn limit stopped it
    body = server.requests[0].body
    assert "Answer in French." in str(body["messages"][0]["content"])
    assert "Read it." in str(body["messages"][-1]["content"])
    (log,) = (runs["prompt"].root.parent / "stdin" / "agent-runs" / "sessions").glob("*.jsonl")
    record = read_session(log)
    assert record.header["task"]["name"] == "from-stdin"
    [denied] = [e for e in record.events if e["type"] == "tool_call"]
    assert denied["is_error"] and "read_file(notes*)" in denied["result"]


def test_the_readme_one_line_prompt_command_runs_as_written(runs: dict[str, Any]) -> None:
    done = runs["readme"]
    assert done.code == 0, done.explain()
    assert (done.root / "agent-runs" / "summary.json").is_file()
    assert done.requests[0].wire == "anthropic"


def test_events_dash_streams_each_record_to_stdout_while_the_task_runs(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "notes.txt").write_text("hi\n", encoding="utf-8")
    finish = call("attempt_completion", result="done")
    steps = [tool_reply("read_file", path="notes.txt"), reply(finish, fault="stall")]
    args = ["run", "-p", "Read notes.txt.", "--workdir", "w", "--model", MODEL, "--events", "-"]
    with FakeModelServer(steps) as server:
        process = _popen(tmp_path, server, *args)
        lines = _lines_of(process.stdout)
        try:
            seen = []
            # The second reply is held until the test lets it go: what the test reads before
            # then was streamed while the task was still running.
            while not any(r["record"].get("type") == "tool_call" for r in seen):
                seen.append(json.loads(lines.get(timeout=RUN_TIMEOUT_S)))
            assert server.wait_for_stall(RUN_TIMEOUT_S) and process.poll() is None
            assert not any(r["record"].get("type") == "end" for r in seen)
            assert "version" in seen[0]["record"] and {r["task"] for r in seen} == {"prompt"}
            server.release()
            assert process.wait(RUN_TIMEOUT_S) == 0
            rest = []
            while (line := lines.get(timeout=RUN_TIMEOUT_S)) is not None:
                rest.append(json.loads(line))  # every stdout line is a record: nothing else
        finally:
            kill(process)
    assert rest[-2]["record"]["type"] == "end" and rest[-2]["record"]["status"] == "passed"
    assert rest[-1]["record"]["type"] == "run_end" and rest[-1]["record"]["exit_code"] == 0


def _env(root: Path, server: FakeModelServer) -> dict[str, str]:
    return clean_env(
        root,
        {
            "OPENAI_BASE_URL": server.openai_base_url,
            "OPENAI_API_KEY": API_KEY,
            "ANTHROPIC_BASE_URL": server.anthropic_base_url,
            "ANTHROPIC_API_KEY": API_KEY,
        },
    )


def _cli(root: Path, server: FakeModelServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runner", *args],
        cwd=root,
        env=_env(root, server),
        capture_output=True,
        text=True,
        check=False,
        timeout=RUN_TIMEOUT_S,
    )


def _popen(
    root: Path, server: FakeModelServer, *args: str, stdin: int = subprocess.DEVNULL
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "runner", *args],
        cwd=root,
        env=_env(root, server),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _lines_of(stream: IO[str] | None) -> queue.Queue[Any]:
    """The stream's lines as they arrive, then None at its end (read by a thread of its own)."""
    lines: queue.Queue[Any] = queue.Queue()

    def pump() -> None:
        assert stream is not None
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines
