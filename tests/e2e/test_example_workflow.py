"""The example workflow (`examples/workflows/agent-tasks.yml`) run as GitHub runs it
(tests/e2e/actions.py): four shards, a re-run of the failed ones as attempt 2, the report job
after each attempt, and a later run that resumes the first from its artifacts. Every task is
counted once and every task that still failed is resumed once."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.run.plan import shard_of
from runner.sessionlog import find_sessions, read_session
from tests.e2e.actions import REPO, Artifacts, Job, new_job, run_job, workflow_job
from tests.e2e.conftest import NO_WORKSPACE, complete
from tests.fakes.model_server import FakeModelServer

WORKFLOW = REPO / "examples" / "workflows" / "agent-tasks.yml"
RUN_ID, RESUME_RUN_ID = 1001, 2002
SHARDS = 4


def _task(name: str, **more: Any) -> str:
    return yaml.safe_dump({"name": name, "prompt": "Say ok.", **NO_WORKSPACE, **more})


TASKS = {
    "good-a": _task("good-a"),
    "good-b": _task("good-b"),
    # Fails until a fix lands in the checkout (attempt 2 has it).
    "flaky": _task("flaky", success={"check": "test -f fixed.txt", "retries": 0}),
    "broken": _task("broken", success={"expect": {"regex": "^42$"}}),
}


@dataclass
class Runs:
    """Every job the scenario ran, by a short name."""

    jobs: dict[str, Job]
    shards_failed_first: list[int]


def _checkout(job: Job, fixed: bool) -> None:
    for name, text in TASKS.items():
        path = job.workspace / "agent-tasks" / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if fixed:
        (job.workspace / "agent-tasks" / "fixed.txt").write_text("fixed\n", encoding="utf-8")


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> Iterator[Runs]:
    with FakeModelServer([], default=complete("ok")) as server:
        model_env = {"ANTHROPIC_BASE_URL": server.anthropic_base_url}
        secrets = {"ANTHROPIC_API_KEY": "sk-ant-workflow-1234", "GITHUB_TOKEN": "ghs_token"}
        artifacts = Artifacts(module_dir / "artifacts")
        jobs: dict[str, Job] = {}

        def job(name: str, kind: str, *, attempt: int = 1, **fields: Any) -> Job:
            made = new_job(
                module_dir / name,
                artifacts,
                model_env,
                job=kind,
                attempt=attempt,
                secrets=secrets,
                **fields,
            )
            jobs[name] = made
            return made

        def shard(k: int, attempt: int) -> Job:
            made = job(
                f"run-{k}-{attempt}",
                "run",
                attempt=attempt,
                matrix={"shard": k},
                strategy={"job-index": k - 1, "job-total": SHARDS},
            )
            _checkout(made, fixed=attempt > 1)
            spec = workflow_job(WORKFLOW, "run")
            run_job(made, spec["steps"], spec["if"])
            return made

        def report(attempt: int, result: str) -> None:
            made = job(
                f"report-{attempt}", "report", attempt=attempt, needs={"run": {"result": result}}
            )
            spec = workflow_job(WORKFLOW, "report")
            run_job(made, spec["steps"], spec["if"])

        with ThreadPoolExecutor(max_workers=SHARDS) as pool:
            first = list(pool.map(lambda k: shard(k, 1), range(1, SHARDS + 1)))
        failed = [k for k, j in enumerate(first, 1) if j.failed]
        report(1, "failure" if failed else "success")
        # "Re-run failed jobs": attempt 2 of the failed shards only, with the fix checked in.
        with ThreadPoolExecutor(max_workers=SHARDS) as pool:
            second = list(pool.map(lambda k: shard(k, 2), failed))
        report(2, "failure" if any(j.failed for j in second) else "success")
        # A later dispatch resumes the first run from its artifacts.
        resume = job("resume", "resume", event_inputs={"resume-run-id": str(RUN_ID)})
        resume.github["run_id"] = str(RESUME_RUN_ID)
        _checkout(resume, fixed=False)
        spec = workflow_job(WORKFLOW, "resume")
        run_job(resume, spec["steps"], spec["if"])
        yield Runs(jobs, failed)


def test_the_scenario_fails_two_shards_first_and_fixes_one_task_on_the_rerun(runs) -> None:
    expected = sorted({shard_of("flaky", SHARDS), shard_of("broken", SHARDS)})
    assert runs.shards_failed_first == expected, [j.explain() for j in runs.jobs.values()]
    assert all(not runs.jobs[f"run-{k}-2"].failed for k in expected if k != shard_of("broken", 4))
    # Every shard and attempt uploaded under its own name: no 409.
    uploads = runs.jobs["run-1-1"].artifacts.uploads
    assert len(uploads) == len(set(uploads)), uploads
    for job in runs.jobs.values():
        assert all(r.ok for r in job.results if r.name == "Upload artifacts"), job.explain()


def test_the_report_after_the_rerun_counts_every_task_once(runs) -> None:
    job = runs.jobs["report-2"]
    assert not job.failed, job.explain()
    root = ET.parse(job.workspace / "merged" / "junit.xml").getroot()
    names = sorted(c.get("name") or "" for c in root.iter("testcase"))
    assert names == sorted(TASKS), job.explain()
    assert (root.get("tests"), root.get("failures")) == ("4", "1")
    summary = json.loads((job.workspace / "merged" / "summary.json").read_text("utf-8"))
    assert (summary["passed"], summary["failed"]) == (3, 1)
    assert "agent-report-merged-attempt-2" in job.artifacts.uploads


def test_the_report_job_runs_after_a_failed_shard_but_not_on_a_cancelled_run() -> None:
    condition = workflow_job(WORKFLOW, "report")["if"]
    assert "!cancelled()" in condition and "always()" not in condition


def test_the_resume_job_resumes_each_task_that_still_failed_once(runs) -> None:
    job = runs.jobs["resume"]
    assert job.step("Download the failed run's artifacts").stdout != ""
    summary = json.loads((job.workspace / "resumed" / "summary.json").read_text("utf-8"))
    assert [t["name"] for t in summary["tasks"]] == ["broken"], job.explain()
    logs = [read_session(p) for p in find_sessions(job.workspace / "resumed")]
    assert len(logs) == 1 and logs[0].header.get("parent_id"), job.explain()
    assert "agent-runs-resumed-attempt-1" in job.artifacts.uploads


def test_the_resume_job_caps_the_cost_as_the_shards_were() -> None:
    steps = workflow_job(WORKFLOW, "resume")["steps"]
    (resume,) = [s for s in steps if "agent-runner resume" in s.get("run", "")]
    assert "--max-cost-usd" in resume["run"]
