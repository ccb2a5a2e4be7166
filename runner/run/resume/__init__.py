"""Continuing sessions from their logs (DESIGN sections 8 and 12), possibly on another machine.

`jobs` turns each log into a job for the run (`runner.run.app.execute`): the point it picks up
from and its limits; `task` rebuilds the task it runs from the task file in this checkout, never
from what the log header claims (unless `--from-log`, said plainly); `samples` keeps a resumed
sample of a repeated task that sample, and brings the task's other samples into the report.
`latest` finds the sessions of the newest run under `--out` (`resume --latest`).
"""

from __future__ import annotations

from runner.run.resume.jobs import default_message, resumed_jobs
from runner.run.resume.latest import latest_run_logs
from runner.run.resume.samples import other_samples

__all__ = ["default_message", "latest_run_logs", "other_samples", "resumed_jobs"]
