"""A writer killed with SIGKILL leaves every event it wrote readable."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from runner.sessionlog import find_sessions, read_session, status_of

REPO = Path(__file__).parents[2]
EVENTS = 25

WRITER = """
import os, signal, sys
from pathlib import Path
from runner.sessionlog import SessionLogWriter
from runner.redact import Redactor

header = {"run_id": "r", "task": {"name": "killed"}, "model": "m", "system_prompt": "p"}
writer = SessionLogWriter.create(Path(sys.argv[1]), header, Redactor())
for turn in range(int(sys.argv[2])):
    writer.message("assistant", f"event {turn}", turn)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_a_killed_writer_leaves_every_event_readable(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WRITER, str(tmp_path), str(EVENTS)],
        cwd=REPO,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    (path,) = find_sessions(tmp_path)
    record = read_session(path)
    assert [e["content"] for e in record.events] == [f"event {i}" for i in range(EVENTS)]
    assert status_of(record) == "incomplete"
    assert not record.torn
