"""Extension merging, the workspace entry, server environments and result rendering."""

from __future__ import annotations

import sys
from pathlib import Path

import mcp_types as types
import pytest

from runner.errors import ConfigError
from runner.extension import WORKSPACE, ExtensionConfig, ToolPolicy
from runner.hub import merge_extensions, policy_allows, server_env, workspace_extension
from runner.hub_render import render_result
from runner.toolspec import ToolSpec


def test_workspace_extension_runs_this_interpreter_confined_to_the_root(tmp_path: Path) -> None:
    ext = workspace_extension(tmp_path)
    assert ext.cmd == sys.executable and ext.required and ext.type == "stdio"
    assert ext.args == ["-m", "runner", "mcp", "workspace", "--root", str(tmp_path)]


def test_merge_puts_the_workspace_first_then_config_then_task(tmp_path: Path) -> None:
    config = {"time": {"cmd": "uvx", "args": ["mcp-server-time"]}}
    task = {"git": ExtensionConfig(cmd="git-mcp")}
    merged = merge_extensions(config, task, tmp_path)
    assert list(merged) == [WORKSPACE, "time", "git"]
    assert merged["time"].name == "time" and merged["time"].args == ["mcp-server-time"]


def test_workspace_enabled_false_turns_it_off(tmp_path: Path) -> None:
    task = {WORKSPACE: ExtensionConfig(enabled=False)}
    merged = merge_extensions({}, task, tmp_path)
    assert merged[WORKSPACE].enabled is False
    assert merged[WORKSPACE].cmd == sys.executable


def test_a_partial_task_entry_overrides_only_its_fields(tmp_path: Path) -> None:
    config = {"gl": {"cmd": "npx", "args": ["gl"], "envs": {"A": "1", "B": "2"}, "timeout": 5}}
    # Only the fields written in the task file (model_fields_set) override the config's.
    task = {"gl": ExtensionConfig.model_validate({"enabled": True, "cmd": "npx", "timeout": 9})}
    merged = merge_extensions(config, task, tmp_path)["gl"]
    assert (merged.cmd, merged.args, merged.timeout) == ("npx", ["gl"], 9)
    assert merged.envs == {"A": "1", "B": "2"}


def test_envs_and_headers_merge_key_by_key(tmp_path: Path) -> None:
    config = {"h": {"type": "sse", "uri": "http://x", "headers": {"A": "1", "B": "2"}}}
    task = {
        "h": ExtensionConfig.model_validate(
            {"type": "sse", "uri": "http://x", "headers": {"B": "3"}}
        )
    }
    assert merge_extensions(config, task, tmp_path)["h"].headers == {"A": "1", "B": "3"}


def test_an_invalid_merged_entry_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"extensions\.bad: .*needs `cmd`"):
        merge_extensions({"bad": {"type": "stdio"}}, {}, tmp_path)


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
