"""What a new user tripped on (issue 28), each through the CLI against the fake model server.

All scenarios run at once (run_all), so the module costs about as much as its slowest run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Done, Scenario, complete, run_all, tool_reply

SCENARIOS = {
    # 1. The scenario folder is the repository (it has .git); the workdir `w` is a subfolder.
    "repo_ignores": Scenario(
        task={},
        files={
            "main.py": "needle",
            "node_modules/a.js": "needle",
            "secret.txt": "needle",
            "src/lib.py": "",
        },
        extra_files={".git/info/exclude": "secret.txt\n", ".gitignore": "node_modules/\n"},
        steps=[
            tool_reply("list_files", path=".", recursive="true"),
            tool_reply("search_files", path=".", regex="needle"),
            complete(),
        ],
    ),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(SCENARIOS, module_dir)


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else json.dumps(content)


def test_the_repository_ignore_files_above_the_workdir_hide_files_from_listings(
    runs: dict[str, Done],
) -> None:
    done = runs["repo_ignores"]
    assert done.code == 0, done.explain()
    system = _text(done.requests[0].body["messages"][0])
    listed = _text(done.requests[1].body["messages"][-1])
    found = _text(done.requests[2].body["messages"][-1])
    for shown in (system, listed, found):
        assert "main.py" in shown
        assert "node_modules" not in shown
        assert "secret.txt" not in shown
    assert "src/lib.py" in system and "src/lib.py" in listed
