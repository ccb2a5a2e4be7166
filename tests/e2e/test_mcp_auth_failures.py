"""MCP auth that cannot work ends the run before any model call (DESIGN 26), through the CLI: a
wrong secret, key or assertion and metadata that offers only `authorization_code` or names
another issuer (exit 2); an authorization server unreachable or silent (exit 4). On GitHub
Actions every token obtained mid-run is masked with `::add-mask::`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import call, complete, reply
from tests.e2e.oauth import CLIENTS, assert_nothing_leaked, key_lines, run_auth
from tests.mcp.auth.world import CLIENT_SECRET, key_pair, oauth_world, oidc_assertion

WRONG_SECRET = "cs-wrong-" + "x" * 20
OTHER_KEY = key_pair()


@pytest.mark.parametrize(
    ("case", "error"),
    [
        ("client_secret", "invalid_client"),
        ("private_key", "invalid_client"),
        ("assertion", "invalid_grant"),
    ],
)
def test_a_wrong_credential_ends_the_run_with_exit_2_before_any_model_call(
    tmp_path: Path, case: str, error: str
) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world:
        wrong_assertion = oidc_assertion(OTHER_KEY, world.as_url)  # signed by a key not trusted
        auth, secrets = {
            "client_secret": (
                {
                    "type": "client_credentials",
                    "client_id": "cc-secret",
                    "client_secret": WRONG_SECRET,
                },
                [WRONG_SECRET],
            ),
            "private_key": (
                {
                    "type": "client_credentials",
                    "client_id": "cc-key",
                    "private_key": OTHER_KEY.private,
                },
                key_lines(OTHER_KEY.private),
            ),
            "assertion": ({"type": "jwt_bearer", "assertion_file": "id.jwt"}, [wrong_assertion]),
        }[case]
        done = run_auth(
            tmp_path / "run",
            world,
            auth,
            [complete("never")],
            extra_files={"id.jwt": wrong_assertion},
        )
        issued = world.events("issued")
        secrets += world.secrets()
    assert done.code == 2, done.explain()
    assert done.requests == []
    assert issued == []
    reason = json.loads(done.stdout)["tasks"][0]["reason"]
    assert "'tracker'" in reason and error in reason
    assert "trying again" not in done.stderr  # a refusal is not retried
    assert_nothing_leaked(done, secrets)


@pytest.mark.parametrize("where", ["metadata", "pinned"])
def test_an_authorization_server_that_is_not_the_expected_issuer_gets_no_credential(
    tmp_path: Path, where: str
) -> None:
    # `metadata`: its metadata names another issuer (RFC 8414 section 3.3); `pinned`: the task
    # pins an issuer the MCP server's metadata does not list.
    config = {"stated_issuer": "https://evil.example"} if where == "metadata" else {}
    with oauth_world(tmp_path / "world", clients=CLIENTS, **config) as world:
        auth: dict[str, Any] = {
            "type": "client_credentials",
            "client_id": "cc-secret",
            "client_secret": CLIENT_SECRET,
        }
        if where == "pinned":
            auth["issuer"] = "https://auth.example.com"
        done = run_auth(tmp_path / "run", world, auth, [complete("never")])
        issued = world.events("issued")
    assert done.code == 2, done.explain()
    assert done.requests == [] and issued == []
    reason = json.loads(done.stdout)["tasks"][0]["reason"]
    expected = "https://evil.example" if where == "metadata" else "https://auth.example.com"
    assert "'tracker'" in reason and expected in reason


def test_an_unreachable_authorization_server_ends_the_run_with_exit_4(tmp_path: Path) -> None:
    dead = "http://127.0.0.1:9"  # discard: nothing answers there
    with oauth_world(tmp_path / "world", clients=CLIENTS, issuer=dead) as world:
        auth = {
            "type": "client_credentials",
            "client_id": "cc-secret",
            "client_secret": CLIENT_SECRET,
        }
        done = run_auth(tmp_path / "run", world, auth, [complete("never")])
    assert done.code == 4, done.explain()
    assert done.requests == []
    reason = json.loads(done.stdout)["tasks"][0]["reason"]
    assert "'tracker'" in reason and dead in reason


def test_metadata_offering_only_authorization_code_ends_the_run_with_exit_2(
    tmp_path: Path,
) -> None:
    with oauth_world(
        tmp_path / "world", clients=CLIENTS, grants=["authorization_code", "refresh_token"]
    ) as world:
        auth = {
            "type": "client_credentials",
            "client_id": "cc-secret",
            "client_secret": CLIENT_SECRET,
        }
        started = time.monotonic()
        done = run_auth(tmp_path / "run", world, auth, [complete("never")])
        took = time.monotonic() - started
    assert done.code == 2, done.explain()
    assert done.requests == []
    reason = json.loads(done.stdout)["tasks"][0]["reason"]
    assert "'tracker'" in reason and "authorization_code" in reason
    assert "trying again" not in done.stderr  # refused at once, never retried
    task_s = json.loads(done.stdout)["tasks"][0]["duration_s"]
    print(f"authorization_code-only metadata: exit 2, process {took:.2f} s, task {task_s:.2f} s")


def test_an_authorization_server_that_never_answers_ends_the_run_with_exit_4(
    tmp_path: Path,
) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS, hang_token=True) as world:
        auth = {
            "type": "client_credentials",
            "client_id": "cc-secret",
            "client_secret": CLIENT_SECRET,
        }
        done = run_auth(
            tmp_path / "run",
            world,
            auth,
            [complete("never")],
            env={"AGENT_RUNNER_MCP_STARTUP_TIMEOUT_S": "3"},
        )
    assert done.code == 4, done.explain()
    assert done.requests == []
    reason = json.loads(done.stdout)["tasks"][0]["reason"]
    assert "'tracker'" in reason and "within 3 s" in reason
    assert_nothing_leaked(done, [CLIENT_SECRET])


def test_on_github_actions_each_token_obtained_mid_run_is_masked_with_add_mask(
    tmp_path: Path,
) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world:
        auth = {
            "type": "client_credentials",
            "client_id": "cc-secret",
            "client_secret": CLIENT_SECRET,
        }
        done = run_auth(
            tmp_path / "run",
            world,
            auth,
            [reply(call("revoke_my_token")), reply(call("whoami")), complete("ok")],
            env={"GITHUB_ACTIONS": "true"},
        )
        tokens = [e["token"] for e in world.events("issued")]
    assert done.code == 0, done.explain()
    assert len(tokens) == 2
    console = (done.stdout + done.stderr).splitlines()
    for token in tokens:
        # Printed only to mask it (alone, and as the header value `Bearer ...`).
        shown = [line for line in console if token in line]
        assert f"::add-mask::{token}" in shown
        assert all(line.startswith("::add-mask::") for line in shown), shown
    assert f"::add-mask::{CLIENT_SECRET}" in console
