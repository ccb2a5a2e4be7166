"""The `auth:` block (runner/mcp/auth/config.py): each type's fields checked offline, its
secrets listed for masking, and `validate` through the CLI contacting nothing."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from runner.mcp import ExtensionConfig, auth_secret_values
from tests.e2e.conftest import clean_env
from tests.mcp.auth.world import key_pair

KEY = key_pair()


def _ext(auth: dict[str, Any], **more: Any) -> ExtensionConfig:
    return ExtensionConfig.model_validate(
        {"type": "streamable_http", "uri": "https://mcp.example.com/mcp", "auth": auth, **more}
    )


@pytest.mark.parametrize(
    "auth",
    [
        {"type": "bearer", "token": "tok-123456789"},
        {"type": "command", "command": ["print-token", "--json"], "timeout": 5},
        {"type": "command", "command": "print-token --audience 'a b'"},
        {"type": "client_credentials", "client_id": "c", "client_secret": "s3cret-value"},
        {"type": "client_credentials", "client_id": "c", "private_key": KEY.private},
        {"type": "jwt_bearer", "assertion_file": "/tmp/id-token"},
        {"type": "jwt_bearer", "assertion_command": ["sh", "-c", "cat $F"], "issuer": "https://a"},
    ],
)
def test_each_type_is_accepted_with_the_fields_it_needs(auth: dict[str, Any]) -> None:
    assert _ext(auth).auth is not None


@pytest.mark.parametrize(
    ("auth", "said"),
    [
        ({"type": "oauth"}, "does not match any of the expected tags"),
        ({"type": "bearer"}, "token"),
        ({"type": "bearer", "token": ""}, "token"),
        ({"type": "command", "command": []}, "`command` is empty"),
        ({"type": "command", "command": "  "}, "`command` is empty"),
        ({"type": "command", "command": ["x"], "timeout": 0}, "timeout"),
        ({"type": "client_credentials", "client_id": "c"}, "exactly one of `client_secret`"),
        (
            {
                "type": "client_credentials",
                "client_id": "c",
                "client_secret": "s",
                "private_key": KEY.private,
            },
            "exactly one of `client_secret`",
        ),
        ({"type": "client_credentials", "client_id": "c", "client_secret": ""}, "is empty"),
        (
            {"type": "client_credentials", "client_id": "c", "private_key": "/keys/k.pem"},
            "not a PEM",
        ),
        ({"type": "client_credentials", "client_secret": "s"}, "client_id"),
        (
            {"type": "client_credentials", "client_id": "c", "client_secret": "s", "issuer": "a.b"},
            "http(s) URL",
        ),
        ({"type": "jwt_bearer"}, "exactly one of `assertion_file`"),
        (
            {"type": "jwt_bearer", "assertion_file": "f", "assertion_command": ["c"]},
            "exactly one of",
        ),
        ({"type": "jwt_bearer", "assertion_command": []}, "`assertion_command` is empty"),
        ({"type": "bearer", "token": "t", "extra": 1}, "extra"),
    ],
)
def test_a_bad_auth_block_is_refused_naming_the_problem(auth: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError) as caught:
        _ext(auth)
    assert said.lower() in str(caught.value).lower()


def test_auth_is_refused_on_a_stdio_server() -> None:
    with pytest.raises(ValidationError, match="sse and streamable_http"):
        ExtensionConfig.model_validate(
            {"type": "stdio", "cmd": "x", "auth": {"type": "bearer", "token": "t"}}
        )


def test_auth_and_an_authorization_header_are_not_both_allowed() -> None:
    with pytest.raises(ValidationError, match="not both"):
        _ext({"type": "bearer", "token": "t"}, headers={"authorization": "Bearer x"})


def test_every_secret_of_each_type_is_listed_for_masking() -> None:
    bearer = _ext({"type": "bearer", "token": "tok-123456789"}).auth
    secret = _ext({"type": "client_credentials", "client_id": "c", "client_secret": "sec"}).auth
    key = _ext({"type": "client_credentials", "client_id": "c", "private_key": KEY.private}).auth
    jwt = _ext(
        {"type": "jwt_bearer", "assertion_file": "f", "client_id": "c", "client_secret": "s2"}
    ).auth
    assert bearer is not None and secret is not None and key is not None and jwt is not None
    assert auth_secret_values(bearer) == {"token": "tok-123456789"}
    assert auth_secret_values(secret) == {"client_secret": "sec"}
    assert auth_secret_values(jwt) == {"client_secret": "s2"}
    found = auth_secret_values(key)
    assert found["private_key"] == KEY.private
    body = [line for line in KEY.private.splitlines() if not line.startswith("-----")]
    # Each line of the key too: an error quoting one line of it is still masked.
    assert set(body[:-1]) <= set(found.values())


class _Listener:
    """A socket that counts the connections made to it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


def _validate(
    root: Path, task: dict[str, Any], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    (root / "w").mkdir(exist_ok=True)
    (root / "t.yaml").write_text(
        yaml.safe_dump({"name": "t", "workdir": "w", "prompt": "p", **task})
    )
    return subprocess.run(
        [sys.executable, "-m", "runner", "validate", "t.yaml"],
        cwd=root,
        env=clean_env(root, env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_validate_checks_auth_without_contacting_the_server_or_its_authorization_server(
    tmp_path: Path,
) -> None:
    listener = _Listener()
    try:
        url = f"http://127.0.0.1:{listener.port}"
        good = {
            "extensions": {
                "tracker": {
                    "type": "streamable_http",
                    "uri": f"{url}/mcp",
                    "auth": {
                        "type": "client_credentials",
                        "client_id": "c",
                        "client_secret": "${TRACKER_SECRET}",
                        "issuer": url,
                    },
                },
                "ci": {
                    "type": "sse",
                    "uri": f"{url}/sse",
                    "auth": {"type": "command", "command": ["/does/not/exist"]},
                },
            }
        }
        done = _validate(tmp_path, good, {"TRACKER_SECRET": "cs-validate-secret-1"})
        assert done.returncode == 0, done.stdout + done.stderr
        assert listener.accepted == 0
        assert "cs-validate-secret-1" not in done.stdout + done.stderr
    finally:
        listener.close()


def test_validate_names_the_auth_field_that_is_wrong(tmp_path: Path) -> None:
    bad = {
        "extensions": {
            "tracker": {
                "type": "streamable_http",
                "uri": "http://127.0.0.1:9/mcp",
                "auth": {"type": "client_credentials", "client_id": "c"},
            }
        }
    }
    done = _validate(tmp_path, bad, {})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "extensions.tracker.auth" in done.stdout + done.stderr
    assert "client_secret" in done.stdout + done.stderr
