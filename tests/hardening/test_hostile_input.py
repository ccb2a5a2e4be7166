"""Hostile input: fuzzed and explosive task files, huge prompts, workdirs and paths that try to
leave the workspace, and extension `envs` that try to pull in the provider's API key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.errors import ExitCode, RunnerError
from runner.task.loader import load_tasks
from tests.e2e.conftest import (
    API_KEY,
    NO_WORKSPACE,
    Done,
    Scenario,
    assert_no_process_left,
    call,
    clean_env,
    complete,
    log_schema_errors,
    prepare,
    run_all,
)
from tests.fakes.model_server import reply
from tests.hardening.conftest import sdk_server_yaml

# --- Task files fuzzed with hypothesis, in process ----------------------------------------------

TASK_KEYS = [
    "name",
    "description",
    "prompt",
    "params",
    "model",
    "workdir",
    "prompts",
    "sections",
    "extensions",
    "tools",
    "limits",
    "success",
    "tool_mode",
    "defaults",
    "tasks",
]
NESTED_KEYS = [
    "max_turns",
    "max_tokens",
    "max_cost_usd",
    "timeout",
    "tool_timeout",
    "check",
    "retries",
    "expect",
    "regex",
    "json_schema",
    "allow",
    "deny",
    "cmd",
    "args",
    "envs",
    "type",
    "uri",
    "headers",
    "enabled",
    "required",
    "workspace",
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(["{{x}}", "${HOME}", "${NOPE}", "..", "/", "1h", "-1s", "*", ".", "xml"])
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(NESTED_KEYS) | st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
task_like = st.dictionaries(st.sampled_from(TASK_KEYS) | st.text(max_size=8), values, max_size=8)
yaml_text = (
    task_like.map(lambda data: yaml.safe_dump(data, allow_unicode=True))
    | values.map(lambda data: yaml.safe_dump(data, allow_unicode=True))
    | st.text(max_size=300)
    | st.text(alphabet=":-[]{}&*!|>'\"%@`#, \n\tab0", max_size=200)
)


def load_outcome(text: str) -> str:
    """'loaded' or 'refused: <message>'; anything else than a RunnerError (exit 2) propagates."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            load_tasks([path], env={"HOME": "/home/u"})
        except RunnerError as error:
            assert error.exit_code == ExitCode.USAGE, error
            assert str(error).strip(), "a refusal says why"
            return f"refused: {error}"
    return "loaded"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(yaml_text)
def test_a_fuzzed_task_file_either_loads_or_is_refused_with_a_message(text: str) -> None:
    load_outcome(text)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200))
def test_a_task_file_of_random_bytes_either_loads_or_is_refused_with_a_message(
    data: bytes,
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.yaml"
        path.write_bytes(data)
        try:
            load_tasks([path])
        except RunnerError as error:
            assert error.exit_code == ExitCode.USAGE and str(error).strip()


# --- Explosive and odd files through `agent-runner validate` ------------------------------------

BILLION_LAUGHS = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(
            f"{name}: &{name} [{','.join([f'*{prev}'] * 9)}]"
            for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
        ),
        "prompt: *i",
    ]
)
CLI_FILES = {
    "billion_laughs": BILLION_LAUGHS,
    "deep_flow": "prompt: " + "[" * 5000 + "]" * 5000,
    "deep_block": "".join(f"{'  ' * i}k{i}:\n" for i in range(200)) + "  " * 200 + "v\n",
    "python_tag": "prompt: !!python/object/apply:os.system ['echo pwned']\n",
    "huge_int": "prompt: hi\nlimits: {max_turns: " + "9" * 5000 + "}\n",
    "nul_byte": "prompt: hi\x00there\n",
    "not_utf8": None,  # written as bytes below
    "merge_loop": "a: &a {b: 1}\nprompt: hi\n<<: [*a, *a]\n",
}


def validate(path: Path, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runner", "validate", str(path)],
        cwd=root,
        env=clean_env(root),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("case", sorted(CLI_FILES))
def test_an_explosive_or_odd_task_file_exits_2_fast_with_a_message_and_no_traceback(
    case: str, tmp_path: Path
) -> None:
    path = tmp_path / f"{case}.yaml"
    text = CLI_FILES[case]
    if text is None:
        path.write_bytes(b"prompt: \xff\xfe caf\xe9\n")
    else:
        path.write_text(text, encoding="utf-8")
    started = time.monotonic()
    done = validate(path, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert f"{case}.yaml:" in done.stdout + done.stderr, "the message names the file"
    assert time.monotonic() - started < 20
    assert not (tmp_path / "pwned").exists()


# --- A workdir outside the repository -----------------------------------------------------------


def test_a_workdir_outside_the_repository_of_the_task_file_is_refused(tmp_path: Path) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / ".git").mkdir(parents=True)
    (repo / "inside").mkdir()
    outside.mkdir()
    (repo / "sneaky").symlink_to(outside)
    for name, workdir in {"up": "../outside", "link": "sneaky", "abs": str(outside)}.items():
        path = repo / f"{name}.yaml"
        path.write_text(f"prompt: hi\nworkdir: {workdir}\n", encoding="utf-8")
        done = validate(path, tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"{name}.yaml:2:" in done.stderr and "outside the repository" in done.stderr
    (repo / "ok.yaml").write_text("prompt: hi\nworkdir: inside\n", encoding="utf-8")
    assert validate(repo / "ok.yaml", tmp_path).returncode == 0


def test_a_task_file_outside_any_repository_may_name_any_existing_workdir(
    tmp_path: Path,
) -> None:
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "t.yaml").write_text("prompt: hi\nworkdir: ..\n", encoding="utf-8")
    [task] = load_tasks([tmp_path / "tasks" / "t.yaml"])
    assert task.workdir == tmp_path.resolve()


# --- Runs: a 10 MB prompt, workspace escapes, envs that pull in the API key ---------------------

BIG_PROMPT = "Summarise this.\n" + ("0123456789abcdef" * 64 + "\n") * (10 * 1024 - 1)
SECRET_OUTSIDE = "TOP-SECRET-OUTSIDE-THE-ROOT"
HARD_TARGET = "HARD-LINKED-CONTENT"
ANTHROPIC_KEY = "sk-ant-hostile-should-not-travel"
OTHER_TOKEN = "hostile-token-should-not-travel"


def escape_calls(outside: Path) -> str:
    """One reply that tries every way out of the root it can think of."""
    return "\n".join(
        [
            call("read_file", path="../outside/secret.txt"),
            call("read_file", path=str(outside / "secret.txt")),
            call("read_file", path="link_file"),
            call("read_file", path="link_dir/secret.txt"),
            call("write_to_file", path="link_dir/new.txt", content="escaped"),
            call("write_to_file", path="../outside/new.txt", content="escaped"),
            call("write_to_file", path=str(outside / "abs.txt"), content="escaped"),
            call("write_to_file", path="dangling/new.txt", content="escaped"),
            call("replace_in_file", path="link_file", search="TOP", replace="BOTTOM"),
            call("write_to_file", path="hard.txt", content="overwritten"),
            call("list_files", path=".."),
            call("search_files", path="..", regex="SECRET"),
            call("read_file", path="hard.txt"),
        ]
    )


def scenarios(base: Path) -> dict[str, Scenario]:
    outside = base / "escapes" / "outside"
    key_task = {
        "extensions": {
            "workspace": {"enabled": False},
            "withkey": sdk_server_yaml(
                "--name", str(base / "envs"), envs={"OPENAI_API_KEY": "${OPENAI_API_KEY}"}
            ),
            "without": sdk_server_yaml("--name", str(base / "envs")),
        }
    }
    return {
        "big_prompt": Scenario(
            task={**NO_WORKSPACE, "prompt": BIG_PROMPT}, steps=[complete("summarised")]
        ),
        "escapes": Scenario(
            task={"prompt": "Try to get out."},
            extra_files={"outside/secret.txt": SECRET_OUTSIDE, "outside/hard.txt": HARD_TARGET},
            steps=[reply(escape_calls(outside)), complete("stayed inside")],
        ),
        "envs": Scenario(
            task=key_task,
            env={
                "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
                "AGENT_RUNNER_ANTHROPIC_API_KEY": ANTHROPIC_KEY,
                "HOSTILE_DEPLOY_TOKEN": OTHER_TOKEN,
            },
            steps=[
                reply(call("withkey__environment") + "\n" + call("without__environment")),
                complete("looked"),
            ],
        ),
    }


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    cases = scenarios(module_dir)
    escapes = module_dir / "escapes"
    prepare(cases["escapes"], escapes)
    work = escapes / "w"
    (work / "link_file").symlink_to(escapes / "outside" / "secret.txt")
    (work / "link_dir").symlink_to(escapes / "outside")
    (work / "dangling").symlink_to(escapes / "outside" / "missing")
    os.link(escapes / "outside" / "hard.txt", work / "hard.txt")
    return run_all(cases, module_dir)


def test_a_10_mb_prompt_runs_and_its_log_stays_readable(runs: dict[str, Done]) -> None:
    done = runs["big_prompt"]
    assert done.code == 0, done.explain()
    record = done.log()
    assert record.end is not None and record.end["status"] == "passed"
    assert log_schema_errors(record.path) == []
    [first] = [e for e in done.events("message") if e["role"] == "user"]
    assert first["content"] == BIG_PROMPT
    sent = done.requests[0].body["messages"]
    assert any(m["content"] == BIG_PROMPT for m in sent)
    assert done.task()["duration_s"] < 30


def test_no_tool_path_gets_out_of_the_workspace_root(runs: dict[str, Done]) -> None:
    done = runs["escapes"]
    assert done.code == 0, done.explain()
    results = [(e["tool"], e["arguments"].get("path"), e) for e in done.events("tool_call")]
    assert len(results) == 13
    for tool, path, event in results:
        assert event["is_error"], (tool, path, event["result"])
        assert "outside the workspace root" in event["result"] or "hard links" in event["result"]
    assert HARD_TARGET not in json.dumps([r.body for r in done.requests])
    outside = done.root / "outside"
    assert sorted(p.name for p in outside.iterdir()) == ["hard.txt", "secret.txt"]
    assert (outside / "secret.txt").read_text(encoding="utf-8") == SECRET_OUTSIDE
    assert (outside / "hard.txt").read_text(encoding="utf-8") == HARD_TARGET
    assert SECRET_OUTSIDE not in json.dumps([r.body for r in done.requests])
    assert_no_process_left(done.root)


def environment_seen(done: Done, tool: str) -> dict[str, Any]:
    [event] = [e for e in done.events("tool_call") if e["tool"] == tool]
    assert not event["is_error"], event["result"]
    seen: dict[str, Any] = json.loads(event["result"])
    return seen


def test_only_an_explicit_envs_entry_hands_the_api_key_to_a_server(runs: dict[str, Done]) -> None:
    done = runs["envs"]
    assert done.code == 0, done.explain()
    withkey = environment_seen(done, "withkey__environment")
    without = environment_seen(done, "without__environment")
    assert withkey["OPENAI_API_KEY"] == "***", "the key arrived, and is masked in the log"
    assert "OPENAI_API_KEY" not in without
    for seen in (withkey, without):
        leaked = [name for name in seen if "ANTHROPIC" in name or "TOKEN" in name]
        assert leaked == [] and not any(name.startswith("AGENT_RUNNER_") for name in seen)
    artifacts = [p.read_bytes() for p in done.out.rglob("*") if p.is_file()]
    assert not any(API_KEY.encode() in data for data in artifacts)
    assert_no_process_left(done.root)
