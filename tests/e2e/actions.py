"""A small GitHub Actions runner for tests: the action's and the example workflow's steps run as
a GitHub runner runs them.

Each `run:` step goes to `bash --noprofile --norc -eo pipefail SCRIPT` with its `env:` evaluated;
`${{ }}` expressions are evaluated from the contexts (`inputs`, `steps`, `matrix`, `strategy`,
`github`, `needs`, `secrets`, `env`); `$GITHUB_OUTPUT`, `$GITHUB_ENV`, `$GITHUB_PATH` and
`$GITHUB_STEP_SUMMARY` are fresh files per step, applied after it; `if:` defaults to `success()`.
`uses:` steps are stubbed: the composite action runs its own steps, upload-artifact and
download-artifact work on a folder standing for the workflow run's artifacts (with
upload-artifact v4's name rules and its 409 for a name already used in the run), and the
set-up steps only check their inputs. `python -m pip install` is a no-op and `agent-runner` runs
this checkout (`python -m runner`), so nothing is installed.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.expressions import Scope

REPO = Path(__file__).resolve().parents[2]
STEP_TIMEOUT_S = 60.0
"""Bound on one step; a hang fails the test instead of stalling the suite."""

_FORBIDDEN_IN_ARTIFACT_NAME = set('":<>|*?\r\n\\/')


_STUB_INPUTS = {
    "actions/upload-artifact@": {
        "name",
        "path",
        "if-no-files-found",
        "retention-days",
        "compression-level",
        "overwrite",
        "include-hidden-files",
    },
    "actions/download-artifact@": {
        "name",
        "pattern",
        "path",
        "merge-multiple",
        "github-token",
        "repository",
        "run-id",
    },
    "actions/setup-python@": {"python-version", "cache"},
    "actions/setup-node@": {"node-version", "cache"},
}
"""The inputs each stubbed action takes (v4 of the artifact actions): another is a typo."""


class StepFailed(Exception):
    """A `uses:` stub refused its inputs (as the real action would fail the step)."""


# --- GitHub's files ------------------------------------------------------------------------


def read_outputs(path: Path) -> dict[str, str]:
    """`name=value` lines and `name<<DELIMITER` blocks, as the runner reads $GITHUB_OUTPUT."""
    values: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, index)
            values[name] = "\n".join(lines[index:end])
            index = end + 1
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
    return values


@dataclass
class Artifacts:
    """The artifacts of workflow runs, by run id: a folder per artifact."""

    root: Path
    uploads: list[str] = field(default_factory=list)

    def folder(self, run_id: str) -> Path:
        return self.root / run_id

    def upload(self, run_id: str, inputs: Mapping[str, str], workspace: Path) -> str:
        name = inputs.get("name") or "artifact"
        bad = _FORBIDDEN_IN_ARTIFACT_NAME & set(name)
        if bad:
            raise StepFailed(f"upload-artifact: the artifact name {name!r} is not valid: {bad}")
        target = self.folder(run_id) / name
        if target.exists() and inputs.get("overwrite", "false") != "true":
            raise StepFailed(f"upload-artifact: 409 Conflict: an artifact named {name!r} exists")
        source = workspace / inputs["path"]
        if not source.exists():
            if inputs.get("if-no-files-found", "warn") == "error":
                raise StepFailed(f"upload-artifact: no files found at {inputs['path']}")
            return "warning: no files found"
        shutil.copytree(source, target, dirs_exist_ok=False)
        self.uploads.append(name)
        return name

    def download(self, run_id: str, inputs: Mapping[str, str], workspace: Path) -> list[str]:
        run = self.folder(inputs.get("run-id") or run_id)
        if inputs.get("run-id") and not inputs.get("github-token"):
            raise StepFailed("download-artifact: run-id needs github-token")
        path = workspace / (inputs.get("path") or ".")
        names = sorted(p.name for p in run.iterdir()) if run.is_dir() else []
        if inputs.get("name"):
            if inputs["name"] not in names:
                raise StepFailed(f"download-artifact: no artifact named {inputs['name']!r}")
            shutil.copytree(run / inputs["name"], path, dirs_exist_ok=True)
            return [inputs["name"]]
        chosen = [n for n in names if fnmatch.fnmatchcase(n, inputs.get("pattern") or "*")]
        merge = inputs.get("merge-multiple", "false") == "true"
        for name in chosen:
            shutil.copytree(run / name, path if merge else path / name, dirs_exist_ok=True)
        return chosen


# --- steps ---------------------------------------------------------------------------------


@dataclass
class StepResult:
    """One step as it ran (or was skipped)."""

    name: str
    ran: bool
    ok: bool = True
    code: int = 0
    stdout: str = ""
    stderr: str = ""
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class Job:
    """One job of a workflow run on this machine: its workspace, environment and contexts."""

    workspace: Path
    artifacts: Artifacts
    env: dict[str, str]
    """The process environment of every step (before GITHUB_ENV and the step's own env)."""
    github: dict[str, Any]
    matrix: dict[str, Any] | None = None
    strategy: dict[str, Any] = field(default_factory=lambda: {"job-index": 0, "job-total": 1})
    needs: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    action: Path = REPO / "action.yml"
    """The composite action that `uses:` of `your-org/agent-runner@...` or `./` stands for."""
    fake_runner: bool = False
    """True: `agent-runner` only records its arguments (in `argv.json` of the workspace)."""
    results: list[StepResult] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    failed: bool = False
    _count: int = 0

    def __post_init__(self) -> None:
        self.temp = self.workspace.parent / f"{self.workspace.name}-runner-temp"
        self.temp.mkdir(parents=True, exist_ok=True)
        self.bin = self.workspace.parent / f"{self.workspace.name}-bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        python = self.bin / "python"
        python.write_text(
            '#!/bin/bash\nif [ "$1" = -m ] && [ "$2" = pip ]; then exit 0; fi\n'
            f'exec {sys.executable} "$@"\n',
            encoding="utf-8",
        )
        runner = self.bin / "agent-runner"
        if self.fake_runner:
            # Its arguments, and which of the run step's input variables it still sees.
            record = (
                "import json, os, sys; names = ('TASKS', 'PROMPT', 'MAX_TOKENS', 'EXTRA'); "
                "seen = [n for n in names if n in os.environ]; "
                "open('argv.json', 'a').write(json.dumps([sys.argv[1:], seen]) + '\\n')"
            )
            runner.write_text(
                f'#!/bin/bash\nexec {sys.executable} -c "{record}" "$@"\n', encoding="utf-8"
            )
        else:
            runner.write_text(f'#!/bin/bash\nexec {sys.executable} -m runner "$@"\n', "utf-8")
        # The action installs ripgrep only when it is missing; never from here.
        (self.bin / "apt-get").write_text("#!/bin/bash\nexit 1\n", encoding="utf-8")
        for tool in self.bin.iterdir():
            tool.chmod(0o755)

    def contexts(self, env: Mapping[str, str]) -> dict[str, Any]:
        return {
            "github": self.github,
            "matrix": self.matrix,
            "strategy": self.strategy,
            "needs": self.needs,
            "secrets": self.secrets,
            "env": dict(env),
            "runner": {"temp": str(self.temp), "os": "Linux"},
        }

    def run_steps(
        self,
        steps: list[dict[str, Any]],
        extra: Mapping[str, Any],
        action_path: Path | None = None,
    ) -> tuple[dict[str, dict[str, Any]], bool]:
        """Run `steps` (a job's, or a composite action's with its `inputs` in `extra`); return
        the steps context and whether one failed."""
        steps_ctx: dict[str, dict[str, Any]] = {}
        scope = Scope({**self.contexts(self.env), **extra, "steps": steps_ctx})
        for index, step in enumerate(steps):
            scope.contexts["env"] = dict(self.env)
            name = step.get("name") or step.get("uses") or f"step {index}"
            if not scope.condition(step.get("if")):
                self.results.append(StepResult(name, ran=False))
                steps_ctx[step.get("id", f"_{index}")] = {"outputs": {}, "outcome": "skipped"}
                continue
            env = {k: scope.interpolate(v) for k, v in (step.get("env") or {}).items()}
            if "run" in step:
                result = self._script(name, step, scope, env, action_path)
            else:
                result = self._uses(name, step, scope, env)
            self.results.append(result)
            if not result.ok and not step.get("continue-on-error"):
                scope.failed = True
            outcome = "success" if result.ok else "failure"
            steps_ctx[step.get("id", f"_{index}")] = {"outputs": result.outputs, "outcome": outcome}
        return steps_ctx, scope.failed

    def _files(self) -> dict[str, Path]:
        self._count += 1
        folder = self.temp / f"_step{self._count}"
        folder.mkdir()
        files = {n: folder / n.lower() for n in ("OUTPUT", "ENV", "PATH", "STEP_SUMMARY")}
        for path in files.values():
            path.touch()
        return files

    def _script(
        self,
        name: str,
        step: dict[str, Any],
        scope: Scope,
        env: dict[str, str],
        action_path: Path | None,
    ) -> StepResult:
        script_text = str(step["run"])
        assert "${{" not in script_text, f"{name}: an expression inside a script: {script_text}"
        assert step.get("shell", "bash") == "bash", f"{name}: shell {step.get('shell')}"
        files = self._files()
        script = files["OUTPUT"].parent / "script.sh"
        script.write_text(script_text, encoding="utf-8")
        process_env = {
            **self.env,
            **env,
            **{f"GITHUB_{n}": str(p) for n, p in files.items()},
            "RUNNER_TEMP": str(self.temp),
        }
        if action_path is not None:
            process_env["GITHUB_ACTION_PATH"] = str(action_path)
        process = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            check=False,
            cwd=self.workspace / step.get("working-directory", "."),
            env=process_env,
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT_S,
        )
        for line in files["ENV"].read_text(encoding="utf-8").splitlines():
            if "=" in line:
                key, value = line.split("=", 1)
                self.env[key] = value
        for line in files["PATH"].read_text(encoding="utf-8").splitlines():
            self.env["PATH"] = f"{line}:{self.env['PATH']}"
        self.summaries.append(files["STEP_SUMMARY"].read_text(encoding="utf-8"))
        return StepResult(
            name,
            ran=True,
            ok=process.returncode == 0,
            code=process.returncode,
            stdout=process.stdout,
            stderr=process.stderr,
            outputs=read_outputs(files["OUTPUT"]),
        )

    def _uses(
        self, name: str, step: dict[str, Any], scope: Scope, env: dict[str, str]
    ) -> StepResult:
        uses = str(step["uses"])
        inputs = {k: scope.interpolate(v) for k, v in (step.get("with") or {}).items()}
        known = next(
            (keys for prefix, keys in _STUB_INPUTS.items() if uses.startswith(prefix)), None
        )
        if known is not None:
            assert set(inputs) <= known, f"{name}: inputs {set(inputs) - known} of {uses}"
        run_id = str(self.github["run_id"])
        try:
            if uses.startswith("actions/upload-artifact@"):
                return StepResult(
                    name, True, stdout=self.artifacts.upload(run_id, inputs, self.workspace)
                )
            if uses.startswith("actions/download-artifact@"):
                got = self.artifacts.download(run_id, inputs, self.workspace)
                return StepResult(name, True, stdout="\n".join(got))
            if uses.startswith(("actions/setup-python@", "actions/setup-node@")):
                return StepResult(name, True)
            if uses.startswith("actions/checkout@"):
                return StepResult(name, True)
            if uses.startswith("mikepenz/action-junit-report@"):
                found = list(self.workspace.glob(inputs["report_paths"]))
                return StepResult(name, True, ok=bool(found), stdout=str(found))
            if uses.startswith("your-org/agent-runner@") or uses == "./":
                return self._composite(name, inputs, env)
        except StepFailed as exc:
            return StepResult(name, True, ok=False, code=1, stderr=str(exc))
        raise AssertionError(f"no stub for {uses}")

    def _composite(self, name: str, given: dict[str, str], env: dict[str, str]) -> StepResult:
        action = yaml.safe_load(self.action.read_text(encoding="utf-8"))
        declared = action.get("inputs") or {}
        unknown = set(given) - set(declared)
        assert not unknown, f"{name}: inputs the action does not declare: {unknown}"
        inputs = {k: given.get(k, str(spec.get("default", ""))) for k, spec in declared.items()}
        saved = dict(self.env)
        self.env.update(env)
        try:
            steps_ctx, failed = self.run_steps(
                action["runs"]["steps"], {"inputs": inputs}, action_path=self.action.parent
            )
        finally:
            self.env = saved | {k: v for k, v in self.env.items() if k not in env}
        scope = Scope({**self.contexts(self.env), "inputs": inputs, "steps": steps_ctx})
        outputs = {
            key: scope.interpolate(spec.get("value", ""))
            for key, spec in (action.get("outputs") or {}).items()
        }
        return StepResult(name, True, ok=not failed, code=int(failed), outputs=outputs)

    def step(self, name: str) -> StepResult:
        """The last step of that name that ran or was skipped."""
        return next(r for r in reversed(self.results) if r.name == name)

    def explain(self) -> str:
        """Every step as it ran, for a failed assertion."""
        parts = []
        for r in self.results:
            state = ("ok" if r.ok else f"FAILED {r.code}") if r.ran else "skipped"
            parts.append(f"--- {r.name}: {state}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        return "\n".join(parts)


def workflow_job(path: Path, job: str) -> dict[str, Any]:
    """One job of a workflow file."""
    jobs: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"]
    return dict(jobs[job])


def run_job(job: Job, steps: list[dict[str, Any]], condition: Any = None) -> bool:
    """Run a job's steps when its `if:` holds; True when it ran."""
    scope = Scope(job.contexts(job.env))
    if condition is not None and not scope.condition(condition):
        return False
    _, job.failed = job.run_steps(steps, {})
    return True


def new_job(
    workspace: Path,
    artifacts: Artifacts,
    model_env: Mapping[str, str],
    *,
    job: str = "test",
    run_id: int = 1001,
    attempt: int = 1,
    event_inputs: Mapping[str, str] | None = None,
    **fields: Any,
) -> Job:
    """A job in `workspace` (created), on the runner's clean environment plus `model_env` (the
    fake model server's URLs), as attempt `attempt` of workflow run `run_id`."""
    workspace.mkdir(parents=True, exist_ok=True)
    steering = ("AGENT_RUNNER_", "OPENAI_", "ANTHROPIC_", "GITHUB_", "RUNNER_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(steering)}
    env.update(
        XDG_CONFIG_HOME=str(workspace.parent / f"{workspace.name}-xdg"),
        PYTHONPATH=str(REPO),
        PYTHONUNBUFFERED="1",
        GITHUB_ACTIONS="true",
        GITHUB_JOB=job,
        GITHUB_RUN_ID=str(run_id),
        GITHUB_RUN_ATTEMPT=str(attempt),
        GITHUB_WORKSPACE=str(workspace),
        **model_env,
    )
    github = {
        "job": job,
        "run_id": str(run_id),
        "run_attempt": str(attempt),
        "workspace": str(workspace),
        "event": {"inputs": dict(event_inputs or {})},
    }
    made = Job(workspace, artifacts, env, github, **fields)
    made.env["PATH"] = f"{made.bin}:{env.get('PATH', '/usr/bin:/bin')}"
    return made
