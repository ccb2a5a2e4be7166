"""Token requests for the two OAuth types: client credentials (a client secret, or a JWT client
assertion signed with the client's key, RFC 7523 `private_key_jwt`) and the JWT bearer grant
(RFC 7523 section 2.1). The `resource` (RFC 8707) and scopes go with every request.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable, Iterable
from urllib.parse import quote

import httpx2
import jwt
from mcp.shared.auth import OAuthToken
from pydantic import ValidationError

from runner.mcp.auth.config import ClientCredentialsAuth, JwtBearerAuth
from runner.mcp.auth.discovery import Discovered, bounded_send
from runner.mcp.auth.token import AuthError, Token

__all__ = [
    "CLIENT_CREDENTIALS",
    "JWT_BEARER",
    "client_credentials_form",
    "jwt_bearer_form",
    "request_token",
]

CLIENT_CREDENTIALS = "client_credentials"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_MAX_ERROR = 300
_ASSERTION_LIFETIME_S = 120
"""How long a signed client assertion is valid (RFC 7523 asks for a short `exp`)."""

Form = tuple[dict[str, str], dict[str, str]]
"""The token request's form fields and headers."""


def _common(found: Discovered, scopes: list[str]) -> dict[str, str]:
    data = {"resource": found.resource}
    chosen = scopes or found.scopes_supported or []
    if chosen:
        data["scope"] = " ".join(chosen)
    return data


def _basic(client_id: str, secret: str) -> dict[str, str]:
    pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}"
    return {"Authorization": f"Basic {base64.b64encode(pair.encode()).decode()}"}


async def client_credentials_form(
    cfg: ClientCredentialsAuth, found: Discovered, secret: Callable[[Iterable[str]], None]
) -> Form:
    """The client credentials request; a signed assertion is handed to `secret` to be masked."""
    data = {"grant_type": CLIENT_CREDENTIALS, **_common(found, cfg.scopes)}
    if cfg.private_key is not None:
        try:
            assertion = _client_assertion(cfg, cfg.private_key, found.issuer)
        except Exception as exc:  # a key pyjwt cannot use for this algorithm
            raise AuthError(
                f"cannot sign the client assertion with `private_key` ({cfg.signing_alg}): "
                f"{type(exc).__name__}"
            ) from None
        secret([assertion])
        data.update(client_id=cfg.client_id, client_assertion_type=_ASSERTION_TYPE)
        data["client_assertion"] = assertion
        return data, {}
    assert cfg.client_secret is not None  # the config's validator
    if cfg.auth_method == "client_secret_post":
        data.update(client_id=cfg.client_id, client_secret=cfg.client_secret)
        return data, {}
    return data, _basic(cfg.client_id, cfg.client_secret)


def _client_assertion(cfg: ClientCredentialsAuth, key: str, audience: str) -> str:
    """The `private_key_jwt` client assertion (RFC 7523 section 3): `iss` and `sub` the client,
    `aud` the issuer, short-lived, a fresh `jti`; `kid` in its header when `key_id` is set."""
    now = int(time.time())
    claims = {
        "iss": cfg.client_id,
        "sub": cfg.client_id,
        "aud": audience,
        "iat": now,
        "exp": now + _ASSERTION_LIFETIME_S,
        "jti": uuid.uuid4().hex,
    }
    headers = {"kid": cfg.key_id} if cfg.key_id else None
    return jwt.encode(claims, key, algorithm=cfg.signing_alg, headers=headers)


def jwt_bearer_form(cfg: JwtBearerAuth, found: Discovered, assertion: str) -> Form:
    """The JWT bearer grant request for `assertion`."""
    data = {"grant_type": JWT_BEARER, "assertion": assertion, **_common(found, cfg.scopes)}
    if cfg.client_id and cfg.client_secret:
        return data, _basic(cfg.client_id, cfg.client_secret)
    if cfg.client_id:
        data["client_id"] = cfg.client_id
    return data, {}


async def request_token(client: httpx2.AsyncClient, found: Discovered, form: Form) -> Token:
    """POST the form to the token endpoint; the access token as a Bearer header.

    Raises:
        AuthError: `unreachable` (no answer, 5xx, 429) or `config` (refused: the OAuth `error`
            and its description are quoted, masked by the caller).
    """
    data, headers = form
    url = str(found.metadata.token_endpoint)
    try:
        request = client.build_request(
            "POST", url, data=data, headers={**headers, "Accept": "application/json"}
        )
        response = await bounded_send(client, request)
    except httpx2.HTTPError as exc:
        raise AuthError(
            f"cannot reach the token endpoint {url}: {type(exc).__name__}", "unreachable"
        ) from None
    if response.status_code >= 500 or response.status_code == 429:
        raise AuthError(
            f"the token endpoint {url} answered HTTP {response.status_code}", "unreachable"
        )
    if response.status_code != 200:
        raise AuthError(f"the authorization server refused the token request: {_refusal(response)}")
    try:
        token = OAuthToken.model_validate_json(response.content)
    except ValidationError:
        raise AuthError(
            f"the token endpoint {url} answered something that is not a bearer token"
        ) from None
    lifetime = float(token.expires_in) if token.expires_in is not None else None
    expires = time.monotonic() + lifetime if lifetime is not None else None
    # RFC 6749 section 5.1: a response without `scope` granted what was asked for.
    scope = token.scope if token.scope is not None else data.get("scope")
    return Token({"Authorization": f"Bearer {token.access_token}"}, expires, scope, lifetime)


def _refusal(response: httpx2.Response) -> str:
    """`invalid_client (Client authentication failed.)`, or the status when it is not OAuth JSON."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        text = body["error"]
        if isinstance(body.get("error_description"), str):
            text += f" ({body['error_description'][:_MAX_ERROR]})"
        hint = {
            "invalid_client": ": check the client id and its secret or key",
            "invalid_grant": ": check the assertion (issuer, audience, expiry)",
            "unauthorized_client": ": this client may not use this grant",
            "unsupported_grant_type": ": the server does not offer this grant",
            "invalid_scope": ": check `scopes`",
        }.get(body["error"], "")
        return f"HTTP {response.status_code} {text}{hint}"
    return f"HTTP {response.status_code}"
