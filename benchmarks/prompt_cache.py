"""Input tokens billed per turn at turn 20 of an Anthropic session, with and without the rolling
prompt cache (DESIGN section 16, issue 18).

The runner runs a 20-turn task (each turn reads a 2 KB file with the built-in workspace) against
the fake model server modelling Anthropic's cache from the requests' `cache_control` marks
(`tests.fakes.prompt_cache`): once with `anthropic_prompt_cache: rolling` (the default), once with
`system` (only the tools and system prompt marked, the runner's behaviour before). A turn's
billed input is counted at input-price weight: uncached tokens x1, cache writes x1.25, cache
reads x0.1 (Anthropic's prices for every current model); the raw counts are in the note.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from benchmarks.figures import Bench, Row
from tests.fakes.model_server import FINISH, READ_NOTES, FakeModelServer, Step

__all__ = ["TURNS", "prompt_cache"]

TURNS = 20
MODEL = "anthropic:claude-sonnet-4-5"
NOTES = "".join(f"{n:04d} a line of notes the agent reads, about forty bytes\n" for n in range(40))


def _weighted(usage: dict[str, Any]) -> float:
    return (
        usage["input_tokens"]
        + 1.25 * usage["cache_write_tokens"]
        + 0.1 * usage["cache_read_tokens"]
    )


def _session(bench: Bench, mode: str) -> dict[str, Any]:
    """The usage of turn TURNS of a session run with `anthropic_prompt_cache: mode`."""
    folder = bench.scratch / f"cache-{mode}"
    (folder / "ws").mkdir(parents=True, exist_ok=True)
    (folder / "ws" / "notes.txt").write_text(NOTES, encoding="utf-8")
    task = folder / "t.yaml"
    task.write_text(
        f"name: cache-{mode}\nworkdir: ws\nprompt: Read notes.txt until you know it.\n",
        encoding="utf-8",
    )
    steps = [Step(text=READ_NOTES) for _ in range(TURNS - 1)] + [Step(text=FINISH)]
    with FakeModelServer(steps, prompt_cache=True) as server:
        env = {
            **bench.env(),
            "ANTHROPIC_BASE_URL": server.anthropic_base_url,
            "AGENT_RUNNER_ANTHROPIC_PROMPT_CACHE": mode,
        }
        argv = [sys.executable, "-m", "runner", "run", str(task), "--model", MODEL]
        subprocess.run(
            [*argv, "--out", str(folder / "out"), "-q"],
            cwd=folder,
            env=env,
            check=True,
            capture_output=True,
            timeout=300,
        )
    (log,) = (folder / "out" / "sessions").glob("*.jsonl")
    calls = [
        event
        for event in map(json.loads, log.read_text(encoding="utf-8").splitlines())
        if event.get("type") == "model_call"
    ]
    usage: dict[str, Any] = calls[TURNS - 1]["usage"]
    return usage


def prompt_cache(bench: Bench) -> list[Row]:
    """One row: billed input tokens at turn 20, rolling cache against system-only marks."""
    rolling, system = _session(bench, "rolling"), _session(bench, "system")
    bench.raw["prompt_cache"] = {"rolling": rolling, "system": system}

    def counts(usage: dict[str, Any]) -> str:
        return (
            f"{usage['input_tokens']} uncached, {usage['cache_write_tokens']} written, "
            f"{usage['cache_read_tokens']} read"
        )

    note = (
        f"floor: only tools and system marked; turn {TURNS} rolling: {counts(rolling)}; "
        f"system only: {counts(system)}; weights 1 / 1.25 / 0.1"
    )
    figure = f"input tokens billed at turn {TURNS}, anthropic, rolling cache"
    return [Row(figure, _weighted(rolling), _weighted(system), "tok", "", None, note)]
