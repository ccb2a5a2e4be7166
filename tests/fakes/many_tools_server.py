"""A stdio MCP server with 120 generated tools, shaped like a forge's API server (GitHub's has
about a hundred): every verb of every resource, each with a two-sentence description and a few
parameters. For the deferred catalogue (DESIGN 28).

    python tests/fakes/many_tools_server.py

A call answers `VERB RESOURCE: ARGUMENTS` as JSON, so a test can see that it ran and with what.
"""

import json
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import Field

__all__ = ["NAMES", "SCRIPT", "build_server"]

SCRIPT = Path(__file__).resolve()
RESOURCES = (
    "issue",
    "pull_request",
    "branch",
    "commit",
    "release",
    "workflow_run",
    "label",
    "milestone",
    "comment",
    "review",
    "repository",
    "team",
    "member",
    "project",
    "secret",
    "webhook",
    "deployment",
    "environment",
    "artifact",
    "package",
)
VERBS = ("list", "get", "create", "update", "delete", "search")
NAMES = [f"{verb}_{resource}" for resource in RESOURCES for verb in VERBS]
"""The 120 tool names, in the order the server lists them."""

Owner = Annotated[str, Field(description="The account that owns the repository.")]
Repo = Annotated[str, Field(description="The repository's name, without its owner.")]


def _tool(verb: str, resource: str) -> tuple[Any, str]:
    """The function of one tool and its description."""
    label = resource.replace("_", " ")

    def answer(**arguments: Any) -> str:
        return json.dumps({"tool": f"{verb}_{resource}", "arguments": arguments}, sort_keys=True)

    if verb == "list":

        def fn(
            owner: Owner,
            repo: Repo,
            page: Annotated[int, Field(description="Page number, from 1.")] = 1,
            per_page: Annotated[int, Field(description="Results per page, at most 100.")] = 30,
        ) -> str:
            return answer(owner=owner, repo=repo, page=page, per_page=per_page)

        about = f"List the {label}s of a repository, newest first. Results come in pages."
    elif verb == "search":

        def fn(  # type: ignore[misc]
            owner: Owner,
            repo: Repo,
            query: Annotated[str, Field(description=f"Search terms matched against {label}s.")],
        ) -> str:
            return answer(owner=owner, repo=repo, query=query)

        about = f"Search the {label}s of a repository by text. Returns the best matches first."
    elif verb == "create":

        def fn(  # type: ignore[misc]
            owner: Owner,
            repo: Repo,
            title: Annotated[str, Field(description=f"The new {label}'s title or name.")],
            body: Annotated[str | None, Field(description="Its text, in Markdown.")] = None,
        ) -> str:
            return answer(owner=owner, repo=repo, title=title, body=body)

        about = f"Create a {label} in a repository. Returns the new {label} with its number."
    else:

        def fn(  # type: ignore[misc]
            owner: Owner,
            repo: Repo,
            number: Annotated[int, Field(description=f"The {label}'s number.")],
        ) -> str:
            return answer(owner=owner, repo=repo, number=number)

        about = f"{verb.capitalize()} one {label} of a repository by its number. " + (
            f"Returns the {label} with all its fields."
            if verb == "get"
            else f"Returns the {label} as it is afterwards."
        )
    return fn, about


def build_server() -> MCPServer:
    """The server with its 120 tools."""
    app: MCPServer = MCPServer("forge")
    for resource in RESOURCES:
        for verb in VERBS:
            fn, about = _tool(verb, resource)
            app.add_tool(fn, name=f"{verb}_{resource}", description=about)
    return app


if __name__ == "__main__":
    build_server().run()
