"""The Redactor's rules (runner/redact.py), and the log writer with secrets like its fields."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from runner.redact import MASK, MIN_LENGTH, SUBSTRING_LENGTH, Redactor
from runner.sessionlog import SessionLogWriter, read_session
from tests.sessionlog.scenarios import header


@pytest.mark.parametrize("secret", ["sess", "sion", "session_id", "system_prompt", "type"])
def test_a_secret_that_is_part_of_a_header_key_does_not_break_the_log(
    tmp_path: Path, secret: str
) -> None:
    # The header's field names are the format's: masking one lost the field (a KeyError).
    w = SessionLogWriter.create(tmp_path, header("keys", golden=False), Redactor([secret]))
    w.message("user", f"the value is {secret}.", 0)
    w.close()
    record = read_session(w.path)
    assert "system_prompt" in record.header and "session_id" in record.header
    assert record.events[0]["content"] == f"the value is {MASK}."


def test_secrets_are_replaced_longest_first() -> None:
    # Shorter first would mask `abcdefgh` inside the longer one and leave its tail `ij` readable.
    redactor = Redactor(["abcdefgh", "abcdefghij"])
    assert redactor.text("x abcdefghij y abcdefgh z") == f"x {MASK} y {MASK} z"
    assert Redactor(["abcd", "abcdef"]).text("abcdef abcd") == f"{MASK} {MASK}"


@pytest.mark.parametrize("secret", ['pass"word!', "back\\slash99", "tab\there-it-is", "é-secret-é"])
def test_a_secret_with_json_escapes_is_found_in_a_json_line_and_in_json_text(
    tmp_path: Path, secret: str
) -> None:
    redactor = Redactor([secret])
    quoted = json.dumps({"token": secret})  # a tool result that prints the secret as JSON
    assert secret not in redactor.text(quoted)
    assert json.dumps(secret)[1:-1] not in redactor.text(quoted)
    assert json.dumps(secret, ensure_ascii=False)[1:-1] not in redactor.text(
        json.dumps({"token": secret}, ensure_ascii=False)
    )
    w = SessionLogWriter.create(tmp_path, header("esc", golden=False), redactor)
    w.message("assistant", f"it is {secret} and {quoted}", 1)
    w.close()
    raw = w.path.read_text(encoding="utf-8")
    assert json.dumps(secret)[1:-1] not in raw
    assert json.dumps(secret, ensure_ascii=False)[1:-1] not in raw
    assert read_session(w.path).events[0]["content"].startswith(f"it is {MASK} and ")


def test_tuples_are_masked_like_lists() -> None:
    redactor = Redactor(["hunter22-secret"])
    assert redactor.data(("a hunter22-secret", ["hunter22-secret"])) == [f"a {MASK}", [MASK]]
    assert redactor.data({"k": ("hunter22-secret",)}) == {"k": [MASK]}


def test_a_short_secret_is_masked_only_where_it_stands_alone() -> None:
    redactor = Redactor(["test", "123456"])
    assert redactor.short_secrets == ("123456", "test")
    text = "pytest test_x.py test; pin=123456 91234567 '123456' test-run"
    assert (
        redactor.text(text) == f"pytest test_x.py {MASK}; pin={MASK} 91234567 '{MASK}' {MASK}-run"
    )


def test_the_length_thresholds() -> None:
    below = "x" * (MIN_LENGTH - 1)
    assert Redactor([below]).secrets == ()
    assert Redactor([below]).text(f"a {below} b") == f"a {below} b"
    shortest = "y" * MIN_LENGTH
    assert Redactor([shortest]).text(f"a {shortest} b") == f"a {MASK} b"
    long = "z" * SUBSTRING_LENGTH
    assert Redactor([long]).short_secrets == ()
    assert Redactor([long]).text(f"a{long}b") == f"a{MASK}b"
    almost = "w" * (SUBSTRING_LENGTH - 1)
    assert Redactor([almost]).short_secrets == (almost,)
    assert Redactor([almost]).text(f"a{almost}b") == f"a{almost}b"


def test_a_short_secret_next_to_a_json_escape_is_masked_in_the_log(tmp_path: Path) -> None:
    # In the JSON line `\n1234` reads `n1234`: the writer's quick test must still find it.
    w = SessionLogWriter.create(tmp_path, header("short", golden=False), Redactor(["1234"]))
    w.message("user", "pin:\n1234\n", 0)
    w.close()
    assert read_session(w.path).events[0]["content"] == f"pin:\n{MASK}\n"


@pytest.mark.parametrize("secret", ["-4821", "#48-21", "4821!", "@pin:"])
def test_a_short_secret_with_a_non_word_character_at_either_end_is_masked_where_it_stands_alone(
    secret: str,
) -> None:
    redactor = Redactor([secret])
    for said in (f"pin {secret} ok", f"({secret})", secret, f"pin={secret}\n"):
        assert secret not in redactor.text(said), said
    assert redactor.text(f"9{secret}9") == f"9{secret}9"  # touching digits: not alone


def test_a_secret_the_model_put_in_a_nested_argument_key_is_masked_in_the_log(
    tmp_path: Path,
) -> None:
    """The model names every key of its arguments, at any depth, in lists as in objects."""
    secret = "sk-nested-key-0123456789"
    w = SessionLogWriter.create(tmp_path, header("nested", golden=False), Redactor([secret]))
    arguments = {"env": {secret: "x"}, "items": [{secret: [{secret: 1}]}]}
    w.tool_call(
        1,
        tool="run",
        server="srv",
        arguments=arguments,
        result="ok",
        is_error=False,
        duration_s=0.1,
    )
    w.close()
    (event,) = read_session(w.path).events
    assert event["arguments"] == {"env": {MASK: "x"}, "items": [{MASK: [{MASK: 1}]}]}
    assert secret not in w.path.read_text(encoding="utf-8")


def test_a_secret_registered_at_run_time_is_masked_by_redactors_built_before_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An OAuth token obtained mid-run (DESIGN 26): every redactor of the process masks it.
    import uuid

    from runner import redact
    from runner.redact import register_secrets

    # The registry is the process's: the test's secret must not mask what later tests of this
    # worker write (a Redactor without secrets would no longer be empty).
    monkeypatch.setattr(redact, "_RUNTIME", set())
    monkeypatch.setattr(redact, "_RUNTIME_VERSION", [redact._RUNTIME_VERSION[0] + 1])

    early = Redactor(["given-secret-1"])
    child = early.with_secrets(["child-secret-1"])
    empty = Redactor()
    token = f"at-{uuid.uuid4().hex}"
    assert early.text(token) == token
    register_secrets([token, "abc"])
    for redactor in (early, child, empty, Redactor()):
        assert redactor.text(f"Bearer {token}.") == f"Bearer {MASK}."
        assert redactor.may_be_in_json(json.dumps({"t": token}))
        assert redactor.data({"t": [token]}) == {"t": [MASK]}
        assert token in redactor.secrets
    assert "abc" not in early.secrets  # under MIN_LENGTH: never masked, as everywhere
    assert early.text("given-secret-1 child-secret-1") == f"{MASK} child-secret-1"


def test_a_forgotten_listener_hears_no_later_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    from runner import redact
    from runner.redact import on_registered, register_secrets

    monkeypatch.setattr(redact, "_RUNTIME", set())
    monkeypatch.setattr(redact, "_LISTENERS", [])
    heard: list[list[str]] = []
    kept: list[list[str]] = []
    forget = on_registered(heard.append)
    on_registered(kept.append)
    register_secrets(["first-token-1"])
    forget()
    forget()  # twice is harmless
    register_secrets(["second-token-2"])
    assert heard == [["first-token-1"]]
    assert kept == [["first-token-1"], ["second-token-2"]]


def test_a_run_on_actions_leaves_no_listener_behind(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Each in-process run (the tests make many) added its console to the process's listeners,
    # which then printed ::add-mask:: lines of later runs' tokens on a console long gone.
    import shutil

    from runner import redact
    from runner.cli import main

    repo = Path(__file__).resolve().parents[2]
    monkeypatch.setattr(redact, "_LISTENERS", [])
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.chdir(tmp_path)
    shutil.copytree(repo / "examples", tmp_path / "examples")
    task, session = "examples/tasks/hello.yaml", "examples/sessions/hello.jsonl"
    argv = ["run", task, "--model", f"replay:{session}", "--out", "out", "--sandbox", "off"]
    for _ in range(2):
        assert main(argv) == 0
        assert redact._LISTENERS == []


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run-time registry is the process's: each test here gets its own."""
    from runner import redact

    monkeypatch.setattr(redact, "_RUNTIME", set())
    monkeypatch.setattr(redact, "_RUNTIME_VERSION", [redact._RUNTIME_VERSION[0] + 1])


ASKS: dict[str, Any] = {
    "text": lambda r, token: r.text(f"x {token} y") == f"x {MASK} y",
    "data": lambda r, token: r.data({"k": [token]}) == {"k": [MASK]},
    "may_be_in_json": lambda r, token: r.may_be_in_json(json.dumps({"k": token})),
    "secrets": lambda r, token: token in r.secrets,
    "short_secrets": lambda r, token: token in r.short_secrets,
}


@pytest.mark.parametrize("ask", sorted(ASKS))
@pytest.mark.usefixtures("fresh_registry")
def test_every_way_of_asking_sees_a_secret_registered_after_the_redactor_was_made(
    ask: str,
) -> None:
    from runner.redact import register_secrets

    short = ask == "short_secrets"
    for redactor in (Redactor(), Redactor(["given-secret-1"])):
        token = "tk-0ab" if short else f"tok-{uuid.uuid4().hex}"
        register_secrets([token])
        assert ASKS[ask](redactor, token), (ask, token)  # asked first, before any other way


@pytest.mark.usefixtures("fresh_registry")
def test_each_later_registration_reaches_a_redactor_that_saw_the_earlier_one() -> None:
    from runner.redact import register_secrets

    redactor = Redactor()
    tokens = [f"tok-{n}-{uuid.uuid4().hex}" for n in range(3)]
    for n, token in enumerate(tokens):
        register_secrets([token])
        assert redactor.text(" ".join(tokens[: n + 1])) == " ".join([MASK] * (n + 1))


@pytest.mark.usefixtures("fresh_registry")
def test_a_registered_secret_of_the_shortest_length_is_masked_where_it_stands_alone() -> None:
    from runner.redact import register_secrets

    shortest, shorter = "q" * MIN_LENGTH, "z" * (MIN_LENGTH - 1)
    register_secrets([shortest, shorter])
    redactor = Redactor()
    assert redactor.text(f"{shortest} {shorter}") == f"{MASK} {shorter}"
    assert shortest in redactor.secrets and shorter not in redactor.secrets
