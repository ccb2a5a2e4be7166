"""The built-in workspace served in-process: the same tools and results as the stdio server."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from runner.mcp.hub import HubEvent, McpHub, workspace_extension
from tests.mcp.conftest import workspace_server

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]

CALLS: list[tuple[str, dict[str, object]]] = [
    ("write_to_file", {"path": "src/a.py", "content": "x = 1\n"}),
    ("read_file", {"path": "src/a.py"}),
    ("read_file", {"path": "src/a.py", "start_line": "1", "end_line": 1}),
    (
        "replace_in_file",
        {"path": "src/a.py", "diff": "<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE"},
    ),
    ("replace_in_file", {"path": "src/a.py", "search": "nowhere", "replace": "y"}),
    ("replace_in_file", {"path": "src/a.py"}),
    ("list_files", {"recursive": True}),
    ("search_files", {"path": ".", "regex": "x ="}),
    ("search_files", {"path": ".", "regex": "("}),
    ("execute_command", {"command": "cat src/a.py; echo oops >&2; exit 3"}),
    ("execute_command", {"command": "rm -rf /"}),
    ("read_file", {"path": "../secret.txt"}),
    ("read_file", {"path": "missing.txt"}),
    ("read_file", {}),
    ("read_file", {"path": "src/a.py", "start_line": "first"}),
]
"""Successes, refusals and invalid arguments, in an order where each call sees the last one's
effect; every result must read the same in-process as over stdio."""


async def test_the_builtin_workspace_lists_and_answers_as_the_stdio_server(
    make_hub: Callable[..., McpHub], tmp_path: Path, events: list[HubEvent]
) -> None:
    (tmp_path / "secret.txt").write_text("secret", encoding="utf-8")
    results: dict[str, list[tuple[str, bool]]] = {}
    listings = {}
    for how, extension in {
        "local": workspace_extension(Path("local")),
        "stdio": workspace_server(tmp_path / "stdio"),
    }.items():
        (tmp_path / how).mkdir()
        async with make_hub({"workspace": extension}) as hub:
            listings[how] = hub.tools
            results[how] = []
            for name, arguments in CALLS:
                result = await hub.call(name, dict(arguments))
                results[how].append(
                    (result.text.replace(str(tmp_path / how), "ROOT"), result.is_error)
                )
    assert listings["local"] == listings["stdio"]
    read_only = {spec.name for spec in listings["stdio"] if spec.read_only}
    assert read_only == {"read_file", "list_files", "search_files"}
    assert results["local"] == results["stdio"]
    assert [error for _, error in results["local"]] == [
        False, False, False, False, True, True, False, False, True, False, True, True, True,
        True, True,
    ]  # fmt: skip
    # No process, so no stderr log is announced for the in-process workspace.
    assert [event.server for event in events if event.kind == "stderr"] == ["workspace"]


async def test_commands_get_a_minimal_environment_plus_the_workspace_envs(
    make_hub: Callable[..., McpHub], tmp_path: Path
) -> None:
    extension = workspace_extension(tmp_path).model_copy(update={"envs": {"GREETING": "hi"}})
    base_env = {"PATH": os.environ["PATH"], "OPENAI_API_KEY": "sk-runner-own", "HOME": "/h"}
    async with make_hub({"workspace": extension}, base_env=base_env) as hub:
        result = await hub.call("execute_command", {"command": "env"})
    assert not result.is_error
    assert "GREETING=hi" in result.text and "HOME=/h" in result.text
    assert "sk-runner-own" not in result.text and "OPENAI_API_KEY" not in result.text


async def test_a_call_past_its_timeout_is_abandoned_and_its_command_killed(
    make_hub: Callable[..., McpHub], tmp_path: Path
) -> None:
    extension = workspace_extension(tmp_path).model_copy(update={"timeout": 1.0})
    async with make_hub({"workspace": extension}) as hub:
        result = await hub.call(
            "execute_command", {"command": "echo $$ > pid; sleep 60", "timeout_s": 100}
        )
    assert result.is_error and "timed out after 1 s" in result.text
    assert _group_ends(int((tmp_path / "pid").read_text(encoding="utf-8")))


async def test_command_outputs_are_removed_when_the_hub_closes(
    make_hub: Callable[..., McpHub], tmp_path: Path
) -> None:
    async with make_hub({"workspace": workspace_extension(tmp_path)}) as hub:
        result = await hub.call("execute_command", {"command": "seq 1 20000"})
        saved = Path(result.text.split("the full output (")[1].split(" is in ")[1].split(",")[0])
        assert saved.is_file()
        again = await hub.call("read_file", {"path": str(saved), "start_line": 2, "end_line": 2})
        assert again.text.startswith("2 | 2\n")
    assert not saved.parent.exists()


async def test_a_missing_workspace_root_fails_the_start(
    make_hub: Callable[..., McpHub], tmp_path: Path
) -> None:
    from runner.errors import McpServerError

    with pytest.raises(McpServerError, match="is not a folder"):
        async with make_hub({"workspace": workspace_extension(tmp_path / "gone")}):
            pass


def _group_ends(pgid: int, deadline_s: float = 10.0) -> bool:
    """Whether the process group is gone within the deadline (a killed member that init has not
    reaped yet still counts for a moment)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_task_with_only_the_workspace_never_imports_the_mcp_sdk(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys, anyio
        from pathlib import Path
        from runner.mcp.hub import McpHub, workspace_extension

        async def main():
            root = Path({str(tmp_path)!r})
            async with McpHub({{"workspace": workspace_extension(root)}}, workdir=root,
                              artifacts_dir=root / "a", base_env={{}}) as hub:
                result = await hub.call("list_files", {{}})
            print(result.text)
            print(sorted(m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "mcp_"))))

        anyio.run(main)
        """
    )
    (tmp_path / "here.txt").write_text("", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines() == ["here.txt", "[]"]
