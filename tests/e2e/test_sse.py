"""A task whose MCP server speaks the older HTTP+SSE transport (`type: sse`), through the CLI:
server-everything in its `sse` mode, a real node process on a free port."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import NO_WORKSPACE, Scenario, call, complete, reply, run_one
from tests.mcp.servers import everything_http_server


def test_a_task_calls_tools_of_an_sse_server(tmp_path: Path) -> None:
    with everything_http_server("sse", "/sse") as (url, _):
        scenario = Scenario(
            task={
                **NO_WORKSPACE,
                "extensions": {"everything": {"type": "sse", "uri": url}},
            },
            steps=[
                reply(call("echo", message="hello over sse")),
                reply(call("get-sum", a="20", b="22")),
                complete("said hello"),
            ],
        )
        done = run_one(scenario, tmp_path)
    assert done.code == 0, done.explain()
    calls = done.events("tool_call")
    assert [(c["tool"], c["server"], c["is_error"]) for c in calls] == [
        ("echo", "everything", False),
        ("get-sum", "everything", False),
    ]
    assert "hello over sse" in calls[0]["result"]
    assert "42" in calls[1]["result"]
    # The tools the server listed over SSE are in the session's catalogue.
    assert {"echo", "get-sum"} <= {t["name"] for t in done.log().header["tools"]}
