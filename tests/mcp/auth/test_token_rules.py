"""The rules of a token and of the record the reports keep (runner/mcp/auth/token.py): when a token
is due for renewal, which of its values are secrets, and what the record says after each token."""

from __future__ import annotations

import dataclasses
import re
import time
from datetime import UTC, datetime

import pytest

from runner.mcp.auth import AuthError, AuthRecord, Token


def _expiring_in(seconds: float, lifetime: float | None) -> Token:
    return Token({"Authorization": "Bearer t"}, time.monotonic() + seconds, None, lifetime)


@pytest.mark.parametrize(
    ("left", "lifetime", "due"),
    [
        # A long-lived token: renewed within the margin (60 s) of its expiry.
        (90, 3600, False),
        (45, 3600, True),
        # A short-lived one: within a fifth of its lifetime (100 s: 20 s).
        (30, 100, False),
        (18, 100, True),
        (15, 100, True),
        # Its lifetime not known: within the margin.
        (90, None, False),
        (30, None, True),
        # Already expired.
        (-1, 3600, True),
        (-1, None, True),
        (0, 0.0, True),
    ],
)
def test_a_token_is_due_within_the_margin_or_a_fifth_of_its_lifetime_whichever_is_less(
    left: float, lifetime: float | None, due: bool
) -> None:
    assert _expiring_in(left, lifetime).due(60) is due


def test_a_token_without_an_expiry_is_never_due() -> None:
    assert Token({"Authorization": "Bearer t"}, None, None, 100).due(60) is False
    assert Token({"Authorization": "Bearer t"}).due(10**9) is False


def test_a_token_cannot_be_changed_once_made() -> None:
    token = Token({"Authorization": "Bearer t"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        token.expires_at = 1.0  # type: ignore[misc]


def test_every_value_of_every_header_is_a_secret_and_so_is_every_schemes_credential() -> None:
    token = Token(
        {
            "Authorization": "Bearer b-1",
            "X-Basic": "Basic YmFzaWM=",
            "X-Token": "token t-1 ",
            "X-Dpop": "DPoP d-1",
            "X-Key": "k-1",
            "X-Other": "Digest dg-1",
            "X-Empty": "Bearer ",
        }
    )
    assert token.values() == [
        "Bearer b-1",
        "b-1",
        "Basic YmFzaWM=",
        "YmFzaWM=",
        "token t-1 ",
        "t-1",
        "DPoP d-1",
        "d-1",
        "k-1",
        "Digest dg-1",
        "Bearer ",
    ]


def test_a_failure_is_a_configuration_error_unless_it_says_unreachable() -> None:
    assert AuthError("x").kind == "config"
    assert AuthError("x", "unreachable").kind == "unreachable"
    assert str(AuthError("the reason")) == "the reason"
    assert str(AuthError("the reason", "unreachable")) == "the reason"  # the message alone


def test_a_new_record_has_no_issuer_scopes_expiry_or_renewals() -> None:
    record = AuthRecord("tracker", "bearer")
    assert record.as_json() == {
        "server": "tracker",
        "type": "bearer",
        "issuer": None,
        "scopes": [],
        "expires_at": None,
        "renewals": 0,
    }
    assert AuthRecord("a", "b").scopes is not record.scopes  # each record its own list


def test_the_record_counts_every_token_after_the_first_as_a_renewal() -> None:
    record = AuthRecord("tracker", "command")
    token = Token({"Authorization": "Bearer t"})
    record.note(token, first=True)
    assert record.renewals == 0
    for count in (1, 2, 3):
        record.note(token, first=False)
        assert record.renewals == count


def test_the_record_keeps_the_last_granted_scopes_until_a_token_names_others() -> None:
    record = AuthRecord("tracker", "client_credentials")
    record.note(Token({}, None, "a:read b:write"), first=True)
    assert record.scopes == ["a:read", "b:write"]
    record.note(Token({}, None, None), first=False)  # no scope said: the grant stands
    assert record.scopes == ["a:read", "b:write"]
    record.note(Token({}, None, "c"), first=False)
    assert record.scopes == ["c"]


def test_the_record_states_when_the_last_token_expires_in_utc_to_the_second() -> None:
    record = AuthRecord("tracker", "client_credentials", issuer="https://as.example")
    before = datetime.now(UTC).timestamp()
    record.note(Token({}, time.monotonic() + 600, None, 600), first=True)
    after = datetime.now(UTC).timestamp()
    assert record.expires_at is not None
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", record.expires_at)
    when = datetime.fromisoformat(record.expires_at).timestamp()
    assert int(before + 600) <= when <= after + 600
    record.note(Token({}), first=False)  # a token of unknown lifetime: no expiry to state
    assert record.expires_at is None
    assert record.as_json() == {
        "server": "tracker",
        "type": "client_credentials",
        "issuer": "https://as.example",
        "scopes": [],
        "expires_at": None,
        "renewals": 1,
    }
