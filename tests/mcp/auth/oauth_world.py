"""A real OAuth 2.1 authorization server (authlib) and a real MCP server (the mcp SDK) that checks
its tokens against it, in one process: `python -m tests.mcp.auth.oauth_world CONFIG.json`.

The authorization server (a WSGI app on wsgiref, in a thread) serves RFC 8414 metadata, a token
endpoint with the client credentials grant (client_secret_basic, client_secret_post,
private_key_jwt) and the RFC 7523 JWT bearer grant, and RFC 7662 introspection. The MCP server
(streamable HTTP or SSE, uvicorn) serves its protected resource metadata (RFC 9728) and verifies
every bearer token by introspection, including the `resource` it was issued for.

Everything worth checking is appended to the JSON-lines file `log`: each token issued, each client
assertion and JWT bearer assertion received, each 401 the MCP server answered, each revocation.
The first stdout line is `{"as": URL, "mcp": URL}` once both listen.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
import threading
import time
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")  # http on 127.0.0.1 only

import httpx2
import uvicorn
from authlib.oauth2.rfc6749 import AuthorizationServer, ClientMixin, OAuth2Request
from authlib.oauth2.rfc6749.grants import ClientCredentialsGrant
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion, JWTBearerGrant
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.auth_utils import check_resource_allowed

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
RS_CLIENT, RS_SECRET = "resource-server", secrets.token_urlsafe(24)


class World:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.log_path = Path(config["log"])
        self.lock = threading.Lock()
        self.tokens: dict[str, dict[str, Any]] = {}
        self.jti: set[str] = set()

    def log(self, **event: Any) -> None:
        with self.lock, self.log_path.open("a", encoding="utf-8") as file:
            file.write(json.dumps(event) + "\n")


class Client(ClientMixin):
    def __init__(self, client_id: str, spec: dict[str, Any]) -> None:
        self.client_id, self.spec = client_id, spec

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> None:
        return None

    def get_allowed_scope(self, scope: str | None) -> str:
        allowed = set(self.spec.get("scopes", ["tools:read"]))
        return " ".join(s for s in (scope or "").split() if s in allowed)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return False

    def check_client_secret(self, client_secret: str) -> bool:
        return bool(self.spec.get("secret")) and secrets.compare_digest(
            client_secret, self.spec["secret"]
        )

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method in self.spec.get("methods", [])

    def check_response_type(self, response_type: str) -> bool:
        return False

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.spec.get("grants", ["client_credentials"])


class IssuedToken(dict):  # type: ignore[type-arg]
    """A stored token as authlib's introspection endpoint reads it (TokenMixin's questions)."""

    def is_expired(self) -> bool:
        return bool(self["exp"] <= time.time())

    def is_revoked(self) -> bool:
        return bool(self["revoked"])


class WsgiRequest(OAuth2Request):
    def __init__(self, environ: dict[str, Any], url: str) -> None:
        headers = {
            k[5:].replace("_", "-").title(): v for k, v in environ.items() if k.startswith("HTTP_")
        }
        if "CONTENT_TYPE" in environ:
            headers["Content-Type"] = environ["CONTENT_TYPE"]
        super().__init__(environ["REQUEST_METHOD"], url, headers=headers)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length).decode() if length else ""
        self._form = {k: v[0] for k, v in parse_qs(body).items()}
        self.payload = BasicOAuth2Payload(self._form)

    @property
    def form(self) -> dict[str, str]:
        return self._form

    @property
    def args(self) -> dict[str, str]:
        return {}


def build_as(world: World, issuer: str) -> tuple[AuthorizationServer, dict[str, Client]]:
    clients = {cid: Client(cid, spec) for cid, spec in world.config.get("clients", {}).items()}
    clients[RS_CLIENT] = Client(
        RS_CLIENT, {"secret": RS_SECRET, "methods": ["client_secret_basic"]}
    )

    class Server(AuthorizationServer):  # type: ignore[misc]
        def query_client(self, client_id: str) -> Client | None:
            return clients.get(client_id)

        def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
            resource = request.form.get("resource")
            record = {
                "client_id": request.client.get_client_id(),
                "scope": token.get("scope", ""),
                "exp": int(time.time()) + int(token["expires_in"]),
                "aud": resource,
                "revoked": False,
            }
            world.tokens[token["access_token"]] = record
            world.log(
                event="issued",
                token=token["access_token"],
                resource=resource,
                client_id=record["client_id"],
                grant=request.form.get("grant_type"),
            )

        def create_oauth2_request(self, request: Any) -> OAuth2Request:
            return request

        def handle_response(self, status: int, body: Any, headers: Any) -> Any:
            return status, body, headers

        def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
            return None

    server = Server(scopes_supported=["tools:read", "tools:write"])
    lifetime = int(world.config.get("lifetime", 3600))
    server.register_token_generator(
        "default",
        BearerTokenGenerator(
            access_token_generator=lambda **_: "at-" + secrets.token_urlsafe(24),
            expires_generator=lambda client, grant_type: lifetime,
        ),
    )

    class ClientCredentials(ClientCredentialsGrant):  # type: ignore[misc]
        TOKEN_ENDPOINT_AUTH_METHODS = [  # noqa: RUF012
            "client_secret_basic",
            "client_secret_post",
            "private_key_jwt",
        ]

    class PrivateKeyJwt(JWTBearerClientAssertion):  # type: ignore[misc]
        CLIENT_AUTH_METHOD = "private_key_jwt"

        def get_audiences(self) -> list[str]:
            return [issuer, f"{issuer}/token"]

        def validate_jti(self, claims: dict[str, Any], jti: str) -> bool:
            if jti in world.jti:
                return False
            world.jti.add(jti)
            return True

        def resolve_client_public_key(self, client: Client) -> str:
            return str(client.spec["public_key"])

        def __call__(self, query_client: Any, request: OAuth2Request) -> Any:
            if request.form.get("client_assertion"):
                world.log(event="client_assertion", value=request.form["client_assertion"])
            return super().__call__(query_client, request)

    class JwtBearer(JWTBearerGrant):  # type: ignore[misc]
        def resolve_issuer_client(self, iss: str) -> Client | None:
            return next(
                (c for c in clients.values() if c.spec.get("assertion_issuer") == iss), None
            )

        def resolve_client_public_key(self, client: Client) -> str:
            return str(client.spec["assertion_public_key"])

        def get_audiences(self) -> list[str]:
            return [issuer]

        def authenticate_user(self, subject: str) -> str:
            return subject

        def has_granted_permission(self, client: Client, user: str) -> bool:
            return True

        def validate_token_request(self) -> None:
            world.log(event="assertion", value=self.request.form.get("assertion", ""))
            super().validate_token_request()

    class Introspect(IntrospectionEndpoint):  # type: ignore[misc]
        def query_token(self, token_string: str, token_type_hint: str | None) -> Any:
            record = world.tokens.get(token_string)
            return IssuedToken(record, token=token_string) if record else None

        def check_permission(self, token: Any, client: Client, request: Any) -> bool:
            return client.get_client_id() == RS_CLIENT

        def introspect_token(self, token: dict[str, Any]) -> dict[str, Any]:
            return {
                "active": True,
                "client_id": token["client_id"],
                "scope": token["scope"],
                "exp": token["exp"],
                "aud": token["aud"],
                "iss": issuer,
            }

    server.register_client_auth_method("private_key_jwt", PrivateKeyJwt())
    server.register_grant(ClientCredentials)
    server.register_grant(JwtBearer)
    server.register_endpoint(Introspect)
    return server, clients


def as_app(world: World, issuer: str) -> Any:
    server, _ = build_as(world, issuer)
    metadata = AuthorizationServerMetadata(
        {
            "issuer": world.config.get("stated_issuer", issuer),
            "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token",
            "introspection_endpoint": f"{issuer}/introspect",
            "response_types_supported": ["code"],
            "grant_types_supported": world.config.get("grants", ["client_credentials", JWT_BEARER]),
            "token_endpoint_auth_methods_supported": [
                "client_secret_basic",
                "client_secret_post",
                "private_key_jwt",
            ],
            "token_endpoint_auth_signing_alg_values_supported": ["RS256", "ES256"],
            "scopes_supported": ["tools:read", "tools:write"],
        }
    )
    metadata.validate()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/.well-known/oauth-authorization-server":
            status, body, headers = 200, dict(metadata), [("Content-Type", "application/json")]
        elif path == "/token" and world.config.get("hang_token"):
            time.sleep(600)  # an authorization server that never answers (killed with the world)
            status, body, headers = 500, {}, []
        elif path in ("/token", "/introspect") and environ["REQUEST_METHOD"] == "POST":
            request = WsgiRequest(environ, f"{issuer}{path}")
            if path == "/token":
                status, body, headers = server.create_token_response(request)
            else:
                status, body, headers = server.create_endpoint_response("introspection", request)
        else:
            status, body, headers = (
                404,
                {"error": "not_found"},
                [("Content-Type", "application/json")],
            )
        text = body if isinstance(body, str) else json.dumps(body)
        start_response(f"{status} X", list(headers))
        return [text.encode()]

    return app


class _Threading(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


class Verifier:
    """The MCP server's TokenVerifier: RFC 7662 introspection at the authorization server."""

    def __init__(self, world: World, introspect_url: str, resource: str) -> None:
        self.world, self.url, self.resource = world, introspect_url, resource

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx2.AsyncClient(timeout=10) as client:
            answer = await client.post(self.url, data={"token": token}, auth=(RS_CLIENT, RS_SECRET))
        data = answer.json() if answer.status_code == 200 else {}
        if not data.get("active"):
            return None
        aud = data.get("aud")
        if not aud or not check_resource_allowed(self.resource, aud):
            return None
        return AccessToken(
            token=token,
            client_id=data["client_id"],
            scopes=data["scope"].split(),
            expires_at=data["exp"],
            resource=self.resource,
        )


def mcp_app(world: World, issuer: str, base: str) -> Any:
    transport = world.config.get("transport", "streamable_http")
    resource = f"{base}/mcp" if transport == "streamable_http" else base
    verifier = Verifier(world, f"{world.config.get('live_issuer', issuer)}/introspect", resource)
    mcp = MCPServer(
        "protected",
        token_verifier=verifier,
        auth=AuthSettings(
            issuer_url=issuer,
            resource_server_url=resource,
            validate_token_resource=False,
            required_scopes=["tools:read"],
        ),
    )

    @mcp.tool()
    def whoami() -> str:
        """Who the caller is."""
        token = get_access_token()
        return f"client={token.client_id if token else None}"

    @mcp.tool()
    def revoke_my_token() -> str:
        """Revoke the token this call was made with."""
        token = get_access_token()
        assert token is not None
        world.tokens[token.token]["revoked"] = True
        world.log(event="revoked", token=token.token)
        return "revoked"

    @mcp.tool()
    def wait_for_expiry() -> str:
        """Return once the token this call was made with has expired."""
        token = get_access_token()
        assert token is not None and token.expires_at is not None
        time.sleep(max(0.0, min(token.expires_at - time.time() + 0.2, 30)))
        return "expired"

    @mcp.tool()
    def echo_token() -> str:
        """Fail, quoting the caller's token (a server that echoes credentials)."""
        token = get_access_token()
        raise ToolError(f"access denied for bearer {token.token if token else ''}")

    app = mcp.streamable_http_app() if transport == "streamable_http" else mcp.sse_app()

    async def logged(scope: Any, receive: Any, send: Any) -> None:
        async def watch(message: dict[str, Any]) -> None:
            if message.get("type") == "http.response.start" and message.get("status") == 401:
                sent = any(k.lower() == b"authorization" for k, _ in scope.get("headers", []))
                world.log(event="401", path=scope.get("path"), with_token=sent)
            await send(message)

        await app(scope, receive, watch)

    return logged


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    world = World(config)
    as_port = free_port()
    issuer = config.get("issuer") or f"http://127.0.0.1:{as_port}"
    config["live_issuer"] = f"http://127.0.0.1:{as_port}"
    wsgi = make_server(
        "127.0.0.1",
        as_port,
        as_app(world, f"http://127.0.0.1:{as_port}"),
        server_class=_Threading,
        handler_class=_Quiet,
    )
    threading.Thread(target=wsgi.serve_forever, daemon=True).start()
    mcp_port = free_port()
    base = f"http://127.0.0.1:{mcp_port}"
    app = mcp_app(world, issuer, base)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=mcp_port, log_level="error"))

    def announce() -> None:
        while not server.started:
            time.sleep(0.02)
        path = "/mcp" if config.get("transport", "streamable_http") == "streamable_http" else "/sse"
        print(json.dumps({"as": f"http://127.0.0.1:{as_port}", "mcp": f"{base}{path}"}), flush=True)

    threading.Thread(target=announce, daemon=True).start()
    server.run()


if __name__ == "__main__":
    main()
