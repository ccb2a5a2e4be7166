"""The rules of the token requests (runner/mcp/auth/grants.py) against the real authlib
authorization server (in a thread of this process, one per test module): what each credential
form sends and where, the resource and scopes of every request, what the token says, and which
refusal is which. The status codes authlib never answers (5xx, 429, a body that is no token) come
from scripted answers through the injectable HTTP client."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import jwt
import pytest

from runner.mcp.auth import AuthError, ClientCredentialsAuth, JwtBearerAuth, Token
from runner.mcp.auth.discovery import Discovered, discover
from runner.mcp.auth.grants import (
    CLIENT_CREDENTIALS,
    JWT_BEARER,
    client_credentials_form,
    jwt_bearer_form,
    request_token,
)
from tests.mcp.auth.inprocess import Sent, authorization_server, recording_client
from tests.mcp.auth.world import OIDC_ISSUER, World, key_pair, oidc_assertion

SECRET = "cs-" + "s3cret-value-0123"
ODD_ID, ODD_SECRET = "cc:odd%id/x", "s:e%c&r=t/+y"
CC_KEY = key_pair()
OIDC_KEY = key_pair()
LIFETIME = 600

CLIENTS: dict[str, Any] = {
    "cc-basic": {
        "secret": SECRET,
        "methods": ["client_secret_basic"],
        "scopes": ["tools:read", "tools:write"],
    },
    "cc-post": {"secret": SECRET, "methods": ["client_secret_post"]},
    ODD_ID: {"secret": ODD_SECRET, "methods": ["client_secret_basic"]},
    "cc-key": {"public_key": CC_KEY.public, "methods": ["private_key_jwt"]},
    "ci-workload": {
        "assertion_issuer": OIDC_ISSUER,
        "assertion_public_key": OIDC_KEY.public,
        "methods": ["none"],
        "grants": [JWT_BEARER],
    },
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("as")
    with authorization_server(root, clients=CLIENTS, lifetime=LIFETIME) as world:
        yield world


def _found(world: World, grant: str = CLIENT_CREDENTIALS) -> Discovered:
    async def go() -> Discovered:
        async with httpx2.AsyncClient() as client:
            return await discover(client, world.mcp_url, issuer=None, grant=grant)

    return asyncio.run(go())


def _cc(**fields: Any) -> ClientCredentialsAuth:
    return ClientCredentialsAuth.model_validate({"type": "client_credentials", **fields})


def _jwt(**fields: Any) -> JwtBearerAuth:
    return JwtBearerAuth.model_validate({"type": "jwt_bearer", "assertion_file": "f", **fields})


def _obtain(
    world: World, cfg: ClientCredentialsAuth, found: Discovered | None = None
) -> tuple[Token, list[Sent], list[str]]:
    """A client credentials token: the token, the requests sent, the values given to mask."""
    sent: list[Sent] = []
    masked: list[str] = []

    async def go() -> Token:
        async with recording_client(sent) as client:
            where = found or await discover(
                client, world.mcp_url, issuer=None, grant=CLIENT_CREDENTIALS
            )
            sent.clear()
            form = await client_credentials_form(cfg, where, masked.extend)
            return await request_token(client, where, form)

    return asyncio.run(go()), sent, masked


def _exchange(world: World, cfg: JwtBearerAuth, assertion: str) -> tuple[Token, Sent]:
    sent: list[Sent] = []

    async def go() -> Token:
        async with recording_client(sent) as client:
            found = await discover(client, world.mcp_url, issuer=None, grant=JWT_BEARER)
            sent.clear()
            return await request_token(client, found, jwt_bearer_form(cfg, found, assertion))

    token = asyncio.run(go())
    return token, sent[0]


def _basic_pair(sent: Sent) -> str:
    scheme, _, value = sent.headers["authorization"].partition(" ")
    assert scheme == "Basic"
    return base64.b64decode(value).decode()


def test_a_client_secret_goes_in_basic_auth_by_default_and_never_in_the_form(world: World) -> None:
    token, sent, _ = _obtain(world, _cc(client_id="cc-basic", client_secret=SECRET))
    assert token.headers["Authorization"].startswith("Bearer at-")
    (request,) = sent
    assert request.method == "POST" and request.url == f"{world.as_url}/token"
    assert _basic_pair(request) == f"cc-basic:{SECRET}"
    assert "client_secret" not in request.form and "client_id" not in request.form
    assert request.form["grant_type"] == "client_credentials"
    assert request.headers["accept"] == "application/json"


def test_client_secret_post_sends_the_id_and_secret_in_the_form_and_no_basic_auth(
    world: World,
) -> None:
    cfg = _cc(client_id="cc-post", client_secret=SECRET, auth_method="client_secret_post")
    token, (request,), _ = _obtain(world, cfg)
    assert token.headers["Authorization"].startswith("Bearer at-")
    assert "authorization" not in request.headers
    assert (request.form["client_id"], request.form["client_secret"]) == ("cc-post", SECRET)


def test_reserved_characters_of_a_client_id_and_secret_are_encoded_before_basic_auth(
    world: World,
) -> None:
    token, (request,), _ = _obtain(world, _cc(client_id=ODD_ID, client_secret=ODD_SECRET))
    assert token.headers["Authorization"].startswith("Bearer at-")
    assert _basic_pair(request) == "cc%3Aodd%25id%2Fx:s%3Ae%25c%26r%3Dt%2F%2By"


def test_a_private_key_signs_a_short_lived_client_assertion_for_the_issuer(world: World) -> None:
    token, (request,), masked = _obtain(world, _cc(client_id="cc-key", private_key=CC_KEY.private))
    assert token.headers["Authorization"].startswith("Bearer at-")
    assert "authorization" not in request.headers
    assert request.form["client_id"] == "cc-key"
    assert request.form["client_assertion_type"] == (
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    )
    assertion = request.form["client_assertion"]
    assert masked == [assertion]  # handed over to be masked before it is sent
    claims = jwt.decode(assertion, CC_KEY.public, algorithms=["RS256"], audience=world.as_url)
    assert claims["iss"] == claims["sub"] == "cc-key"
    assert claims["exp"] - claims["iat"] == 120
    assert len(claims["jti"]) >= 16
    assert "kid" not in jwt.get_unverified_header(assertion)
    received = [e["value"] for e in world.events("client_assertion")]
    assert assertion in received


def test_every_client_assertion_is_fresh(world: World) -> None:
    cfg = _cc(client_id="cc-key", private_key=CC_KEY.private)
    first = _obtain(world, cfg)[1][0].form["client_assertion"]
    second = _obtain(world, cfg)[1][0].form["client_assertion"]  # a replayed jti is refused
    assert first != second


def test_a_key_id_is_sent_as_the_kid_of_the_client_assertion(world: World) -> None:
    cfg = _cc(client_id="cc-key", private_key=CC_KEY.private, key_id="key-2026")
    _, (request,), _ = _obtain(world, cfg)
    assert jwt.get_unverified_header(request.form["client_assertion"])["kid"] == "key-2026"


@pytest.mark.parametrize("alg", ["RS384", "PS256"])
def test_the_configured_algorithm_signs_the_client_assertion(alg: str, world: World) -> None:
    found = _found(world)
    masked: list[str] = []
    cfg = _cc(client_id="cc-key", private_key=CC_KEY.private, signing_alg=alg)
    data, headers = asyncio.run(client_credentials_form(cfg, found, masked.extend))
    assert headers == {}
    assert jwt.get_unverified_header(data["client_assertion"])["alg"] == alg


def test_a_key_that_cannot_sign_with_the_algorithm_is_a_configuration_error(world: World) -> None:
    cfg = _cc(client_id="cc-key", private_key=CC_KEY.private, signing_alg="ES256")
    with pytest.raises(AuthError) as caught:
        asyncio.run(client_credentials_form(cfg, _found(world), lambda values: None))
    assert caught.value.kind == "config"
    assert str(caught.value).startswith(
        "cannot sign the client assertion with `private_key` (ES256)"
    )
    assert "BEGIN" not in str(caught.value)


def test_every_request_names_the_resource_and_the_configured_scopes(world: World) -> None:
    cfg = _cc(client_id="cc-basic", client_secret=SECRET, scopes=["tools:read", "tools:write"])
    token, (request,), _ = _obtain(world, cfg)
    assert request.form["resource"] == world.mcp_url
    assert request.form["scope"] == "tools:read tools:write"
    assert token.scope == "tools:read tools:write"
    (issued,) = [e for e in world.events("issued") if e["token"] in token.values()]
    assert issued["resource"] == world.mcp_url


def test_without_configured_scopes_the_servers_supported_scopes_are_asked_for(
    world: World,
) -> None:
    found = dataclasses.replace(_found(world), scopes_supported=["tools:read"])
    token, (request,), _ = _obtain(world, _cc(client_id="cc-basic", client_secret=SECRET), found)
    assert request.form["scope"] == "tools:read" and token.scope == "tools:read"
    configured = _cc(client_id="cc-basic", client_secret=SECRET, scopes=["tools:write"])
    _, (request,), _ = _obtain(world, configured, found)
    assert request.form["scope"] == "tools:write"  # the configured scopes win


def test_with_no_scopes_anywhere_none_is_asked_for(world: World) -> None:
    token, (request,), _ = _obtain(world, _cc(client_id="cc-basic", client_secret=SECRET))
    assert "scope" not in request.form
    assert token.scope is None


def test_a_token_response_without_scope_granted_the_scopes_asked_for(world: World) -> None:
    # The client may have no scope: authlib grants none and says none; RFC 6749 5.1.
    cfg = _cc(client_id="cc-post", client_secret=SECRET, auth_method="client_secret_post")
    token, _, _ = _obtain(world, cfg.model_copy(update={"scopes": ["tools:write"]}))
    assert token.scope == "tools:write"


def test_a_tokens_lifetime_is_its_expires_in_counted_from_the_answer(world: World) -> None:
    before = time.monotonic()
    token, _, _ = _obtain(world, _cc(client_id="cc-basic", client_secret=SECRET))
    after = time.monotonic()
    assert token.lifetime_s == LIFETIME
    assert token.expires_at is not None
    assert before + LIFETIME <= token.expires_at <= after + LIFETIME


def test_the_jwt_bearer_grant_sends_the_assertion_with_no_client_by_default(world: World) -> None:
    assertion = oidc_assertion(OIDC_KEY, world.as_url)
    token, request = _exchange(world, _jwt(), assertion)
    assert token.headers["Authorization"].startswith("Bearer at-")
    assert request.form == {
        "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "assertion": assertion,
        "resource": world.mcp_url,
    }
    assert "authorization" not in request.headers
    assert [e["value"] for e in world.events("assertion")][-1] == assertion


def test_the_jwt_bearer_grant_names_a_client_id_in_the_form_or_with_its_secret_in_basic_auth(
    world: World,
) -> None:
    _, request = _exchange(
        world, _jwt(client_id="ci-workload"), oidc_assertion(OIDC_KEY, world.as_url)
    )
    assert request.form["client_id"] == "ci-workload" and "authorization" not in request.headers
    cfg = _jwt(client_id="ci-workload", client_secret="cw-secret", scopes=["tools:read"])
    _, request = _exchange(world, cfg, oidc_assertion(OIDC_KEY, world.as_url))
    assert "client_id" not in request.form and request.form["scope"] == "tools:read"
    assert _basic_pair(request) == "ci-workload:cw-secret"
    # A secret without a client id names no client.
    _, request = _exchange(
        world, _jwt(client_secret="cw-secret"), oidc_assertion(OIDC_KEY, world.as_url)
    )
    assert "client_id" not in request.form and "authorization" not in request.headers


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (
            lambda w: ("cc", _cc(client_id="cc-basic", client_secret="wrong-secret-1")),
            "HTTP 401 invalid_client",
        ),
        (
            lambda w: ("cc", _cc(client_id="no-such-client", client_secret=SECRET)),
            "check the client id and its secret or key",
        ),
        (
            lambda w: ("jwt", oidc_assertion(OIDC_KEY, "https://someone-else.example")),
            "invalid_grant",
        ),
        (
            lambda w: ("jwt", oidc_assertion(CC_KEY, w.as_url)),  # signed by a key not trusted
            ": check the assertion (issuer, audience, expiry)",
        ),
        (
            lambda w: (
                "cc",
                _cc(client_id="cc-basic", client_secret=SECRET, scopes=["admin:everything"]),
            ),
            "invalid_scope (",
        ),
    ],
)
def test_every_refusal_is_a_configuration_error_quoting_the_oauth_error_and_a_hint(
    make: Callable[[World], tuple[str, Any]], said: str, world: World
) -> None:
    kind, what = make(world)
    with pytest.raises(AuthError) as caught:
        if kind == "cc":
            _obtain(world, what)
        else:
            _exchange(world, _jwt(), what)
    assert caught.value.kind == "config"
    assert str(caught.value).startswith("the authorization server refused the token request: HTTP")
    assert said in str(caught.value)


def test_a_client_not_allowed_the_grant_is_told_so(world: World) -> None:
    # ci-workload may use only the JWT bearer grant; authlib names it unauthorized_client.
    found = _found(world)
    form = ({"grant_type": CLIENT_CREDENTIALS, "client_id": "ci-workload"}, {})

    async def go() -> Token:
        async with httpx2.AsyncClient() as client:
            return await request_token(client, found, form)

    with pytest.raises(AuthError) as caught:
        asyncio.run(go())
    assert "unauthorized_client" in str(caught.value) or "invalid_client" in str(caught.value)


def test_a_grant_the_server_does_not_know_is_named_with_its_hint(world: World) -> None:
    found = _found(world)
    form = ({"grant_type": "urn:example:made-up"}, {})

    async def go() -> Token:
        async with httpx2.AsyncClient() as client:
            return await request_token(client, found, form)

    with pytest.raises(AuthError) as caught:
        asyncio.run(go())
    assert str(caught.value).endswith(
        "HTTP 400 unsupported_grant_type: the server does not offer this grant"
    )


def test_a_token_endpoint_that_cannot_be_reached_is_an_outage_naming_it(world: World) -> None:
    found = _found(world)
    dead = "http://127.0.0.1:9/token"
    metadata = found.metadata.model_copy(update={"token_endpoint": dead})
    gone = dataclasses.replace(found, metadata=metadata)

    async def go() -> Token:
        async with httpx2.AsyncClient() as client:
            return await request_token(client, gone, ({"grant_type": "x"}, {}))

    with pytest.raises(AuthError) as caught:
        asyncio.run(go())
    assert caught.value.kind == "unreachable"
    assert str(caught.value) == f"cannot reach the token endpoint {dead}: ConnectError"


def _scripted(world: World, answer: httpx2.Response) -> AuthError | Token:
    found = _found(world)

    def handle(request: httpx2.Request) -> httpx2.Response:
        return answer

    async def go() -> Token:
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(handle)) as client:
            return await request_token(client, found, ({"grant_type": "x", "scope": "s:1"}, {}))

    try:
        return asyncio.run(go())
    except AuthError as error:
        return error


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (500, "unreachable"),
        (503, "unreachable"),
        (429, "unreachable"),
        (499, "config"),
        (428, "config"),
    ],
)
def test_every_5xx_and_429_is_an_outage_and_every_other_failure_a_refusal(
    status: int, kind: str, world: World
) -> None:
    error = _scripted(world, httpx2.Response(status, json={"error": "x"}))
    assert isinstance(error, AuthError) and error.kind == kind
    if kind == "unreachable":
        assert str(error) == f"the token endpoint {world.as_url}/token answered HTTP {status}"


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            {"error": "invalid_client"},
            "HTTP 400 invalid_client: check the client id and its secret or key",
        ),
        ({"error": "slow_down", "error_description": "later"}, "HTTP 400 slow_down (later)"),
        ({"error": "e", "error_description": 5}, "HTTP 400 e"),
        ({"error": 7}, "HTTP 400"),
        (["invalid_client"], "HTTP 400"),
        ("<html>no</html>", "HTTP 400"),
    ],
)
def test_a_refusal_quotes_the_oauth_error_only_when_there_is_one(
    body: Any, said: str, world: World
) -> None:
    answer = (
        httpx2.Response(400, text=body)
        if isinstance(body, str)
        else httpx2.Response(400, json=body)
    )
    error = _scripted(world, answer)
    assert isinstance(error, AuthError) and error.kind == "config"
    assert str(error) == f"the authorization server refused the token request: {said}"


def test_an_error_description_is_quoted_to_300_characters(world: World) -> None:
    body = {"error": "invalid_request", "error_description": "d" * 299 + "XY"}
    error = _scripted(world, httpx2.Response(400, json=body))
    assert str(error).endswith(f"HTTP 400 invalid_request ({'d' * 299}X)")


@pytest.mark.parametrize(
    "body",
    [{"token_type": "Bearer"}, {"access_token": "a", "token_type": "mac"}, "not json"],
)
def test_an_answer_that_is_not_a_bearer_token_is_refused(body: Any, world: World) -> None:
    answer = (
        httpx2.Response(200, text=body)
        if isinstance(body, str)
        else httpx2.Response(200, json=body)
    )
    error = _scripted(world, answer)
    assert isinstance(error, AuthError) and error.kind == "config"
    assert "answered something that is not a bearer token" in str(error)


def test_a_token_answer_without_a_lifetime_has_no_expiry_and_keeps_the_asked_scope(
    world: World,
) -> None:
    answer = httpx2.Response(200, json={"access_token": "at-x", "token_type": "Bearer"})
    token = _scripted(world, answer)
    assert isinstance(token, Token)
    assert token == Token({"Authorization": "Bearer at-x"}, None, "s:1", None)
    answer = httpx2.Response(
        200, json={"access_token": "at-y", "token_type": "Bearer", "scope": "s:2", "expires_in": 9}
    )
    token = _scripted(world, answer)
    assert isinstance(token, Token) and (token.scope, token.lifetime_s) == ("s:2", 9.0)
