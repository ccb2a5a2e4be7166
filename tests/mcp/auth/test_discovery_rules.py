"""The rules of discovery (runner/mcp/auth/discovery.py), each for every case it holds for: the
real authlib authorization server (in a thread of this process) found at the server's origin or
at a pinned issuer, and scripted answers (through the injectable HTTP client) for what authlib
never serves: protected resource metadata, several authorization servers, every status class."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from runner.mcp.auth import AuthError
from runner.mcp.auth.discovery import MAX_DOCUMENT, bounded_send, discover
from tests.mcp.auth.inprocess import Sent, authorization_server, recording_client
from tests.mcp.auth.test_discovery import (
    AS,
    CC,
    MCP,
    PRM_HINT,
    _401_with_hint,
    _asm,
    _discover,
    _prm,
)
from tests.mcp.auth.world import World

AS2 = "https://auth2.example.com"
ASM_AT = f"{AS}/.well-known/oauth-authorization-server"
OIDC_AT = f"{AS}/.well-known/openid-configuration"
PRM_PATH = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
PRM_ROOT = "https://mcp.example.com/.well-known/oauth-protected-resource"
ORIGIN_ASM = "https://mcp.example.com/.well-known/oauth-authorization-server"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with authorization_server(tmp_path_factory.mktemp("as")) as world:
        yield world


def _real(world: World, issuer: str | None, sent: list[Sent]) -> Any:
    async def go() -> Any:
        async with recording_client(sent) as client:
            return await discover(client, world.mcp_url, issuer=issuer, grant=CC)

    try:
        return asyncio.run(go())
    except AuthError as error:
        return error


def test_without_resource_metadata_the_real_server_at_the_origin_is_found(world: World) -> None:
    sent: list[Sent] = []
    found = _real(world, None, sent)
    assert found.issuer == world.as_url and found.resource == world.mcp_url
    assert found.scopes_supported is None
    assert str(found.metadata.token_endpoint) == f"{world.as_url}/token"
    assert sent[0].url == world.mcp_url
    assert sent[0].headers["accept"] == "text/event-stream, application/json"
    assert all(s.headers["accept"] == "application/json" for s in sent[1:])
    assert sent[-1].url == f"{world.as_url}/.well-known/oauth-authorization-server"


def test_a_pinned_issuer_is_asked_directly_and_must_be_the_one_its_metadata_names(
    world: World, tmp_path: Path
) -> None:
    sent: list[Sent] = []
    found = _real(world, f"{world.as_url}/", sent)  # a trailing slash names the same issuer
    assert found.issuer == world.as_url
    liar = "http://127.0.0.1:9/other-issuer"
    with authorization_server(tmp_path / "liar", stated_issuer=liar) as lying:
        error = _real(lying, None, [])
    assert isinstance(error, AuthError) and error.kind == "config"
    assert f"names issuer {liar}, not {lying.as_url} (RFC 8414 section 3.3)" in str(error)


@pytest.mark.parametrize(
    "grant",
    [
        "authorization_code",
        "implicit",
        "password",
        "device_code",
        "urn:ietf:params:oauth:grant-type:device_code",
    ],
)
def test_every_interactive_grant_is_named_as_needing_a_person(grant: str) -> None:
    error, _ = _discover(
        {MCP: _401_with_hint, PRM_HINT: _prm(), ASM_AT: _asm(grant_types_supported=[grant])}
    )
    assert isinstance(error, AuthError) and error.kind == "config"
    assert f"; {grant} needs a person in a browser" in str(error)


def test_a_refusal_names_every_offered_grant_and_the_interactive_ones_sorted() -> None:
    offered = ["refresh_token", "password", "authorization_code"]
    error, _ = _discover(
        {MCP: _401_with_hint, PRM_HINT: _prm(), ASM_AT: _asm(grant_types_supported=offered)}
    )
    assert str(error) == (
        f"its authorization server {AS} offers only refresh_token, password, "
        "authorization_code, not the client_credentials grant this `auth:` needs; "
        "authorization_code, password needs a person in a browser, which a CI run never opens. "
        "Register a machine client (client_credentials or jwt_bearer) or use "
        "`auth: {type: bearer}` with a token obtained elsewhere"
    )


@pytest.mark.parametrize(
    ("offered", "what"), [([], "no grant"), (["refresh_token"], "refresh_token")]
)
def test_a_server_offering_no_interactive_grant_is_refused_without_blaming_a_browser(
    offered: list[str], what: str
) -> None:
    error, _ = _discover(
        {MCP: _401_with_hint, PRM_HINT: _prm(), ASM_AT: _asm(grant_types_supported=offered)}
    )
    assert f"offers only {what}, not the client_credentials grant this `auth:` needs." in str(error)
    assert "browser" not in str(error)


def test_the_grant_asked_for_is_the_one_checked() -> None:
    jwt_bearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    routes = {
        MCP: _401_with_hint,
        PRM_HINT: _prm(),
        ASM_AT: _asm(grant_types_supported=[jwt_bearer]),
    }
    found, _ = _discover(routes, grant=jwt_bearer)
    assert found.issuer == AS
    error, _ = _discover(routes, grant=CC)
    assert isinstance(error, AuthError)


def test_the_first_listed_authorization_server_is_used_unless_one_is_pinned() -> None:
    routes = {
        MCP: _401_with_hint,
        PRM_HINT: _prm(authorization_servers=[AS, AS2]),
        ASM_AT: _asm(),
        f"{AS2}/.well-known/oauth-authorization-server": _asm(
            issuer=AS2, token_endpoint=f"{AS2}/token"
        ),
    }
    found, _ = _discover(routes)
    assert found.issuer == AS
    found, asked = _discover(routes, issuer=AS2)
    assert found.issuer == AS2 and str(found.metadata.token_endpoint) == f"{AS2}/token"
    assert ASM_AT not in asked
    error, _ = _discover(routes, issuer="https://pinned.example")
    assert str(error) == (
        "`issuer: https://pinned.example` is not among the authorization servers its metadata "
        f"lists ({AS}, {AS2}): fix `issuer` or drop it"
    )


def test_the_resource_is_the_one_the_metadata_advertises_when_it_covers_the_server() -> None:
    routes = {
        MCP: _401_with_hint,
        PRM_HINT: _prm(resource="https://mcp.example.com"),
        ASM_AT: _asm(),
    }
    found, _ = _discover(routes)
    assert found.resource == "https://mcp.example.com"
    error, _ = _discover(
        {MCP: _401_with_hint, PRM_HINT: _prm(resource="https://mcp.example.com/x")}
    )
    assert str(error) == (
        "its protected resource metadata names resource https://mcp.example.com/x, which does not "
        f"cover {MCP} (RFC 8707): check `uri`"
    )


@pytest.mark.parametrize("status", [429, 500, 503, 599])
def test_every_5xx_and_429_of_resource_metadata_is_an_outage_if_no_other_answers(
    status: int,
) -> None:
    error, asked = _discover({MCP: 401, PRM_PATH: status, PRM_ROOT: 404})
    assert isinstance(error, AuthError) and error.kind == "unreachable"
    assert str(error) == f"its protected resource metadata: {PRM_PATH} answered HTTP {status}"
    assert asked == [MCP, PRM_PATH, PRM_ROOT]  # the next place is still tried


def test_a_failing_place_of_resource_metadata_does_not_hide_the_next_one() -> None:
    found, _ = _discover({MCP: 401, PRM_PATH: 503, PRM_ROOT: _prm(), ASM_AT: _asm()})
    assert found.issuer == AS and found.scopes_supported == ["a:read"]


def test_a_named_resource_metadata_place_that_has_none_falls_back_to_the_origin() -> None:
    origin = "https://mcp.example.com"
    found, asked = _discover(
        {
            MCP: _401_with_hint,
            PRM_HINT: 404,
            PRM_PATH: 404,
            PRM_ROOT: 404,
            ORIGIN_ASM: _asm(issuer=origin),
        }
    )
    assert found.issuer == origin and found.scopes_supported is None
    assert asked[:2] == [MCP, PRM_HINT]


@pytest.mark.parametrize("status", [201, 204, 301, 401, 403, 404, 428, 499])
def test_any_other_answer_means_no_resource_metadata_there(status: int) -> None:
    origin = "https://mcp.example.com"
    found, asked = _discover(
        {MCP: 401, PRM_PATH: status, PRM_ROOT: status, ORIGIN_ASM: _asm(issuer=origin)}
    )
    assert found.issuer == origin
    assert asked[:3] == [MCP, PRM_PATH, PRM_ROOT]


@pytest.mark.parametrize("status", [429, 500, 599])
def test_every_5xx_and_429_of_authorization_server_metadata_is_an_outage_at_once(
    status: int,
) -> None:
    error, asked = _discover(
        {MCP: _401_with_hint, PRM_HINT: _prm(), ASM_AT: status, OIDC_AT: _asm()}
    )
    assert isinstance(error, AuthError) and error.kind == "unreachable"
    assert str(error) == (f"the authorization server's metadata at {ASM_AT} answered HTTP {status}")
    assert OIDC_AT not in asked


@pytest.mark.parametrize("status", [201, 404, 428, 499])
def test_any_other_answer_of_authorization_server_metadata_tries_openid_discovery(
    status: int,
) -> None:
    found, asked = _discover(
        {MCP: _401_with_hint, PRM_HINT: _prm(), ASM_AT: status, OIDC_AT: _asm()}
    )
    assert found.issuer == AS and asked[-1] == OIDC_AT


def test_no_authorization_server_metadata_names_every_place_tried() -> None:
    error, _ = _discover({MCP: _401_with_hint, PRM_HINT: _prm()})
    assert str(error) == f"no authorization server metadata found (tried {ASM_AT}, {OIDC_AT})"
    assert isinstance(error, AuthError) and error.kind == "config"


def test_metadata_that_is_not_valid_is_named_with_its_place() -> None:
    error, _ = _discover({MCP: _401_with_hint, PRM_HINT: _prm(), ASM_AT: {"issuer": AS}})
    assert str(error) == f"the authorization server's metadata at {ASM_AT} is not valid"
    error, _ = _discover({MCP: _401_with_hint, PRM_HINT: "not json"})  # type: ignore[dict-item]
    assert str(error) == f"its protected resource metadata at {PRM_HINT} is not valid"


def test_metadata_that_names_its_issuer_with_a_trailing_slash_is_the_same_issuer() -> None:
    found, _ = _discover({MCP: _401_with_hint, PRM_HINT: _prm(), ASM_AT: _asm(issuer=f"{AS}/")})
    assert found.issuer == f"{AS}/"


def test_metadata_of_the_origin_must_name_the_origin_as_its_issuer() -> None:
    error, _ = _discover({MCP: 401, ORIGIN_ASM: _asm(issuer=AS)})
    assert "names issuer https://auth.example.com, not https://mcp.example.com " in str(error)


def test_a_metadata_place_that_cannot_be_fetched_is_an_outage_naming_it() -> None:
    def refuse() -> httpx2.Response:
        raise httpx2.ConnectError("refused")

    error, _ = _discover({MCP: _401_with_hint, PRM_HINT: refuse})
    assert isinstance(error, AuthError) and error.kind == "unreachable"
    assert str(error) == (
        f"cannot fetch its protected resource metadata at {PRM_HINT}: ConnectError: refused"
    )
    error, _ = _discover({MCP: _401_with_hint, PRM_HINT: _prm(), ASM_AT: refuse})
    assert str(error) == (
        f"cannot fetch the authorization server's metadata at {ASM_AT}: ConnectError: refused"
    )


def test_a_server_that_cannot_be_reached_is_named_with_the_error_or_its_type() -> None:
    def refuse_silently() -> httpx2.Response:
        raise httpx2.ConnectError("")

    error, _ = _discover({MCP: refuse_silently})
    assert str(error) == "cannot reach the server: ConnectError"


def test_the_found_metadata_cannot_be_changed() -> None:
    found, _ = _discover({MCP: _401_with_hint, PRM_HINT: _prm(), ASM_AT: _asm()})
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.issuer = "x"


def _sent_through(answer: httpx2.Response) -> httpx2.Response:
    async def go() -> httpx2.Response:
        transport = httpx2.MockTransport(lambda request: answer)
        async with httpx2.AsyncClient(transport=transport) as client:
            return await bounded_send(client, client.build_request("GET", "https://x.example/d"))

    return asyncio.run(go())


def test_a_document_of_exactly_one_mebibyte_is_read_and_one_byte_more_is_refused() -> None:
    assert MAX_DOCUMENT == 1 << 20
    body = json.dumps({"pad": " " * 10}).encode()
    body += b" " * ((1 << 20) - len(body))
    response = _sent_through(httpx2.Response(200, content=body))
    assert response.content == body
    with pytest.raises(AuthError, match=r"https://x\.example/d answered more than 1048576 bytes"):
        _sent_through(httpx2.Response(200, content=body + b" "))


def test_a_read_answer_keeps_its_status_its_type_and_its_request_and_nothing_else() -> None:
    answer = httpx2.Response(
        201,
        content=b'{"a": 1}',
        headers={"Content-Type": "application/json", "X-Other": "o"},
    )
    response = _sent_through(answer)
    assert response.status_code == 201 and response.json() == {"a": 1}
    assert response.headers["Content-Type"] == "application/json"
    assert "X-Other" not in response.headers
    assert str(response.request.url) == "https://x.example/d"
    untyped = _sent_through(httpx2.Response(200, content=b"x"))
    assert untyped.headers["Content-Type"] == "application/octet-stream"


class _Big(http.server.BaseHTTPRequestHandler):
    """A server whose `/big` answers 2 MiB and everything else `{}`."""

    def do_GET(self) -> None:
        big = self.path == "/big"
        body = b" " * (2 << 20) if big else b"{}"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the client stops reading a refused answer
            self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_an_answer_refused_for_its_size_gives_its_connection_back() -> None:
    # One connection: a refused answer left open would hold it, and the next request would
    # wait for the pool and fail.
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Big)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_port}"

    async def go() -> bytes:
        limits = httpx2.Limits(max_connections=1)
        async with httpx2.AsyncClient(limits=limits, timeout=httpx2.Timeout(30, pool=2)) as client:
            with pytest.raises(AuthError, match="answered more than"):
                await bounded_send(client, client.build_request("GET", f"{base}/big"))
            return (await bounded_send(client, client.build_request("GET", f"{base}/d"))).content

    try:
        assert asyncio.run(go()) == b"{}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
