"""End-to-end helpers: the CLI in a subprocess, the fake model server, the real workspace server.

A `Scenario` is one `agent-runner` invocation: a task file, the files of its workdir, the fake
server's script and the command line. `run_all` starts every scenario it is given at once (each
with its own server on a free 127.0.0.1 port, its own folder and its own process) and waits for
all of them, so a module's runs cost about as much wall time as its slowest one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from runner.sessionlog import SessionRecord, find_sessions, read_session
from tests.conftest import processes_mentioning
from tests.fakes.model_server import FakeModelServer, Step, reply

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
XSD_VALIDATOR = SHARED / "junit" / "validate_junit.py"
LOG_SCHEMA = json.loads((REPO / "docs" / "session-log.schema.json").read_text(encoding="utf-8"))
RUN_TIMEOUT_S = 60.0
REACH_S = 120.0
"""How long a test waits for a run to reach a point (a stalled model call, a started command)
before it gives up: a bound for a hang, not for speed. Runs started side by side on a loaded
machine (load 18 on 2 cores) took over 30 s to reach their second model call."""
"""Bound on one runner process; a hang fails the test instead of stalling the suite."""

MODEL = "openai:gpt-4.1"
API_KEY = "sk-e2e-test-key"

# Waits between retries shrunk to milliseconds: the behaviour is the same, the suite stays fast.
NO_WORKSPACE: dict[str, Any] = {"extensions": {"workspace": {"enabled": False}}}
"""For tasks that call no tool: fewer moving parts, and no tool catalogue in the prompt."""

FAST_RETRIES = {
    "AGENT_RUNNER_RETRY__INITIAL_BACKOFF_S": "0.01",
    "AGENT_RUNNER_RETRY__MAX_BACKOFF_S": "0.05",
    "AGENT_RUNNER_RETRY__RETRY_AFTER_CAP_S": "0.2",
    "AGENT_RUNNER_RETRY__MAX_TOTAL_WAIT_S": "2",
}


def call(tool: str, **params: str) -> str:
    """An XML tool call as a model writes it."""
    body = "".join(f"<{name}>{value}</{name}>\n" for name, value in params.items())
    return f"<{tool}>\n{body}</{tool}>"


def complete(result: str = "done", **step: Any) -> Step:
    """A reply that ends the task with attempt_completion; `step` sets Step fields."""
    return reply(call("attempt_completion", result=result), **step)


def tool_reply(tool: str, /, **params: str) -> Step:
    """A reply with one tool call."""
    return reply(call(tool, **params))


@dataclass
class Scenario:
    """One `agent-runner` invocation and everything it needs."""

    task: dict[str, Any] | str | None = None
    """The task file `t.yaml` (a mapping is written as YAML; a string as is); None: none."""
    steps: Sequence[Step] = ()
    """The fake model server's script."""
    files: Mapping[str, str] = field(default_factory=dict)
    """Files of the workdir `w/`."""
    args: Sequence[str] | None = None
    """Command line after `python -m runner`; default: run t.yaml on MODEL into OUT."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment on top of the clean one (which has the server URL and an API key)."""
    default: Step | None = None
    """What the server plays once the script is used up."""
    extra_files: Mapping[str, str] = field(default_factory=dict)
    """Files of the scenario folder itself (config files, more task files)."""
    routes: Mapping[str, Sequence[Step]] = field(default_factory=dict)
    """The fake server's scripts by a marker of the first user message (see FakeModelServer)."""


@dataclass
class Done:
    """A finished runner process and its artifacts."""

    code: int
    stdout: str
    stderr: str
    root: Path
    """The scenario folder (the process's working directory)."""
    requests: list[Any]
    """What the fake model server received."""

    @property
    def out(self) -> Path:
        return self.root / "OUT"

    def summary(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.out / "summary.json").read_text(encoding="utf-8"))
        return data

    def task(self, name: str | None = None) -> dict[str, Any]:
        """One task's entry of summary.json (the only one when `name` is None)."""
        tasks = self.summary()["tasks"]
        if name is None:
            (only,) = tasks
            return dict(only)
        return dict(next(t for t in tasks if t["name"] == name))

    def junit(self) -> ET.Element:
        return ET.parse(self.out / "junit.xml").getroot()

    def testcase(self, name: str | None = None) -> ET.Element:
        cases = self.junit().findall(".//testcase")
        if name is None:
            (only,) = cases
            return only
        return next(c for c in cases if c.get("name") == name)

    def logs(self) -> list[SessionRecord]:
        return [read_session(path) for path in find_sessions(self.out)]

    def log(self) -> SessionRecord:
        (only,) = self.logs()
        return only

    def events(self, kind: str, record: SessionRecord | None = None) -> list[dict[str, Any]]:
        record = record or self.log()
        return [e for e in record.events if e.get("type") == kind]

    def explain(self) -> str:
        """What to print when an assertion fails."""
        return f"exit {self.code}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def clean_env(root: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment minus anything that would steer the runner, plus `extra`."""
    steering = ("AGENT_RUNNER_", "OPENAI_", "ANTHROPIC_", "GITHUB_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(steering)}
    env.update(
        XDG_CONFIG_HOME=str(root / "xdg"),
        PYTHONPATH=str(REPO),
        PYTHONUNBUFFERED="1",
        **FAST_RETRIES,
    )
    env.update(extra or {})
    return env


def prepare(scenario: Scenario, root: Path) -> None:
    """Write the scenario's task file, workdir and extra files under `root`."""
    workdir = root / "w"
    workdir.mkdir(parents=True, exist_ok=True)
    for name, text in scenario.files.items():
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text(text, encoding="utf-8")
    for name, text in scenario.extra_files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    if isinstance(scenario.task, dict):
        task = scenario.task
        if "tasks" not in task:  # a single task; a suite says everything itself
            task = {"name": "t", "workdir": "w", "prompt": "Do the task.", **task}
        (root / "t.yaml").write_text(yaml.safe_dump(task, sort_keys=False), encoding="utf-8")
    elif isinstance(scenario.task, str):
        (root / "t.yaml").write_text(scenario.task, encoding="utf-8")


@dataclass
class Started:
    """A runner process that is running, with its server and output files."""

    process: subprocess.Popen[bytes]
    server: FakeModelServer
    root: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def explain(self) -> str:
        """What to print when a wait on a running runner fails: whether it still runs, what it
        printed so far and the requests the model server got."""
        code = self.process.poll()
        state = "still running" if code is None else f"exited {code}"
        out = (self.root / "stdout.txt").read_text(encoding="utf-8", errors="replace")
        err = (self.root / "stderr.txt").read_text(encoding="utf-8", errors="replace")
        requests = len(self.server.requests)
        return (
            f"runner {state}; the model server got {requests} request(s)\n"
            f"--- stdout\n{out[-4000:]}\n--- stderr\n{err[-4000:]}"
        )

    def wait(self, timeout: float = RUN_TIMEOUT_S) -> Done:
        try:
            code = self.process.wait(timeout)
        finally:
            kill(self.process)
        return Done(
            code=code,
            stdout=(self.root / "stdout.txt").read_text(encoding="utf-8"),
            stderr=(self.root / "stderr.txt").read_text(encoding="utf-8"),
            root=self.root,
            requests=self.server.requests,
        )


def start(
    scenario: Scenario,
    root: Path,
    server: FakeModelServer | None = None,
    launcher: Sequence[str] = ("-m", "runner"),
) -> Started:
    """Write the scenario under `root`, start its server (unless given one) and the runner.

    `launcher` comes between the interpreter and the runner's arguments: `-m runner` runs the
    CLI as users do; `-c CODE` runs it under a harness of the test's own.
    """
    prepare(scenario, root)
    if server is None:
        server = FakeModelServer(
            scenario.steps, default=scenario.default, routes=dict(scenario.routes)
        ).start()
    env = clean_env(
        root,
        {
            "OPENAI_BASE_URL": server.openai_base_url,
            "OPENAI_API_KEY": API_KEY,
            # Used only by tasks on an anthropic model, which also need ANTHROPIC_API_KEY.
            "ANTHROPIC_BASE_URL": server.anthropic_base_url,
            **scenario.env,
        },
    )
    args = scenario.args if scenario.args is not None else default_args()
    with (
        (root / "stdout.txt").open("wb") as stdout,
        (root / "stderr.txt").open("wb") as stderr,
    ):
        process = subprocess.Popen(
            [sys.executable, *launcher, *args],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
        )
    return Started(process, server, root)


def default_args(*more: str) -> list[str]:
    return ["run", "t.yaml", "--model", MODEL, "--out", "OUT", *more]


def kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process by its PID if it still runs, and reap it."""
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
        process.wait()


def run_all(scenarios: Mapping[str, Scenario], base: Path) -> dict[str, Done]:
    """Run every scenario at once, each in `base/<name>`; return when all have finished."""
    started: dict[str, Started] = {}
    try:
        for name, scenario in scenarios.items():
            started[name] = start(scenario, base / name)
        return {name: run.wait() for name, run in started.items()}
    finally:
        for run in started.values():
            kill(run.process)
            run.server.stop()


def run_one(scenario: Scenario, root: Path) -> Done:
    return run_all({"run": scenario}, root)["run"]


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
    """Poll `predicate` until it holds; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting for {what or predicate}")
        time.sleep(0.02)


def assert_no_process_left(root: Path, timeout: float = 10.0) -> None:
    """Every process started for this scenario (runner, MCP servers, commands) has exited."""
    wait_until(
        lambda: not processes_mentioning(str(root)),
        timeout,
        f"the processes of {root} to exit: {processes_mentioning(str(root))}",
    )


def log_schema_errors(path: Path) -> list[str]:
    """Every line of a session log that does not match docs/session-log.schema.json."""
    validator = jsonschema.Draft202012Validator(LOG_SCHEMA)
    errors = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for error in validator.iter_errors(json.loads(line)):
            errors.append(f"{path.name}:{number}: {error.message}")
    return errors


def junit_schema_problems(path: Path) -> str | None:
    """None when the JUnit file validates against the Jenkins junit-4 XSD, else the output."""
    done = subprocess.run(
        [
            sys.executable,
            str(XSD_VALIDATOR),
            "--schema",
            "jenkins-junit-4",
            "--ignore-attr",
            "testcase@file,testcase@line",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    return None if done.returncode == 0 else done.stdout + done.stderr


needs_shared_junit = pytest.mark.skipif(
    not XSD_VALIDATOR.is_file(), reason=f"the JUnit schemas are not checked out at {SHARED}"
)


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    return tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    """A fake model server with an empty script; tests push steps."""
    with FakeModelServer() as srv:
        yield srv
