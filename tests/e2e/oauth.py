"""Helpers of the MCP auth scenarios (DESIGN 26): the task, the run through the CLI, and the
search of every artifact, the console and the HTML export for a secret."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.e2e.conftest import (
    Done,
    Scenario,
    clean_env,
    run_one,
)
from tests.mcp.auth.world import (
    CLIENT_SECRET,
    World,
    key_pair,
    standard_clients,
)

CC_KEY = key_pair()
OIDC_KEY = key_pair()
CLIENTS = standard_clients(CC_KEY, OIDC_KEY)


def task_for(
    world: World, auth: dict[str, Any], transport: str = "streamable_http"
) -> dict[str, Any]:
    return {
        "extensions": {
            "workspace": {"enabled": False},
            "tracker": {"type": transport, "uri": world.mcp_url, "auth": auth},
        }
    }


def run_auth(root: Path, world: World, auth: dict[str, Any], steps: list[Any], **kw: Any) -> Done:
    scenario = Scenario(
        task=task_for(world, auth, kw.pop("transport", "streamable_http")),
        steps=steps,
        args=["run", "t.yaml", "--model", "openai:gpt-4.1", "--out", "OUT", "--output", "json"],
        **kw,
    )
    return run_one(scenario, root)


def tool_calls(done: Done) -> list[tuple[str, bool, str]]:
    return [(c["tool"], c["is_error"], c["result"]) for c in done.events("tool_call")]


def assert_nothing_leaked(done: Done, values: list[str]) -> None:
    """No value, nor its JSON-escaped spelling, in any file under the run folder's OUT, the
    console, or the HTML export of the run."""
    page = done.root / "report.html"
    exported = subprocess.run(
        [sys.executable, "-m", "runner", "log", "export", "--format", "html", "OUT", "-o", page],
        cwd=done.root,
        env=clean_env(done.root),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert exported.returncode == 0, exported.stderr
    texts = {"stdout": done.stdout, "stderr": done.stderr, "export": exported.stdout}
    texts["report.html"] = page.read_text(encoding="utf-8")
    for path in done.out.rglob("*"):
        if path.is_file():
            texts[str(path.relative_to(done.root))] = path.read_text(
                encoding="utf-8", errors="replace"
            )
    forms = {form for value in values for form in (value, json.dumps(value)[1:-1])}
    assert len(values) > 0
    leaks = [(name, form[:12]) for name, text in texts.items() for form in forms if form in text]
    assert leaks == []


def key_lines(pem: str) -> list[str]:
    return [line for line in pem.splitlines() if line and not line.startswith("-----")]


def minted_token(world: World) -> str:
    """A token the test gets from the authorization server itself, as a CI step would."""
    import httpx2

    answer = httpx2.post(
        f"{world.as_url}/token",
        data={"grant_type": "client_credentials", "scope": "tools:read", "resource": world.mcp_url},
        auth=("cc-secret", CLIENT_SECRET),
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])
