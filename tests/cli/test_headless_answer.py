"""What users of `claude -p` met next (issue 46), each through the CLI against the fake model
server: the answer on stdout, a bare `--deny-tool` rule, `--result-file -` and paths that are not
regular files, `--timeout` in seconds, the time limit's warning, `resume` of a `run -p` whose
`--out` is outside the repository, `--append-system-prompt` last, errors named by the flags,
`validate` saying every problem at once, a token limit that counts the prompt, and the
`--events` stream's last record."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import yaml

from runner.sessionlog import find_sessions, read_session
from tests.e2e.conftest import API_KEY, MODEL, REPO, RUN_TIMEOUT_S, clean_env, complete, tool_reply
from tests.fakes.model_server import FakeModelServer, Step, reply
from tests.fakes.native_wire import FakeCall

NOTES = "the notes say hi"
REPLAY = REPO / "examples" / "sessions" / "hello.jsonl"


def _read_notes(result: str = NOTES) -> list[Step]:
    return [tool_reply("read_file", path="notes.txt"), complete(result)]


def _folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "notes.txt").write_text(f"{NOTES}\n", encoding="utf-8")
    return root


def _cli(
    root: Path, server: FakeModelServer | None, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    extra = {"OPENAI_API_KEY": API_KEY, "ANTHROPIC_API_KEY": API_KEY}
    if server is not None:
        extra["OPENAI_BASE_URL"] = server.openai_base_url
        extra["ANTHROPIC_BASE_URL"] = server.anthropic_base_url
    return subprocess.run(
        [sys.executable, "-m", "runner", *args],
        cwd=root,
        env=clean_env(root, extra),
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=RUN_TIMEOUT_S,
    )


def _system(server: FakeModelServer, index: int = 0) -> str:
    first = server.requests[index].body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


# -- the answer on stdout ---------------------------------------------------------------------


def test_run_p_from_stdin_prints_only_the_result_on_stdout_and_its_progress_on_stderr(
    tmp_path: Path,
) -> None:
    root = _folder(tmp_path)
    with FakeModelServer(_read_notes()) as server:
        done = _cli(root, server, "run", "-p", "-", "--model", MODEL, stdin="Read notes.txt.")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{NOTES}\n"  # `| tee answer.txt` holds the answer and nothing else
    assert "PASS" in done.stderr and "exit code 0" in done.stderr


def test_run_p_on_the_replay_provider_prints_only_the_result(tmp_path: Path) -> None:
    done = _cli(_folder(tmp_path), None, "run", "-p", "Say hi.", "--model", f"replay:{REPLAY}")
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "agent-runs" / "summary.json").read_text(encoding="utf-8"))
    [task] = summary["tasks"]
    assert task["result"] and done.stdout == task["result"] + "\n"


def test_run_p_quiet_still_prints_the_result_and_json_output_keeps_stdout_one_document(
    tmp_path: Path,
) -> None:
    root = _folder(tmp_path)
    with FakeModelServer([complete(NOTES), complete(NOTES)]) as server:
        quiet = _cli(root, server, "run", "-p", "Say it.", "--model", MODEL, "-q")
        as_json = _cli(root, server, "run", "-p", "Say it.", "--model", MODEL, "--output", "json")
    assert quiet.returncode == 0 and quiet.stdout == f"{NOTES}\n"
    assert "START" not in quiet.stderr
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["tasks"][0]["result"] == NOTES


# -- a bare deny rule hides the tool ----------------------------------------------------------


def test_a_deny_tool_rule_without_an_argument_hides_the_tool_from_every_request(
    tmp_path: Path,
) -> None:
    root = _folder(tmp_path)
    deny = ("--deny-tool", "execute_command")
    with FakeModelServer(_read_notes()) as xml_server:
        xml = _cli(root, xml_server, "run", "-p", "Read notes.txt.", "--model", MODEL, *deny)
    finish = FakeCall("attempt_completion", json.dumps({"result": NOTES}))
    with FakeModelServer([reply("", tool_calls=(finish,))]) as native_server:
        native = _cli(
            root,
            native_server,
            *("run", "-p", "Read notes.txt.", "--model", MODEL, "--tool-mode", "native", *deny),
        )
    assert xml.returncode == 0 and native.returncode == 0, xml.stderr + native.stderr
    for index in range(len(xml_server.requests)):
        system = _system(xml_server, index)
        assert "execute_command" not in system and "read_file" in system
    for request in native_server.requests:
        names = [tool["function"]["name"] for tool in request.body["tools"]]
        assert "execute_command" not in names and "read_file" in names


def test_a_deny_tool_rule_with_an_argument_glob_still_offers_the_tool(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    with FakeModelServer(_read_notes()) as server:
        done = _cli(
            root,
            server,
            *("run", "-p", "Read notes.txt.", "--model", MODEL),
            *("--deny-tool", "execute_command(git push*)"),
        )
    assert done.returncode == 0, done.stderr
    assert "execute_command" in _system(server)


# -- --result-file ----------------------------------------------------------------------------


def _task_file(root: Path) -> Path:
    path = root / "t.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "prompt": "Read notes.txt."}), encoding="utf-8")
    return path


def test_result_file_dash_is_stdout_and_the_console_moves_to_stderr(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    _task_file(root)
    with FakeModelServer(_read_notes()) as server:
        done = _cli(root, server, "run", "t.yaml", "--model", MODEL, "--result-file", "-")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{NOTES}\n" and "PASS" in done.stderr
    assert not (root / "-").exists()


def test_result_file_that_is_a_symlink_or_a_fifo_is_written_through_not_replaced(
    tmp_path: Path,
) -> None:
    # A FIFO stands for `/dev/stdout` and other devices: on a runner that replaced the path, the
    # test must not replace a device of the machine it runs on (as root, it could).
    root = _folder(tmp_path)
    target = root / "answers" / "answer.txt"
    target.parent.mkdir()
    target.write_text("old\n", encoding="utf-8")
    link = root / "answer-link.txt"
    link.symlink_to(target)
    fifo = root / "answer.fifo"
    os.mkfifo(fifo)
    read: list[str] = []

    def drain() -> None:
        with fifo.open(encoding="utf-8") as handle:  # blocks until the runner opens it
            read.append(handle.read())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    with FakeModelServer([*_read_notes(), *_read_notes()]) as server:
        linked = _cli(
            root, server, *("run", "-p", "Read it.", "--model", MODEL), "--result-file", str(link)
        )
        piped = _cli(
            root, server, *("run", "-p", "Read it.", "--model", MODEL), "--result-file", str(fifo)
        )
    if reader.is_alive():  # the runner never opened the FIFO: let the reader go
        with fifo.open("w", encoding="utf-8"):
            pass
    reader.join(RUN_TIMEOUT_S)
    assert linked.returncode == 0, linked.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text(encoding="utf-8") == NOTES
    assert piped.returncode == 0, piped.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode), "the FIFO was replaced by a regular file"
    assert read == [NOTES]  # written through, once


def test_result_file_that_cannot_be_written_through_is_refused_and_left_alone(
    tmp_path: Path,
) -> None:
    root = _folder(tmp_path)
    (root / "a-folder").mkdir()
    with FakeModelServer(_read_notes()) as server:
        done = _cli(
            root, server, "run", "-p", "Read it.", "--model", MODEL, "--result-file", "a-folder"
        )
    assert done.returncode == 4, done.stderr
    assert "cannot write a-folder" in done.stderr
    assert (root / "a-folder").is_dir() and not list((root / "a-folder").iterdir())


def test_result_file_dash_with_events_dash_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    done = _cli(
        _folder(tmp_path),
        None,
        *("run", "-p", "hi", "--model", MODEL, "--result-file", "-", "--events", "-"),
    )
    assert done.returncode == 2
    assert "--events - and --result-file - both write to stdout" in done.stderr


# -- limits -----------------------------------------------------------------------------------


def test_timeout_as_a_plain_number_is_seconds(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    with FakeModelServer([complete("done")]) as server:
        done = _cli(root, server, "run", "-p", "Say done.", "--model", MODEL, "--timeout", "5")
        bad = _cli(root, server, "run", "-p", "Say done.", "--model", MODEL, "--timeout", "5x")
    assert done.returncode == 0, done.stderr
    [log] = find_sessions(root / "agent-runs" / "sessions")
    assert read_session(log).header["task"]["limits"]["timeout"] == 5
    assert bad.returncode == 2 and "--timeout: '5x' is not a duration" in bad.stderr


def test_the_warning_after_a_time_limit_says_why_there_is_no_final_report(
    tmp_path: Path,
) -> None:
    root = _folder(tmp_path)
    # Both the task's call and the final report's stall: the limit, then the report's own bound.
    stall = reply(complete().text, fault="stall")
    with FakeModelServer([stall, stall]) as server:
        done = _cli(root, server, "run", "-p", "Say done.", "--model", MODEL, "--timeout", "1")
    assert done.returncode == 5, done.stderr
    [line] = [ln for ln in done.stderr.splitlines() if "no final report after the limit" in ln]
    why = line.split("no final report after the limit:", 1)[1].strip()
    assert why.startswith("the request for it got no reply within"), line
    assert "time limit" in why or "timeout" in why, line


def test_a_token_limit_counts_the_prompt_and_clamps_the_reply(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    limit = 3000
    # The first reply reports a prompt that leaves almost nothing of the limit.
    steps = [
        reply(tool_reply("read_file", path="notes.txt").text, input_tokens=2900),
        complete("too late"),
    ]
    with FakeModelServer(steps) as server:
        done = _cli(
            root,
            server,
            "run",
            "-p",
            "Read notes.txt.",
            "--model",
            MODEL,
            "--max-tokens",
            str(limit),
        )
    assert done.returncode == 5, done.stderr
    [first] = server.requests
    asked = first.body.get("max_completion_tokens", first.body.get("max_tokens"))
    prompt_chars = sum(len(str(m.get("content") or "")) for m in first.body["messages"])
    assert asked is not None and asked <= limit - prompt_chars // 4
    summary = json.loads((root / "agent-runs" / "summary.json").read_text(encoding="utf-8"))
    [task] = summary["tasks"]
    assert task["kind"] == "tokens" and task["tokens"] <= limit
    assert "next request's prompt" in task["reason"]


# -- resume, the prompt, errors, validate, events ---------------------------------------------


def test_resume_latest_finds_a_run_p_task_file_under_an_out_outside_the_repository(
    tmp_path: Path,
) -> None:
    repo = _folder(tmp_path / "repo")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    out = tmp_path / "elsewhere"
    with FakeModelServer([*_read_notes(), complete("went on"), complete("and on")]) as server:
        first = _cli(
            repo, server, "run", "-p", "Read notes.txt.", "--model", MODEL, "--out", str(out)
        )
        latest = _cli(
            repo,
            server,
            "resume",
            "--latest",
            "--out",
            str(out),
            "--message",
            "Go on.",
            "--model",
            MODEL,
        )
        logs = sorted(find_sessions(out / "sessions"), key=lambda p: p.stat().st_mtime)
        from_log = _cli(
            repo, server, "resume", str(logs[0]), "--from-log", "--out", str(out), "--model", MODEL
        )
    assert first.returncode == 0, first.stderr
    assert latest.returncode == 0, latest.stderr
    assert from_log.returncode == 0, from_log.stderr
    records = [read_session(p) for p in find_sessions(out / "sessions")]
    children = [r for r in records if r.parent_id]
    assert len(children) == 2
    for child in children:
        assert Path(child.header["task"]["workdir"]) == repo.resolve()


def test_append_system_prompt_is_the_last_thing_in_the_system_prompt(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    (root / "AGENTS.md").write_text("Project notes for agents.\n", encoding="utf-8")
    with FakeModelServer([complete("done")]) as server:
        done = _cli(
            root,
            server,
            *("run", "-p", "Say done.", "--model", MODEL),
            *("--append-system-prompt", "Answer in French."),
        )
    assert done.returncode == 0, done.stderr
    system = _system(server)
    assert system.rstrip().endswith("Answer in French.")
    assert system.index("Project notes for agents.") < system.index("Answer in French.")


def test_errors_about_a_run_p_name_the_flags_not_the_generated_task_file(
    tmp_path: Path,
) -> None:
    root = _folder(tmp_path)
    no_model = _cli(root, None, "run", "-p", "Say hi.")
    bad_rule = _cli(
        root, None, "run", "-p", "Say hi.", "--model", MODEL, "--deny-tool", "no_such_tool"
    )
    for done in (no_model, bad_rule):
        assert done.returncode == 2
        assert "prompt.yaml" not in done.stderr and "run -p:" in done.stderr, done.stderr
    assert "has no model: pass --model" in no_model.stderr
    assert "--deny-tool 'no_such_tool'" in bad_rule.stderr
    assert "permissions.deny" not in bad_rule.stderr


def test_validate_reports_the_agents_problems_with_every_other_problem_at_once(
    tmp_path: Path,
) -> None:
    suite = {
        "tasks": [
            {"name": "a", "prompt": "hi", "limits": {"max_turns": 0}},
            {"name": "b", "prompt": "hi", "permissions": {"deny": ["no_such_tool_b"]}},
            {
                "name": "c",
                "prompt": "hi",
                "agents": {
                    "helper": {
                        "description": "helps",
                        "prompt": "help",
                        "tools": {"allow": ["no_such_tool_c"]},
                    }
                },
            },
        ]
    }
    root = _folder(tmp_path)
    (root / "v.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    done = _cli(root, None, "validate", "v.yaml")
    assert done.returncode == 2
    assert "max_turns" in done.stderr
    assert "no_such_tool_b" in done.stderr
    assert "no_such_tool_c" in done.stderr
    assert "3 problem(s) found" in done.stderr


def test_the_events_stream_ends_with_the_runs_end_record(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    with FakeModelServer(_read_notes()) as server:
        done = _cli(root, server, "run", "-p", "Read it.", "--model", MODEL, "--events", "-", "-q")
    assert done.returncode == 0, done.stderr
    lines: list[dict[str, Any]] = [json.loads(line) for line in done.stdout.splitlines()]
    last = lines[-1]
    assert last["task"] is None and last["session_id"] is None
    record = last["record"]
    summary = json.loads((root / "agent-runs" / "summary.json").read_text(encoding="utf-8"))
    assert record["type"] == "run_end" and record["exit_code"] == 0
    assert record["totals"] == summary["totals"] and record["passed"] == 1
    assert record["tasks"][0]["result"] == NOTES
    assert all(line["record"].get("type") != "run_end" for line in lines[:-1])
