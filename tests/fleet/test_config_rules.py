"""The `governor:` block (`runner.fleet.config`) at its edges: every bound of every figure, the
run key's alphabet matched whole, the limits' globs, where a shard finds its run key, which globs
a model counts against, and the store's password kept out of every URL shown."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from runner.errors import ExitCode
from runner.fleet import (
    GovernorSettings,
    RateLimit,
    StoreDown,
    default_run_key,
    limits_for,
    safe_url,
)


def test_a_governor_block_left_empty_has_the_documented_defaults() -> None:
    settings = GovernorSettings()
    assert (settings.url, settings.run, settings.max_cost_usd) == (None, None, None)
    assert (settings.limits, settings.on_error) == ({}, "fail")
    assert (settings.reservation_ttl_s, settings.timeout_s) == (900.0, 5.0)
    # Each settings object has limits of its own.
    assert GovernorSettings().limits is not settings.limits
    assert RateLimit() == RateLimit(rpm=None, tpm=None, window_s=60.0)


@pytest.mark.parametrize(
    ("field", "smallest"),
    [("max_cost_usd", 0.01), ("reservation_ttl_s", 0.5), ("timeout_s", 0.5)],
)
def test_every_governor_figure_must_be_above_zero_and_any_positive_one_is_taken(
    field: str, smallest: float
) -> None:
    for bad in (0, -1):
        with pytest.raises(ValidationError, match=field):
            GovernorSettings.model_validate({field: bad})
    assert getattr(GovernorSettings.model_validate({field: smallest}), field) == smallest


@pytest.mark.parametrize("field", ["rpm", "tpm"])
def test_every_rate_must_be_a_whole_number_above_zero(field: str) -> None:
    for bad in (0, -5):
        with pytest.raises(ValidationError, match=field):
            RateLimit.model_validate({field: bad})
    assert getattr(RateLimit.model_validate({field: 1}), field) == 1


def test_a_window_is_above_zero_and_at_most_an_hour() -> None:
    assert RateLimit(window_s=0.5).window_s == 0.5
    assert RateLimit(window_s=3600).window_s == 3600.0
    for bad in (0, -1, 3600.5):
        with pytest.raises(ValidationError, match="window_s"):
            RateLimit(window_s=bad)


@pytest.mark.parametrize(
    ("model", "field", "value"), [(GovernorSettings, "on_error", "local"), (RateLimit, "rpm", 5)]
)
def test_an_unknown_key_is_refused_and_the_settings_are_read_only(
    model: Any, field: str, value: object
) -> None:
    with pytest.raises(ValidationError, match="extra"):
        model.model_validate({"typo": 1})
    settings = model()
    with pytest.raises(ValidationError, match="frozen"):
        setattr(settings, field, value)


@pytest.mark.parametrize(
    "key",
    ["nightly", "gh-123-1", "k8s-agents", "a.b_c:d@e/f-g", "0", "x" * 200],
)
def test_a_run_key_of_the_allowed_characters_is_taken_as_it_is(key: str) -> None:
    assert GovernorSettings(run=key).run == key


@pytest.mark.parametrize(
    "key",
    ["", "a b", "nightly\n", "\nnightly", "night*ly", "x" * 201, "run{1}", "é"],
)
def test_a_run_key_with_any_other_character_or_length_is_refused(key: str) -> None:
    with pytest.raises(ValidationError, match="the run key may hold"):
        GovernorSettings(run=key)


def test_a_run_key_given_as_nothing_is_no_key() -> None:
    """`run:` left empty in the YAML is None: the shard then finds its key from the CI."""
    assert GovernorSettings.model_validate({"run": None}).run is None


def test_every_limit_key_must_be_provider_colon_model() -> None:
    settings = GovernorSettings.model_validate(
        {"limits": {"openai:*": {"rpm": 5}, "anthropic:claude-*": {"tpm": 9}}}
    )
    assert settings.limits["openai:*"].rpm == 5
    assert settings.limits["anthropic:claude-*"].tpm == 9
    with pytest.raises(ValidationError, match=r"limits key 'gpt-4' is not `provider:model`"):
        GovernorSettings.model_validate({"limits": {"openai:*": {"rpm": 5}, "gpt-4": {"rpm": 5}}})


@pytest.mark.parametrize(
    ("env", "key"),
    [
        ({"GITHUB_RUN_ID": "123", "GITHUB_RUN_ATTEMPT": "3"}, "gh-123-3"),
        ({"GITHUB_RUN_ID": "123", "GITHUB_RUN_ATTEMPT": ""}, "gh-123-1"),
        ({"GITHUB_RUN_ID": "", "JOB_NAME": "agents"}, "k8s-agents"),
        ({"GITHUB_RUN_ID": "", "JOB_NAME": ""}, None),
        ({"GITHUB_RUN_ATTEMPT": "2"}, None),
    ],
)
def test_an_empty_ci_variable_counts_as_unset(env: dict[str, str], key: str | None) -> None:
    assert default_run_key(env) == key


def test_a_model_counts_against_every_glob_its_provider_and_name_match() -> None:
    limits = {
        "openai:*": RateLimit(rpm=1),
        "openai:gpt-5*": RateLimit(rpm=2),
        "anthropic:*": RateLimit(rpm=3),
        "*:gpt-5": RateLimit(rpm=4),
        "OpenAI:*": RateLimit(rpm=5),
    }
    assert limits_for(limits, "openai", "gpt-5") == ["openai:*", "openai:gpt-5*", "*:gpt-5"]
    assert limits_for(limits, "openai", "o3") == ["openai:*"]
    assert limits_for(limits, "anthropic", "openai") == ["anthropic:*"]
    assert limits_for(limits, "google", "gemini") == []


def test_a_store_that_is_down_is_an_infrastructure_error() -> None:
    assert StoreDown("governor store x: gone").exit_code == ExitCode.INFRASTRUCTURE == 4


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:pw@r:6379/0", "redis://:***@r:6379/0"),
        ("rediss://user:pw@r:6380", "rediss://user:***@r:6380"),
        ("redis://user:p@ss@r:6379/0", "redis://user:***@r:6379/0"),
        ("redis://:p%40ss@r/0", "redis://:***@r/0"),
        ("redis://user@r:6379/0", "redis://user@r:6379/0"),
        ("unix:///run/redis.sock?db=0", "unix:///run/redis.sock?db=0"),
        ("file:///var/tmp/fleet.json", "file:///var/tmp/fleet.json"),
    ],
)
def test_every_store_url_is_shown_without_its_password_and_otherwise_unchanged(
    url: str, shown: str
) -> None:
    assert safe_url(url) == shown
