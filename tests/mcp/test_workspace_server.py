"""The workspace server over real stdio, through the hub."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from runner.mcp.hub import McpHub
from tests.mcp.conftest import workspace_server

pytestmark = pytest.mark.anyio


async def test_workspace_tools_work_over_stdio(
    make_hub: Callable[..., McpHub], tmp_path: Path
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("secret", encoding="utf-8")
    async with make_hub({"workspace": workspace_server(root)}) as hub:
        names = {spec.name for spec in hub.tools}
        wrote = await hub.call("write_to_file", {"path": "src/a.py", "content": "x = 1\n"})
        read = await hub.call("read_file", {"path": "src/a.py"})
        edit = await hub.call(
            "replace_in_file",
            {"path": "src/a.py", "diff": "<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE"},
        )
        listed = await hub.call("list_files", {"recursive": True})
        found = await hub.call("search_files", {"path": ".", "regex": "x ="})
        ran = await hub.call("execute_command", {"command": "cat src/a.py"})
        escape = await hub.call("read_file", {"path": "../secret.txt"})
        blocked = await hub.call("execute_command", {"command": "rm -rf /"})
        after = await hub.call("read_file", {"path": "src/a.py"})
    assert names == {
        "read_file",
        "write_to_file",
        "replace_in_file",
        "list_files",
        "search_files",
        "execute_command",
    }
    assert not wrote.is_error and read.text == "1 | x = 1"
    assert not edit.is_error and listed.text.splitlines() == ["src/", "src/a.py"]
    assert "src/a.py:1:x = 2" in found.text
    assert ran.text.splitlines() == ["exit code 0", "x = 2"]
    assert escape.is_error and "outside the workspace root" in escape.text
    assert blocked.is_error and "refused" in blocked.text
    assert after.text == "1 | x = 2"


async def test_workspace_tool_descriptions_document_their_parameters(
    make_hub: Callable[..., McpHub], tmp_path: Path
) -> None:
    async with make_hub({"workspace": workspace_server(tmp_path)}) as hub:
        specs = {spec.name: spec for spec in hub.tools}
    # The block layout is told where both tool modes show it: the `diff` parameter (DESIGN 28).
    replace = specs["replace_in_file"]
    told = replace.description + replace.input_schema["properties"]["diff"]["description"]
    assert "<<<<<<< SEARCH" in told and "=======" in told and ">>>>>>> REPLACE" in told
    for spec in specs.values():
        assert len(spec.description) > 60
        for name, prop in spec.input_schema["properties"].items():
            assert prop.get("description"), f"{spec.name}.{name} has no description"
