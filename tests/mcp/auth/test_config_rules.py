"""The rules of the `auth:` block (runner/mcp/auth/config.py), each pinned for every type and field
it holds for: unknown keys and changes refused, each number's bounds at both ends, each check's
every condition, each secret listed for masking."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from runner.mcp.auth import AuthConfig, ClientCredentialsAuth, auth_secret_values
from runner.mcp.auth.config import argv
from tests.mcp.auth.world import key_pair

KEY = key_pair().private
AUTH: TypeAdapter[Any] = TypeAdapter(AuthConfig)

MINIMAL: dict[str, dict[str, Any]] = {
    "bearer": {"type": "bearer", "token": "t"},
    "command": {"type": "command", "command": ["p"]},
    "client_credentials": {"type": "client_credentials", "client_id": "c", "client_secret": "s"},
    "client_credentials_key": {"type": "client_credentials", "client_id": "c", "private_key": KEY},
    "jwt_bearer": {"type": "jwt_bearer", "assertion_file": "f"},
    "jwt_bearer_command": {"type": "jwt_bearer", "assertion_command": ["a"]},
}
"""Each type (and each credential form) with the least it needs; one-character values suffice."""


def _auth(**fields: Any) -> Any:
    return AUTH.validate_python(fields)


def _refused(**fields: Any) -> str:
    with pytest.raises(ValidationError) as caught:
        AUTH.validate_python(fields)
    return str(caught.value)


@pytest.mark.parametrize("name", sorted(MINIMAL))
def test_every_type_accepts_its_least_form_and_keeps_its_values(name: str) -> None:
    auth = _auth(**MINIMAL[name])
    assert auth.model_dump(exclude_defaults=True) == MINIMAL[name]


@pytest.mark.parametrize("name", sorted(MINIMAL))
def test_every_type_refuses_an_unknown_key(name: str) -> None:
    assert "extra" in _refused(**MINIMAL[name], tokne="x").lower()


@pytest.mark.parametrize("name", sorted(MINIMAL))
def test_every_type_is_frozen_once_checked(name: str) -> None:
    auth = _auth(**MINIMAL[name])
    with pytest.raises(ValidationError, match="frozen"):
        auth.type = "bearer"


@pytest.mark.parametrize(
    ("kind", "field"), [("bearer", "token"), ("client_credentials", "client_id")]
)
def test_every_required_text_field_refuses_empty(kind: str, field: str) -> None:
    fields = {**MINIMAL[kind], field: ""}
    assert field in _refused(**fields)


@pytest.mark.parametrize("kind", ["command", "jwt_bearer_command"])
def test_every_command_timeout_defaults_to_30_s_and_lies_in_0_to_600(kind: str) -> None:
    assert _auth(**MINIMAL[kind]).timeout == 30.0
    for fine in (0.001, 0.5, 600):
        assert _auth(**MINIMAL[kind], timeout=fine).timeout == fine
    for wrong in (0, -1, 600.5):
        assert "timeout" in _refused(**MINIMAL[kind], timeout=wrong)


def test_refresh_every_is_unset_by_default_and_any_positive_number_of_seconds() -> None:
    assert _auth(**MINIMAL["command"]).refresh_every is None
    assert _auth(**MINIMAL["command"], refresh_every=0.5).refresh_every == 0.5
    for wrong in (0, -5):
        assert "refresh_every" in _refused(**MINIMAL["command"], refresh_every=wrong)


@pytest.mark.parametrize("kind", ["client_credentials", "jwt_bearer"])
def test_every_oauth_type_asks_for_no_scope_unless_told(kind: str) -> None:
    assert _auth(**MINIMAL[kind]).scopes == []
    assert _auth(**MINIMAL[kind], scopes=["a", "b"]).scopes == ["a", "b"]


@pytest.mark.parametrize("kind", ["client_credentials", "jwt_bearer"])
def test_every_oauth_type_takes_an_http_or_https_issuer_and_nothing_else(kind: str) -> None:
    assert _auth(**MINIMAL[kind]).issuer is None
    assert _auth(**MINIMAL[kind], issuer=None).issuer is None  # `issuer: ~` in YAML: unset
    for issuer in ("https://as.example", "http://127.0.0.1:8"):
        assert _auth(**MINIMAL[kind], issuer=issuer).issuer == issuer
    for wrong in ("as.example", "ftp://as.example", "https:/as.example"):
        assert "http(s) URL" in _refused(**MINIMAL[kind], issuer=wrong)


def test_a_command_is_a_list_or_a_string_split_as_a_shell_splits_words() -> None:
    assert _auth(type="command", command="p --a 'b c'").command == "p --a 'b c'"
    assert argv("p --a 'b c' $HOME") == ["p", "--a", "b c", "$HOME"]
    assert argv(["p", "a b"]) == ["p", "a b"]
    for empty in ([], "", "   "):
        assert "`command` is empty" in _refused(type="command", command=empty)


def test_client_credentials_takes_exactly_one_credential() -> None:
    assert "exactly one of" in _refused(type="client_credentials", client_id="c")
    both = {"client_secret": "s", "private_key": KEY}
    assert "exactly one of" in _refused(type="client_credentials", client_id="c", **both)
    # The key id is not a credential: a secret with a key id is still one credential.
    assert _auth(**MINIMAL["client_credentials"], key_id="k1").key_id == "k1"
    assert "exactly one of" in _refused(type="client_credentials", client_id="c", key_id="k1")


def test_an_empty_client_secret_is_refused_naming_its_variable() -> None:
    said = _refused(type="client_credentials", client_id="c", client_secret="")
    assert "`client_secret` is empty" in said


def test_client_credentials_defaults_to_basic_auth_and_rs256() -> None:
    auth = _auth(**MINIMAL["client_credentials"])
    assert (auth.auth_method, auth.signing_alg) == ("client_secret_basic", "RS256")


@pytest.mark.parametrize(
    "key",
    [
        "/keys/k.pem",  # a path, not the key
        "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",  # not a private key
        "junk -----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----",  # not at the start
        "-----BEGIN CERTIFICATE-----\nPRIVATE KEY-----\n-----END CERTIFICATE-----",
    ],
)
def test_a_private_key_that_is_not_pem_is_refused(key: str) -> None:
    said = _refused(type="client_credentials", client_id="c", private_key=key)
    assert "not a PEM private key" in said


def test_a_pem_key_is_taken_with_whitespace_around_it() -> None:
    auth = _auth(type="client_credentials", client_id="c", private_key=f"\n  {KEY}\n")
    assert isinstance(auth, ClientCredentialsAuth)


def test_jwt_bearer_takes_exactly_one_assertion_source() -> None:
    assert "exactly one of" in _refused(type="jwt_bearer")
    both = {"assertion_file": "f", "assertion_command": ["a"]}
    assert "exactly one of" in _refused(type="jwt_bearer", **both)
    # A client id or secret is not a source.
    client = {"client_id": "c", "client_secret": "s"}
    assert "exactly one of" in _refused(type="jwt_bearer", **client)
    for empty in ([], " "):
        said = _refused(type="jwt_bearer", assertion_command=empty)
        assert "`assertion_command` is empty" in said


def test_the_type_names_which_of_the_four_it_is() -> None:
    assert "does not match any of the expected tags" in _refused(type="oauth")
    assert "Unable to extract tag" in _refused(token="t")


def test_every_secret_field_is_listed_under_its_name_and_nothing_else() -> None:
    assert auth_secret_values(_auth(type="bearer", token="tk")) == {"token": "tk"}
    assert auth_secret_values(_auth(**MINIMAL["command"])) == {}
    jwt = _auth(**MINIMAL["jwt_bearer"], client_id="cid", client_secret="s2")
    assert auth_secret_values(jwt) == {"client_secret": "s2"}
    assert auth_secret_values(_auth(**MINIMAL["jwt_bearer"], client_id="cid")) == {}
    secret = _auth(**MINIMAL["client_credentials"])
    assert auth_secret_values(secret) == {"client_secret": "s"}


def test_an_empty_value_is_no_secret_to_mask() -> None:
    jwt = _auth(**MINIMAL["jwt_bearer"], client_id="cid", client_secret="")
    assert auth_secret_values(jwt) == {}


def test_every_line_of_a_private_key_of_16_characters_or_more_is_listed() -> None:
    lines = ["A" * 15, "B" * 16, "C" * 64]
    key = "\n".join(["-----BEGIN PRIVATE KEY-----", *lines, "-----END PRIVATE KEY-----"])
    found = auth_secret_values(_auth(type="client_credentials", client_id="c", private_key=key))
    assert found == {
        "private_key": key,
        "private_key line 2": "B" * 16,
        "private_key line 3": "C" * 64,
    }


def test_the_lines_of_a_key_are_numbered_from_its_first_line_without_surrounding_space() -> None:
    key = "\n\n-----BEGIN PRIVATE KEY-----\n" + "D" * 20 + "\n-----END PRIVATE KEY-----\n"
    found = auth_secret_values(_auth(type="client_credentials", client_id="c", private_key=key))
    assert found["private_key line 1"] == "D" * 20
