"""The real authlib authorization server of `oauth_world`, served in a thread of the test process
(wsgiref on a free port of 127.0.0.1), for the in-process tests of the token requests and the
auth flow: no child process to start per test module, so a mutant's run stays short. Also an
HTTP client that records every request the runner's code sends (the process's edge)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import make_server

import httpx2

from tests.mcp.auth import oauth_world
from tests.mcp.auth.world import World


@contextmanager
def authorization_server(root: Path, **config: Any) -> Iterator[World]:
    """The authorization server with `config` (oauth_world's keys: clients, grants, lifetime,
    stated_issuer); its `mcp_url` is a path on the same origin, where no MCP server answers (so
    discovery takes the server's origin as its authorization server). Stopped on the way out."""
    root.mkdir(parents=True, exist_ok=True)
    log = root / "as-log.jsonl"
    world = oauth_world.World({"log": str(log), **config})
    wsgi = make_server(
        "127.0.0.1",
        0,
        lambda environ, start: [],
        server_class=oauth_world._Threading,
        handler_class=oauth_world._Quiet,
    )
    issuer = f"http://127.0.0.1:{wsgi.server_port}"
    wsgi.set_app(oauth_world.as_app(world, issuer))
    thread = threading.Thread(target=wsgi.serve_forever, daemon=True)
    thread.start()
    try:
        yield World(issuer, f"{issuer}/mcp", log)
    finally:
        wsgi.shutdown()
        wsgi.server_close()
        thread.join()


@dataclass
class Sent:
    """A request as it left the client: method, URL, headers, form fields."""

    method: str
    url: str
    headers: dict[str, str]
    form: dict[str, str] = field(default_factory=dict)


def recording_client(sent: list[Sent], **options: Any) -> httpx2.AsyncClient:
    """An AsyncClient that appends every request it sends to `sent`."""

    async def record(request: httpx2.Request) -> None:
        body = request.content.decode() if request.method == "POST" else ""
        form = {k: v[0] for k, v in parse_qs(body).items()}
        sent.append(Sent(request.method, str(request.url), dict(request.headers), form))

    return httpx2.AsyncClient(event_hooks={"request": [record]}, **options)
