"""Where a server's tokens come from, as the MCP authorization spec says (DESIGN 26).

The server's protected resource metadata (RFC 9728: the `resource_metadata` of its 401's
WWW-Authenticate, else the well-known paths), then its authorization server's metadata (RFC
8414, else OpenID discovery), whose `issuer` must be the one asked for. Built on the mcp SDK's
discovery URLs and metadata models; nothing here opens a browser or waits for a person.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx2
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    issuers_match,
)
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url
from pydantic import ValidationError

from runner.mcp.auth.token import AuthError

__all__ = ["INTERACTIVE_GRANTS", "MAX_DOCUMENT", "Discovered", "bounded_send", "discover"]

MAX_DOCUMENT = 1 << 20
"""The most bytes read of a metadata document or a token response."""

INTERACTIVE_GRANTS = frozenset(
    {
        "authorization_code",
        "implicit",
        "password",
        "device_code",
        "urn:ietf:params:oauth:grant-type:device_code",
    }
)
"""Grants that need a person (a browser, a code typed in): never used by a CI run."""


@dataclass(frozen=True)
class Discovered:
    """What discovery found for one server."""

    metadata: OAuthMetadata
    issuer: str
    """The authorization server's issuer, as its metadata states it (checked)."""
    resource: str
    """The RFC 8707 `resource` to ask tokens for."""
    scopes_supported: list[str] | None
    """The protected resource's `scopes_supported`, when it lists them."""


async def discover(
    client: httpx2.AsyncClient, server_url: str, *, issuer: str | None, grant: str
) -> Discovered:
    """Find the authorization server of `server_url` and check it offers `grant`.

    Raises:
        AuthError: `unreachable` when a metadata document or the server could not be fetched
            (or answered 5xx/429); `config` when the metadata is missing or inconsistent, names
            another issuer, or offers only interactive grants.
    """
    hint = await _probe(client, server_url)
    prm = await _protected_resource(client, server_url, hint)
    resource = resource_url_from_server_url(server_url)
    scopes = None
    chosen: str | None = issuer  # no metadata, no issuer: the 2025-03-26 path (server's origin)
    if prm is not None:
        advertised = str(prm.resource)
        if not check_resource_allowed(requested_resource=resource, configured_resource=advertised):
            raise AuthError(
                f"its protected resource metadata names resource {advertised}, which does not "
                f"cover {server_url} (RFC 8707): check `uri`"
            )
        resource = advertised
        scopes = prm.scopes_supported
        servers = [str(url) for url in prm.authorization_servers]
        chosen = _choose(servers, issuer)
    metadata = await _authorization_server(client, chosen, server_url)
    _check_grant(metadata, grant)
    return Discovered(metadata, str(metadata.issuer), resource, scopes)


async def _probe(client: httpx2.AsyncClient, server_url: str) -> str | None:
    """The `resource_metadata` URL of the server's 401, when it answers one."""
    try:
        async with client.stream(
            "GET", server_url, headers={"Accept": "text/event-stream, application/json"}
        ) as response:
            return extract_resource_metadata_from_www_auth(response)
    except httpx2.HTTPError as exc:
        raise AuthError(f"cannot reach the server: {_said(exc)}", "unreachable") from None


async def _protected_resource(
    client: httpx2.AsyncClient, server_url: str, hint: str | None
) -> ProtectedResourceMetadata | None:
    failed: str | None = None
    for url in build_protected_resource_metadata_discovery_urls(hint, server_url):
        response = await _get(client, url, "its protected resource metadata")
        if response.status_code >= 500 or response.status_code == 429:
            failed = f"{url} answered HTTP {response.status_code}"
            continue
        if response.status_code != 200:
            continue
        try:
            return ProtectedResourceMetadata.model_validate_json(response.content)
        except ValidationError:
            raise AuthError(f"its protected resource metadata at {url} is not valid") from None
    if failed is not None:  # a server error says nothing about whether metadata exists
        raise AuthError(f"its protected resource metadata: {failed}", "unreachable")
    return None


def _choose(servers: list[str], issuer: str | None) -> str:
    if issuer is None:
        return servers[0]
    for server in servers:
        if issuers_match(server, issuer):
            return server
    raise AuthError(
        f"`issuer: {issuer}` is not among the authorization servers its metadata lists "
        f"({', '.join(servers)}): fix `issuer` or drop it"
    )


async def _authorization_server(
    client: httpx2.AsyncClient, issuer: str | None, server_url: str
) -> OAuthMetadata:
    urls = build_oauth_authorization_server_metadata_discovery_urls(issuer, server_url)
    for url in urls:
        response = await _get(client, url, "the authorization server's metadata")
        if response.status_code >= 500 or response.status_code == 429:
            raise AuthError(
                f"the authorization server's metadata at {url} answered HTTP "
                f"{response.status_code}",
                "unreachable",
            )
        if response.status_code != 200:
            continue
        try:
            metadata = OAuthMetadata.model_validate_json(response.content)
        except ValidationError:
            raise AuthError(f"the authorization server's metadata at {url} is not valid") from None
        expected = (
            issuer or f"{httpx2.URL(server_url).scheme}://{httpx2.URL(server_url).netloc.decode()}"
        )
        stated = str(metadata.issuer)
        if stated != expected and not issuers_match(stated, expected):
            raise AuthError(
                f"the authorization server's metadata at {url} names issuer {stated}, not "
                f"{expected} (RFC 8414 section 3.3): refusing to send credentials there"
            )
        return metadata
    raise AuthError(f"no authorization server metadata found (tried {', '.join(urls)})")


def _check_grant(metadata: OAuthMetadata, grant: str) -> None:
    offered = metadata.grant_types_supported
    if offered is None or grant in offered:
        return  # not stated: the token request says whether it is offered
    interactive = sorted(g for g in offered if g in INTERACTIVE_GRANTS)
    what = ", ".join(offered) or "no grant"
    why = (
        f"; {', '.join(interactive)} needs a person in a browser, which a CI run never opens"
        if interactive
        else ""
    )
    raise AuthError(
        f"its authorization server {metadata.issuer} offers only {what}, not the {grant} grant "
        f"this `auth:` needs{why}. Register a machine client (client_credentials or jwt_bearer) "
        "or use `auth: {type: bearer}` with a token obtained elsewhere"
    )


async def _get(client: httpx2.AsyncClient, url: str, what: str) -> httpx2.Response:
    try:
        request = client.build_request("GET", url, headers={"Accept": "application/json"})
        return await bounded_send(client, request)
    except httpx2.HTTPError as exc:
        raise AuthError(f"cannot fetch {what} at {url}: {_said(exc)}", "unreachable") from None


async def bounded_send(client: httpx2.AsyncClient, request: httpx2.Request) -> httpx2.Response:
    """The response with its body read, refusing a body over MAX_DOCUMENT bytes (a metadata
    document or token response is a few KB; a server streaming more is not one)."""
    response = await client.send(request, stream=True)
    try:
        body = b""
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_DOCUMENT:
                raise AuthError(f"{request.url} answered more than {MAX_DOCUMENT} bytes")
    finally:
        await response.aclose()
    # The body is decoded already: only its type goes along, no Content-Encoding.
    kind = {"Content-Type": response.headers.get("Content-Type", "application/octet-stream")}
    return httpx2.Response(response.status_code, headers=kind, content=body, request=request)


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
