"""What requests carry (DESIGN section 28, issue 45): the default task's first request, and the
input tokens of a 20-turn session with server-everything and the workspace attached.

Token counts, not times: the fake model server records every request, and each is estimated with
the runner's estimator (about four characters a token) over what it carries: the system prompt,
the messages and the tool definitions, as JSON. The figure is the same on every run and machine.

Side by side in one run: `tool_search: auto` (the default) against `never` (every tool described in
full) and `always` (every MCP tool but the workspace's deferred behind `find_tools`); with
`--baseline DIR` (a checkout's `runner` and `prompts`, e.g. `git archive main runner prompts`),
the floor of the first-request rows is that runner's first request instead.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.figures import REPO, Bench, Row
from runner.llm.providers.streaming import estimate_tokens
from tests.fakes.many_tools_server import SCRIPT as FORGE
from tests.fakes.model_server import FINISH, FakeModelServer, Step

__all__ = ["TURNS", "lean_prompt"]

TURNS = 20
MODEL = "openai:gpt-4.1"
EVERYTHING = REPO / "tests/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
NOTES = "".join(f"{n:04d} a line of notes the agent reads, about forty bytes\n" for n in range(40))


def _tokens(body: dict[str, Any]) -> int:
    carried = [*body["messages"], *(body.get("tools") or [])]
    return estimate_tokens(json.dumps(carried, ensure_ascii=False))


def _call(tool: str, **params: str) -> Step:
    inner = "".join(f"<{k}>{v}</{k}>\n" for k, v in params.items())
    return Step(text=f"<{tool}>\n{inner}</{tool}>")


def _run(
    bench: Bench,
    name: str,
    steps: list[Step],
    *,
    extensions: str = "",
    task_lines: str = "",
    root: Path = REPO,
    mode: str = "xml",
) -> list[int]:
    """The estimated tokens of every request of one scripted session."""
    folder = bench.scratch / f"lean-{name}"
    (folder / "ws").mkdir(parents=True, exist_ok=True)
    (folder / "ws" / "notes.txt").write_text(NOTES, encoding="utf-8")
    task = folder / "t.yaml"
    task.write_text(
        f"name: lean-{name}\nworkdir: ws\nprompt: Read notes.txt and add numbers.\n"
        f"tool_mode: {mode}\nlimits: {{max_turns: {TURNS + 5}}}\n{task_lines}{extensions}",
        encoding="utf-8",
    )
    with FakeModelServer(steps, default=Step(text=FINISH)) as server:
        env = {**bench.env(root), "OPENAI_BASE_URL": server.openai_base_url}
        argv = [sys.executable, "-m", "runner", "run", str(task), "--model", MODEL]
        subprocess.run(
            [*argv, "--out", str(folder / "out"), "-q"],
            cwd=folder,
            env=env,
            check=False,
            capture_output=True,
            timeout=300,
        )
        return [_tokens(request.body) for request in server.requests]


def _session(step: int, turns: int) -> Step:
    """Turn `step` of the script: notes and sums in turn, then the completion."""
    if step == turns - 1:
        return Step(text=FINISH)
    if step % 2:
        return _call("get-sum", a=str(step), b="2")
    return _call("read_file", path="notes.txt")


def lean_prompt(bench: Bench) -> list[Row]:
    """The first request of the default task (xml and native, and with 120 MCP tools), and the
    input tokens of 20 turns with server-everything."""
    rows: list[Row] = []
    done = [Step(text=FINISH)]
    for mode in ("xml", "native"):
        steps = done if mode == "xml" else [_native_finish()]
        first = _run(bench, f"default-{mode}", steps, mode=mode)[0]
        floor, note = None, "the default task: the workspace's tools, no MCP server"
        if bench.baseline is not None:
            floor = float(_run(bench, f"before-{mode}", steps, root=bench.baseline, mode=mode)[0])
            note += "; floor: --baseline"
        rows.append(
            Row(
                f"first request, default task, {mode}",
                first,
                floor,
                "tok",
                "<= 1,500",
                first <= 1500,
                note,
            )
        )
    forge = f"extensions:\n  forge: {{cmd: {sys.executable}, args: [{FORGE}]}}\n"
    auto = _run(bench, "forge-auto", done, extensions=forge)[0]
    never = _run(bench, "forge-never", done, extensions=forge, task_lines="tool_search: never\n")[0]
    rows.append(
        Row(
            "first request, 120 MCP tools, tool_search auto",
            auto,
            never,
            "tok",
            "< 0.25x",
            auto * 4 < never,
            "floor: tool_search never (every tool in full)",
        )
    )
    if bench.baseline is not None:
        before = _run(bench, "forge-before", done, extensions=forge, root=bench.baseline)[0]
        rows.append(
            Row(
                "first request, 120 MCP tools, auto against --baseline",
                auto,
                before,
                "tok",
                "< 0.25x",
                auto * 4 < before,
                "floor: the --baseline runner (every tool in full, its prompt)",
            )
        )
    everything = f"extensions:\n  everything: {{cmd: node, args: [{EVERYTHING}, stdio]}}\n"
    turns = 4 if bench.quick else TURNS
    script = [_call("find_tools", query="get-sum"), *(_session(i, turns) for i in range(1, turns))]
    totals = {}
    # Folder names of one length: the working directory is in every request.
    for index, search in enumerate(("never", "auto", "always")):
        sent = _run(
            bench,
            f"everything-{index}",
            script,
            extensions=everything,
            task_lines=f"tool_search: {search}\n",
        )
        totals[search] = sum(sent)
        bench.raw[f"lean_prompt_everything_{search}"] = sent
    if bench.baseline is not None:
        sent = _run(bench, "everything-9", script, extensions=everything, root=bench.baseline)
        totals["before"] = sum(sent)
        bench.raw["lean_prompt_everything_before"] = sent
        rows.append(
            Row(
                f"input tokens of {turns} turns, server-everything + workspace, auto (baseline)",
                totals["auto"],
                totals["before"],
                "tok",
                "",
                None,
                "floor: the --baseline runner",
            )
        )
    for search in ("auto", "always"):
        rows.append(
            Row(
                f"input tokens of {turns} turns, server-everything + workspace, {search}",
                totals[search],
                totals["never"],
                "tok",
                "",
                None,
                "floor: tool_search never; server-everything's 13 tools are under auto's limits",
            )
        )
    return rows


def _native_finish() -> Step:
    from tests.fakes.native_wire import call

    finish = call("attempt_completion", {"result": "done", "status": "success"})
    return Step(text="", tool_calls=(finish,))
