"""Start `oauth_world` (authlib authorization server + SDK MCP server) as a child process on free
ports, read what it logged, and make the keys and assertions the tests hand the runner."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

REPO = Path(__file__).resolve().parents[3]
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
OIDC_ISSUER = "https://token.actions.githubusercontent.test"
CLIENT_SECRET = "cs-" + uuid.uuid4().hex + "-Sec"


@dataclass
class KeyPair:
    private: str
    public: str


def key_pair() -> KeyPair:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return KeyPair(private, public)


def oidc_assertion(key: KeyPair, audience: str, lifetime: int = 300) -> str:
    """A JWT as GitHub Actions' OIDC provider would issue it (signed with the test's key)."""
    now = int(time.time())
    claims = {
        "iss": OIDC_ISSUER,
        "sub": "repo:octo/agent:ref:refs/heads/main",
        "aud": audience,
        "iat": now,
        "exp": now + lifetime,
        "jti": uuid.uuid4().hex,
    }
    return jwt.encode(claims, key.private, algorithm="RS256")


@dataclass
class World:
    as_url: str
    mcp_url: str
    log_path: Path

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        lines = self.log_path.read_text(encoding="utf-8").splitlines()
        events = [json.loads(line) for line in lines if line.strip()]
        return [e for e in events if kind is None or e["event"] == kind]

    def secrets(self) -> list[str]:
        """Every token issued and every assertion received."""
        found = [e["token"] for e in self.events("issued")]
        found += [
            e["value"] for e in self.events() if e["event"] in ("assertion", "client_assertion")
        ]
        return found


def standard_clients(cc_key: KeyPair, oidc_key: KeyPair) -> dict[str, Any]:
    return {
        "cc-secret": {
            "secret": CLIENT_SECRET,
            "methods": ["client_secret_basic", "client_secret_post"],
            "grants": ["client_credentials"],
        },
        "cc-key": {
            "public_key": cc_key.public,
            "methods": ["private_key_jwt"],
            "grants": ["client_credentials"],
        },
        "ci-workload": {
            "assertion_issuer": OIDC_ISSUER,
            "assertion_public_key": oidc_key.public,
            "methods": ["none"],
            "grants": [JWT_BEARER],
        },
    }


@contextmanager
def oauth_world(root: Path, **config: Any) -> Iterator[World]:
    """The two servers, stopped (by PID) on the way out."""
    root.mkdir(parents=True, exist_ok=True)
    log = root / "world-log.jsonl"
    path = root / "world.json"
    path.write_text(json.dumps({"log": str(log), **config}), encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.mcp.auth.oauth_world", str(path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=(root / "world-stderr.txt").open("wb"),
        stdin=subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # bounded: the child exits (EOF) if it cannot start
        if not line:
            raise RuntimeError(
                "oauth_world did not start: "
                + (root / "world-stderr.txt").read_text(encoding="utf-8", errors="replace")
            )
        urls = json.loads(line)
        yield World(urls["as"], urls["mcp"], log)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
