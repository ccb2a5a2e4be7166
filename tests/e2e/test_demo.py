"""The README's no-key demo works as written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from runner.sessionlog import find_sessions, read_session
from tests.e2e.conftest import REPO, clean_env

DEMO_ARGS = ["--model", "replay:examples/sessions/hello.jsonl", "--out"]


def test_the_readme_demo_runs_the_replayed_session_with_no_api_key(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "run examples/tasks/hello.yaml --model replay:examples/sessions/hello.jsonl" in readme
    env = clean_env(tmp_path)
    assert not any("API_KEY" in name for name in env)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "runner", "run", "examples/tasks/hello.yaml", *DEMO_ARGS, str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "junit.xml").is_file() and (out / "summary.json").is_file()
    (log,) = find_sessions(out)
    record = read_session(log)
    assert record.end is not None and record.end["status"] == "passed"
    assert os.environ.get("OPENAI_API_KEY") is None or "OPENAI_API_KEY" not in env
