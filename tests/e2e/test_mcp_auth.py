"""MCP servers behind OAuth, through the CLI (DESIGN 26): a real authorization server (authlib)
and a real MCP server (the mcp SDK) that checks every token by introspection; a scripted model
calls the server's tools. Each of the four `auth:` types gets a token and the call succeeds; a
short-lived token is renewed before it expires; a revoked token gets one 401 and a fresh token;
no token, secret, key or assertion reaches any file, the console, the HTML export or a span.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import call, complete, log_schema_errors, reply
from tests.e2e.oauth import (
    CC_KEY,
    CLIENTS,
    OIDC_KEY,
    assert_nothing_leaked,
    key_lines,
    minted_token,
    run_auth,
    tool_calls,
)
from tests.fakes.otlp_receiver import OtlpReceiver
from tests.mcp.auth.world import CLIENT_SECRET, oauth_world, oidc_assertion


@pytest.mark.parametrize("transport", ["streamable_http", "sse"])
def test_client_credentials_with_a_secret_gets_a_token_and_the_tool_call_succeeds(
    tmp_path: Path, transport: str
) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS, transport=transport) as world:
        auth = {
            "type": "client_credentials",
            "client_id": "cc-secret",
            "client_secret": "${TRACKER_CLIENT_SECRET}",
            "scopes": ["tools:read"],
        }
        done = run_auth(
            tmp_path / "run",
            world,
            auth,
            [reply(call("whoami")), complete("ok")],
            env={"TRACKER_CLIENT_SECRET": CLIENT_SECRET},
            transport=transport,
        )
        issued = world.events("issued")
    assert done.code == 0, done.explain()
    assert tool_calls(done) == [("whoami", False, "client=cc-secret")]
    # The token was asked for this server (RFC 8707) and the MCP server accepted it.
    assert issued and issued[0]["resource"].startswith(world.mcp_url.rsplit("/", 1)[0])
    (record,) = done.log().header["mcp_auth"]
    assert log_schema_errors(done.log().path) == []
    assert record["server"] == "tracker"
    assert record["type"] == "client_credentials"
    assert record["issuer"] == world.as_url
    assert record["scopes"] == ["tools:read"]
    assert record["expires_at"]
    summary = json.loads(done.stdout)
    assert summary["tasks"][0]["mcp_auth"][0]["issuer"] == world.as_url
    assert_nothing_leaked(done, [CLIENT_SECRET, *world.secrets()])


def test_client_credentials_with_a_private_key_signs_a_jwt_assertion(tmp_path: Path) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world:
        auth = {
            "type": "client_credentials",
            "client_id": "cc-key",
            "private_key": "${TRACKER_KEY}",
            "scopes": ["tools:read"],
        }
        done = run_auth(
            tmp_path / "run",
            world,
            auth,
            [reply(call("whoami")), complete("ok")],
            env={"TRACKER_KEY": CC_KEY.private},
        )
        assertions = world.events("client_assertion")
        secrets = world.secrets()
    assert done.code == 0, done.explain()
    assert tool_calls(done) == [("whoami", False, "client=cc-key")]
    assert len(assertions) == 1
    assert_nothing_leaked(done, [*key_lines(CC_KEY.private), *secrets])


def test_jwt_bearer_exchanges_an_oidc_assertion_from_a_file(tmp_path: Path) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world:
        assertion = oidc_assertion(OIDC_KEY, world.as_url)
        auth = {"type": "jwt_bearer", "assertion_file": "id-token.jwt", "scopes": ["tools:read"]}
        done = run_auth(
            tmp_path / "run",
            world,
            auth,
            [reply(call("whoami")), complete("ok")],
            extra_files={"id-token.jwt": assertion + "\n"},
        )
        received = world.events("assertion")
        secrets = world.secrets()
    assert done.code == 0, done.explain()
    assert tool_calls(done) == [("whoami", False, "client=ci-workload")]
    assert [e["value"] for e in received] == [assertion]
    (record,) = done.log().header["mcp_auth"]
    assert (record["type"], record["issuer"]) == ("jwt_bearer", world.as_url)
    assert_nothing_leaked(done, [assertion, *secrets])


def test_jwt_bearer_runs_an_assertion_command_without_a_shell(tmp_path: Path) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world:
        assertion = oidc_assertion(OIDC_KEY, world.as_url)
        printer = f"import sys; sys.stdout.write({assertion!r})"
        auth = {
            "type": "jwt_bearer",
            "assertion_command": [sys.executable, "-c", printer],
            "scopes": ["tools:read"],
        }
        done = run_auth(tmp_path / "run", world, auth, [reply(call("whoami")), complete("ok")])
        secrets = world.secrets()
    assert done.code == 0, done.explain()
    assert tool_calls(done) == [("whoami", False, "client=ci-workload")]
    assert_nothing_leaked(done, [assertion, *secrets])


def test_bearer_sends_a_token_from_the_environment(tmp_path: Path) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world:
        token = minted_token(world)
        done = run_auth(
            tmp_path / "run",
            world,
            {"type": "bearer", "token": "${TRACKER_TOKEN}"},
            [reply(call("whoami")), complete("ok")],
            env={"TRACKER_TOKEN": token},
        )
    assert done.code == 0, done.explain()
    assert tool_calls(done) == [("whoami", False, "client=cc-secret")]
    (record,) = done.log().header["mcp_auth"]
    assert record == {
        "server": "tracker",
        "type": "bearer",
        "issuer": None,
        "scopes": [],
        "expires_at": None,
        "renewals": 0,
    }
    assert_nothing_leaked(done, [token])


def test_command_prints_json_headers_and_runs_again_after_a_401(tmp_path: Path) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world:
        tokens = [minted_token(world), minted_token(world)]
        # Each run prints the next token: the second only after the first was revoked.
        script = tmp_path / "token.py"
        script.write_text(
            "import json, pathlib, sys\n"
            f"tokens = {tokens!r}\n"
            f"state = pathlib.Path({str(tmp_path / 'runs')!r})\n"
            "n = int(state.read_text()) if state.exists() else 0\n"
            "state.write_text(str(n + 1))\n"
            "print(json.dumps({'headers': {'Authorization': 'Bearer ' + tokens[min(n, 1)]},"
            " 'expires_in': 3600}))\n",
            encoding="utf-8",
        )
        done = run_auth(
            tmp_path / "run",
            world,
            {"type": "command", "command": [sys.executable, str(script)]},
            [
                reply(call("revoke_my_token")),
                reply(call("whoami")),
                complete("ok"),
            ],
        )
        unauthorized = [e for e in world.events("401") if e["with_token"]]
    assert done.code == 0, done.explain()
    assert tool_calls(done) == [
        ("revoke_my_token", False, "revoked"),
        ("whoami", False, "client=cc-secret"),
    ]
    assert (tmp_path / "runs").read_text() == "2"
    assert len(unauthorized) == 1
    assert_nothing_leaked(done, tokens)


def test_a_revoked_token_gets_one_401_then_a_fresh_token_and_the_call_succeeds(
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
        )
        unauthorized = [e for e in world.events("401") if e["with_token"]]
        issued = world.events("issued")
        secrets = world.secrets()
    assert done.code == 0, done.explain()
    assert tool_calls(done) == [
        ("revoke_my_token", False, "revoked"),
        ("whoami", False, "client=cc-secret"),
    ]
    assert len(unauthorized) == 1
    assert len(issued) == 2
    assert json.loads(done.stdout)["tasks"][0]["mcp_auth"][0]["renewals"] == 1
    assert_nothing_leaked(done, [CLIENT_SECRET, *secrets])


def test_a_token_that_expires_mid_task_is_renewed_before_it_is_refused(tmp_path: Path) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS, lifetime=3) as world:
        auth = {
            "type": "client_credentials",
            "client_id": "cc-secret",
            "client_secret": CLIENT_SECRET,
        }
        done = run_auth(
            tmp_path / "run",
            world,
            auth,
            [
                reply(call("wait_for_expiry")),
                reply(call("whoami")),
                reply(call("wait_for_expiry")),
                reply(call("whoami")),
                complete("ok"),
            ],
        )
        unauthorized = [e for e in world.events("401") if e["with_token"]]
        issued = world.events("issued")
    assert done.code == 0, done.explain()
    assert [(tool, error) for tool, error, _ in tool_calls(done)] == [
        ("wait_for_expiry", False),
        ("whoami", False),
        ("wait_for_expiry", False),
        ("whoami", False),
    ]
    assert unauthorized == []  # renewed before expiry: the server never refused one
    assert len(issued) >= 3


def test_a_server_echoing_the_token_in_an_error_is_masked_also_in_otel_spans(
    tmp_path: Path,
) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world, OtlpReceiver() as receiver:
        auth = {
            "type": "client_credentials",
            "client_id": "cc-secret",
            "client_secret": CLIENT_SECRET,
        }
        done = run_auth(
            tmp_path / "run",
            world,
            auth,
            [reply(call("echo_token")), complete("ok")],
            env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint},
        )
        secrets = world.secrets()
        spans = list(receiver.spans)
        bodies = list(receiver.bodies)
    assert done.code == 0, done.explain()
    ((tool, is_error, result),) = tool_calls(done)
    assert (tool, is_error) == ("echo_token", True)
    assert "access denied for bearer ***" in result
    # As for every secret (DESIGN 7b), the model itself gets the tool result as the server sent
    # it; what is written anywhere is masked.
    assert_nothing_leaked(done, [CLIENT_SECRET, *secrets])
    assert spans, "the run exported no span"
    leaked = [s for s in [CLIENT_SECRET, *secrets] for body in bodies if s.encode() in body]
    assert leaked == []
