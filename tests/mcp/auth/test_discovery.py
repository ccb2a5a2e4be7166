"""Discovery (runner/mcp/auth/discovery.py) against scripted HTTP answers, through the injectable
HTTP client: which documents are asked for in which order, and which failures are the operator's
configuration (exit 2) and which an outage (exit 4)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from runner.mcp.auth import AuthError
from runner.mcp.auth.discovery import discover

MCP = "https://mcp.example.com/mcp"
AS = "https://auth.example.com"
PRM_HINT = "https://mcp.example.com/prm-from-header"
CC = "client_credentials"


def _asm(**more: Any) -> dict[str, Any]:
    return {
        "issuer": AS,
        "authorization_endpoint": f"{AS}/authorize",
        "token_endpoint": f"{AS}/token",
        "grant_types_supported": ["client_credentials"],
        **more,
    }


def _prm(**more: Any) -> dict[str, Any]:
    return {"resource": MCP, "authorization_servers": [AS], "scopes_supported": ["a:read"], **more}


Routes = dict[str, Callable[[], httpx2.Response] | dict[str, Any] | int]


def _discover(
    routes: Routes, *, issuer: str | None = None, grant: str = CC
) -> tuple[Any, list[str]]:
    asked: list[str] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        url = str(request.url)
        asked.append(url)
        answer = routes.get(url, 404)
        if callable(answer):
            return answer()
        if isinstance(answer, int):
            return httpx2.Response(answer)
        return httpx2.Response(200, json=answer)

    async def go() -> Any:
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(handle)) as client:
            return await discover(client, MCP, issuer=issuer, grant=grant)

    try:
        return asyncio.run(go()), asked
    except AuthError as error:
        return error, asked


def _401_with_hint() -> httpx2.Response:
    return httpx2.Response(
        401, headers={"WWW-Authenticate": f'Bearer resource_metadata="{PRM_HINT}"'}
    )


def test_the_resource_metadata_named_by_the_401_comes_first() -> None:
    found, asked = _discover(
        {
            MCP: _401_with_hint,
            PRM_HINT: _prm(),
            f"{AS}/.well-known/oauth-authorization-server": _asm(),
        }
    )
    assert asked == [MCP, PRM_HINT, f"{AS}/.well-known/oauth-authorization-server"]
    assert (found.issuer, found.resource, found.scopes_supported) == (AS, MCP, ["a:read"])


def test_the_well_known_paths_are_tried_when_the_401_names_none() -> None:
    found, asked = _discover(
        {
            MCP: 401,
            "https://mcp.example.com/.well-known/oauth-protected-resource": _prm(),
            f"{AS}/.well-known/openid-configuration": _asm(),
        }
    )
    assert asked == [
        MCP,
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
        "https://mcp.example.com/.well-known/oauth-protected-resource",
        f"{AS}/.well-known/oauth-authorization-server",
        f"{AS}/.well-known/openid-configuration",
    ]
    assert found.issuer == AS


def test_without_resource_metadata_the_servers_origin_is_its_authorization_server() -> None:
    origin = "https://mcp.example.com"
    found, _ = _discover({f"{origin}/.well-known/oauth-authorization-server": _asm(issuer=origin)})
    assert found.issuer == origin and found.resource == MCP


@pytest.mark.parametrize(
    ("routes", "issuer", "kind", "said"),
    [
        ({MCP: _401_with_hint, PRM_HINT: 503}, None, "unreachable", "HTTP 503"),
        (
            {
                MCP: _401_with_hint,
                PRM_HINT: _prm(),
                f"{AS}/.well-known/oauth-authorization-server": 500,
            },
            None,
            "unreachable",
            "HTTP 500",
        ),
        (
            {
                MCP: _401_with_hint,
                PRM_HINT: _prm(),
                f"{AS}/.well-known/oauth-authorization-server": _asm(issuer="https://evil.example"),
            },
            None,
            "config",
            "names issuer https://evil.example",
        ),
        (
            {MCP: _401_with_hint, PRM_HINT: _prm(resource="https://other.example/mcp")},
            None,
            "config",
            "does not cover",
        ),
        ({MCP: _401_with_hint, PRM_HINT: _prm()}, "https://pinned.example", "config", "not among"),
        (
            {
                MCP: _401_with_hint,
                PRM_HINT: _prm(),
                f"{AS}/.well-known/oauth-authorization-server": _asm(
                    grant_types_supported=[
                        "authorization_code",
                        "urn:ietf:params:oauth:grant-type:device_code",
                    ]
                ),
            },
            None,
            "config",
            "needs a person in a browser",
        ),
        ({MCP: _401_with_hint, PRM_HINT: {"resource": MCP}}, None, "config", "not valid"),
        ({MCP: 401}, None, "config", "no authorization server metadata"),
    ],
)
def test_each_failure_is_a_configuration_error_or_an_outage(
    routes: Routes, issuer: str | None, kind: str, said: str
) -> None:
    error, _ = _discover(routes, issuer=issuer)
    assert isinstance(error, AuthError), error
    assert (error.kind, said in str(error)) == (kind, True), str(error)


def test_metadata_that_lists_no_grants_lets_the_token_request_decide() -> None:
    asm = _asm()
    del asm["grant_types_supported"]
    found, _ = _discover(
        {MCP: _401_with_hint, PRM_HINT: _prm(), f"{AS}/.well-known/oauth-authorization-server": asm}
    )
    assert found.issuer == AS


def test_a_server_that_cannot_be_reached_is_an_outage() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    async def go() -> None:
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(refuse)) as client:
            await discover(client, MCP, issuer=None, grant=CC)

    with pytest.raises(AuthError) as caught:
        asyncio.run(go())
    assert caught.value.kind == "unreachable"
    assert json.dumps(str(caught.value))


def test_a_metadata_document_over_a_mebibyte_is_refused_without_reading_it_all() -> None:
    served: list[int] = []

    def endless() -> httpx2.Response:
        async def chunks() -> Any:
            for _ in range(64):
                served.append(1)
                yield b" " * 65536

        return httpx2.Response(200, content=chunks())

    error, _ = _discover({MCP: _401_with_hint, PRM_HINT: endless})
    assert isinstance(error, AuthError)
    assert "more than 1048576 bytes" in str(error)
    assert len(served) < 64
