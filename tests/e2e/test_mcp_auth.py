"""MCP servers behind OAuth, through the CLI (DESIGN 26): a real authorization server (authlib)
and a real MCP server (the mcp SDK) that checks every token by introspection; a scripted model
calls the server's tools.

Each of the four `auth:` types gets a token and the call succeeds; a short-lived token is renewed
before it expires; a revoked token gets one 401 and a fresh token; a wrong secret, an
unreachable authorization server, and metadata offering only `authorization_code` end the run
before any model call. No token, secret, key or assertion reaches any file, the console or the
HTML export.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    Done,
    Scenario,
    call,
    clean_env,
    complete,
    log_schema_errors,
    reply,
    run_one,
)
from tests.fakes.otlp_receiver import OtlpReceiver
from tests.mcp.auth.world import (
    CLIENT_SECRET,
    World,
    key_pair,
    oauth_world,
    oidc_assertion,
    standard_clients,
)

CC_KEY = key_pair()
OIDC_KEY = key_pair()
CLIENTS = standard_clients(CC_KEY, OIDC_KEY)


def _task(world: World, auth: dict[str, Any], transport: str = "streamable_http") -> dict[str, Any]:
    return {
        "extensions": {
            "workspace": {"enabled": False},
            "tracker": {"type": transport, "uri": world.mcp_url, "auth": auth},
        }
    }


def _run(root: Path, world: World, auth: dict[str, Any], steps: list[Any], **kw: Any) -> Done:
    scenario = Scenario(
        task=_task(world, auth, kw.pop("transport", "streamable_http")),
        steps=steps,
        args=["run", "t.yaml", "--model", "openai:gpt-4.1", "--out", "OUT", "--output", "json"],
        **kw,
    )
    return run_one(scenario, root)


def _calls(done: Done) -> list[tuple[str, bool, str]]:
    return [(c["tool"], c["is_error"], c["result"]) for c in done.events("tool_call")]


def _assert_nothing_leaked(done: Done, values: list[str]) -> None:
    """No value, nor its JSON-escaped spelling, in any file under the run folder's OUT, the
    console, or the HTML export of the run."""
    page = done.root / "report.html"
    exported = subprocess.run(
        [sys.executable, "-m", "runner", "log", "export", "--format", "html", "OUT", "-o", page],
        cwd=done.root,
        env=clean_env(done.root),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert exported.returncode == 0, exported.stderr
    texts = {"stdout": done.stdout, "stderr": done.stderr, "export": exported.stdout}
    texts["report.html"] = page.read_text(encoding="utf-8")
    for path in done.out.rglob("*"):
        if path.is_file():
            texts[str(path.relative_to(done.root))] = path.read_text(
                encoding="utf-8", errors="replace"
            )
    forms = {form for value in values for form in (value, json.dumps(value)[1:-1])}
    assert len(values) > 0
    leaks = [(name, form[:12]) for name, text in texts.items() for form in forms if form in text]
    assert leaks == []


def _key_lines(pem: str) -> list[str]:
    return [line for line in pem.splitlines() if line and not line.startswith("-----")]


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
        done = _run(
            tmp_path / "run",
            world,
            auth,
            [reply(call("whoami")), complete("ok")],
            env={"TRACKER_CLIENT_SECRET": CLIENT_SECRET},
            transport=transport,
        )
        issued = world.events("issued")
    assert done.code == 0, done.explain()
    assert _calls(done) == [("whoami", False, "client=cc-secret")]
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
    _assert_nothing_leaked(done, [CLIENT_SECRET, *world.secrets()])


def test_client_credentials_with_a_private_key_signs_a_jwt_assertion(tmp_path: Path) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world:
        auth = {
            "type": "client_credentials",
            "client_id": "cc-key",
            "private_key": "${TRACKER_KEY}",
            "scopes": ["tools:read"],
        }
        done = _run(
            tmp_path / "run",
            world,
            auth,
            [reply(call("whoami")), complete("ok")],
            env={"TRACKER_KEY": CC_KEY.private},
        )
        assertions = world.events("client_assertion")
        secrets = world.secrets()
    assert done.code == 0, done.explain()
    assert _calls(done) == [("whoami", False, "client=cc-key")]
    assert len(assertions) == 1
    _assert_nothing_leaked(done, [*_key_lines(CC_KEY.private), *secrets])


def test_jwt_bearer_exchanges_an_oidc_assertion_from_a_file(tmp_path: Path) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world:
        assertion = oidc_assertion(OIDC_KEY, world.as_url)
        auth = {"type": "jwt_bearer", "assertion_file": "id-token.jwt", "scopes": ["tools:read"]}
        done = _run(
            tmp_path / "run",
            world,
            auth,
            [reply(call("whoami")), complete("ok")],
            extra_files={"id-token.jwt": assertion + "\n"},
        )
        received = world.events("assertion")
        secrets = world.secrets()
    assert done.code == 0, done.explain()
    assert _calls(done) == [("whoami", False, "client=ci-workload")]
    assert [e["value"] for e in received] == [assertion]
    (record,) = done.log().header["mcp_auth"]
    assert (record["type"], record["issuer"]) == ("jwt_bearer", world.as_url)
    _assert_nothing_leaked(done, [assertion, *secrets])


def test_jwt_bearer_runs_an_assertion_command_without_a_shell(tmp_path: Path) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world:
        assertion = oidc_assertion(OIDC_KEY, world.as_url)
        printer = f"import sys; sys.stdout.write({assertion!r})"
        auth = {
            "type": "jwt_bearer",
            "assertion_command": [sys.executable, "-c", printer],
            "scopes": ["tools:read"],
        }
        done = _run(tmp_path / "run", world, auth, [reply(call("whoami")), complete("ok")])
        secrets = world.secrets()
    assert done.code == 0, done.explain()
    assert _calls(done) == [("whoami", False, "client=ci-workload")]
    _assert_nothing_leaked(done, [assertion, *secrets])


def _minted_token(world: World) -> str:
    """A token the test gets from the authorization server itself, as a CI step would."""
    import httpx2

    answer = httpx2.post(
        f"{world.as_url}/token",
        data={"grant_type": "client_credentials", "scope": "tools:read", "resource": world.mcp_url},
        auth=("cc-secret", CLIENT_SECRET),
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])


def test_bearer_sends_a_token_from_the_environment(tmp_path: Path) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world:
        token = _minted_token(world)
        done = _run(
            tmp_path / "run",
            world,
            {"type": "bearer", "token": "${TRACKER_TOKEN}"},
            [reply(call("whoami")), complete("ok")],
            env={"TRACKER_TOKEN": token},
        )
    assert done.code == 0, done.explain()
    assert _calls(done) == [("whoami", False, "client=cc-secret")]
    (record,) = done.log().header["mcp_auth"]
    assert record == {
        "server": "tracker",
        "type": "bearer",
        "issuer": None,
        "scopes": [],
        "expires_at": None,
        "renewals": 0,
    }
    _assert_nothing_leaked(done, [token])


def test_command_prints_json_headers_and_runs_again_after_a_401(tmp_path: Path) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world:
        tokens = [_minted_token(world), _minted_token(world)]
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
        done = _run(
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
    assert _calls(done) == [
        ("revoke_my_token", False, "revoked"),
        ("whoami", False, "client=cc-secret"),
    ]
    assert (tmp_path / "runs").read_text() == "2"
    assert len(unauthorized) == 1
    _assert_nothing_leaked(done, tokens)


def test_a_revoked_token_gets_one_401_then_a_fresh_token_and_the_call_succeeds(
    tmp_path: Path,
) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world:
        auth = {
            "type": "client_credentials",
            "client_id": "cc-secret",
            "client_secret": CLIENT_SECRET,
        }
        done = _run(
            tmp_path / "run",
            world,
            auth,
            [reply(call("revoke_my_token")), reply(call("whoami")), complete("ok")],
        )
        unauthorized = [e for e in world.events("401") if e["with_token"]]
        issued = world.events("issued")
        secrets = world.secrets()
    assert done.code == 0, done.explain()
    assert _calls(done) == [
        ("revoke_my_token", False, "revoked"),
        ("whoami", False, "client=cc-secret"),
    ]
    assert len(unauthorized) == 1
    assert len(issued) == 2
    assert json.loads(done.stdout)["tasks"][0]["mcp_auth"][0]["renewals"] == 1
    _assert_nothing_leaked(done, [CLIENT_SECRET, *secrets])


def test_a_token_that_expires_mid_task_is_renewed_before_it_is_refused(tmp_path: Path) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS, lifetime=3) as world:
        auth = {
            "type": "client_credentials",
            "client_id": "cc-secret",
            "client_secret": CLIENT_SECRET,
        }
        done = _run(
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
    assert [(tool, error) for tool, error, _ in _calls(done)] == [
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
        done = _run(
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
    ((tool, is_error, result),) = _calls(done)
    assert (tool, is_error) == ("echo_token", True)
    assert "access denied for bearer ***" in result
    # As for every secret (DESIGN 7b), the model itself gets the tool result as the server sent
    # it; what is written anywhere is masked.
    _assert_nothing_leaked(done, [CLIENT_SECRET, *secrets])
    assert spans, "the run exported no span"
    leaked = [s for s in [CLIENT_SECRET, *secrets] for body in bodies if s.encode() in body]
    assert leaked == []


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
                _key_lines(OTHER_KEY.private),
            ),
            "assertion": ({"type": "jwt_bearer", "assertion_file": "id.jwt"}, [wrong_assertion]),
        }[case]
        done = _run(
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
    _assert_nothing_leaked(done, secrets)


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
        done = _run(tmp_path / "run", world, auth, [complete("never")])
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
        done = _run(tmp_path / "run", world, auth, [complete("never")])
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
        done = _run(tmp_path / "run", world, auth, [complete("never")])
        took = time.monotonic() - started
    assert done.code == 2, done.explain()
    assert done.requests == []
    reason = json.loads(done.stdout)["tasks"][0]["reason"]
    assert "'tracker'" in reason and "authorization_code" in reason
    assert "trying again" not in done.stderr  # refused at once, never retried
    task_s = json.loads(done.stdout)["tasks"][0]["duration_s"]
    print(f"authorization_code-only metadata: exit 2, process {took:.2f} s, task {task_s:.2f} s")


def test_on_github_actions_each_token_obtained_mid_run_is_masked_with_add_mask(
    tmp_path: Path,
) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS) as world:
        auth = {
            "type": "client_credentials",
            "client_id": "cc-secret",
            "client_secret": CLIENT_SECRET,
        }
        done = _run(
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


def test_an_authorization_server_that_never_answers_ends_the_run_with_exit_4(
    tmp_path: Path,
) -> None:
    with oauth_world(tmp_path / "world", clients=CLIENTS, hang_token=True) as world:
        auth = {
            "type": "client_credentials",
            "client_id": "cc-secret",
            "client_secret": CLIENT_SECRET,
        }
        done = _run(
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
    _assert_nothing_leaked(done, [CLIENT_SECRET])
