"""The workspace entry, server environments and result rendering."""

from __future__ import annotations

import sys
from pathlib import Path

import mcp_types as types
import pytest

from runner.mcp.extension import ToolPolicy
from runner.mcp.hub import policy_allows, server_env, workspace_extension
from runner.mcp.results import render_result
from runner.toolcall.spec import ToolSpec


def test_workspace_extension_runs_this_interpreter_confined_to_the_root(tmp_path: Path) -> None:
    ext = workspace_extension(tmp_path)
    assert ext.cmd == sys.executable and ext.required and ext.type == "stdio"
    assert ext.args == ["-m", "runner", "mcp", "workspace", "--root", str(tmp_path)]


def test_server_env_keeps_harmless_variables_and_drops_secrets() -> None:
    base = {
        "PATH": "/bin",
        "HOME": "/h",
        "LC_ALL": "C",
        "OPENAI_API_KEY": "k",
        "AWS_SECRET_ACCESS_KEY": "s",
        "CUSTOM": "x",
    }
    assert server_env(base, {"TOKEN": "t"}) == {
        "PATH": "/bin",
        "HOME": "/h",
        "LC_ALL": "C",
        "TOKEN": "t",
    }


@pytest.mark.parametrize(
    ("name", "allowed"),
    [("echo", True), ("execute_command", False), ("workspace__execute_command", False)],
)
def test_policy_matches_exposed_remote_and_prefixed_names(name: str, allowed: bool) -> None:
    remote = name.rsplit("__", maxsplit=1)[-1]
    spec = ToolSpec(name, "", server="workspace", remote_name=remote if "__" in name else "")
    assert policy_allows(ToolPolicy(deny=["execute_command"]), spec) is allowed


def test_render_result_keeps_text_and_summarises_other_blocks() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(text="hello"),
            types.ImageContent(data="aGVsbG8=", mime_type="image/png"),
            types.EmbeddedResource(
                resource=types.TextResourceContents(uri="file:///a.txt", text="inside")
            ),
            types.ResourceLink(uri="file:///b.txt", name="b"),
        ]
    )
    assert render_result(result).text.splitlines() == [
        "hello",
        "[image: image/png, 5 bytes]",
        "[resource: file:///a.txt]",
        "inside",
        "[resource link: file:///b.txt]",
    ]


def test_render_result_shows_structured_content_as_json_without_text() -> None:
    result = types.CallToolResult(content=[], structured_content={"sum": 5})
    assert render_result(result).text == '{\n  "sum": 5\n}'


def test_render_result_of_an_empty_error_says_so() -> None:
    rendered = render_result(types.CallToolResult(content=[], is_error=True))
    assert rendered.is_error and "no message" in rendered.text
