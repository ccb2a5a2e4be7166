"""Settings precedence: CLI > environment > ./agent-runner.yaml > user config > defaults."""

from __future__ import annotations

import pytest

from runner.errors import ConfigError
from runner.settings import load_settings


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """A clean process edge: no AGENT_RUNNER_* or provider variables, config files in tmp."""
    import os

    for name in list(os.environ):
        if name.startswith("AGENT_RUNNER_") or name in {
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "OPENAI_BASE_URL",
            "ANTHROPIC_BASE_URL",
        }:
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "xdg" / "agent-runner").mkdir(parents=True)
    return tmp_path


def write_user(tmp_path, text):
    (tmp_path / "xdg" / "agent-runner" / "config.yaml").write_text(text, encoding="utf-8")


def write_project(tmp_path, text):
    (tmp_path / "agent-runner.yaml").write_text(text, encoding="utf-8")


def test_defaults_apply_with_no_configuration(isolated):
    settings = load_settings()
    assert settings.jobs == 1 and settings.model is None and settings.openai_api_key is None


def test_user_config_overrides_defaults(isolated):
    write_user(isolated, "jobs: 2\nmodel: openai:gpt-4.1\n")
    assert load_settings().jobs == 2


def test_project_config_overrides_user_config(isolated):
    write_user(isolated, "jobs: 2\nmodel: openai:gpt-4.1\n")
    write_project(isolated, "jobs: 3\n")
    settings = load_settings()
    assert (settings.jobs, settings.model) == (3, "openai:gpt-4.1")


def test_environment_overrides_config_files(isolated, monkeypatch):
    write_project(isolated, "jobs: 3\nretry: {max_attempts: 2}\n")
    monkeypatch.setenv("AGENT_RUNNER_JOBS", "4")
    monkeypatch.setenv("AGENT_RUNNER_RETRY__MAX_ATTEMPTS", "9")
    settings = load_settings()
    assert settings.jobs == 4 and settings.retry.max_attempts == 9


def test_cli_overrides_the_environment(isolated, monkeypatch):
    monkeypatch.setenv("AGENT_RUNNER_JOBS", "4")
    assert load_settings({"jobs": 5, "model": None}).jobs == 5


def test_provider_variables_are_read_as_secret_strings(isolated, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    settings = load_settings()
    assert settings.openai_api_key is not None
    assert settings.openai_api_key.get_secret_value() == "sk-test-123456"
    assert "sk-test-123456" not in repr(settings)
    assert settings.anthropic_base_url == "http://127.0.0.1:9"


def test_runner_prefixed_key_wins_over_the_provider_variable(isolated, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-plain")
    monkeypatch.setenv("AGENT_RUNNER_OPENAI_API_KEY", "sk-prefixed")
    assert load_settings().openai_api_key.get_secret_value() == "sk-prefixed"


def test_secret_values_include_keys_and_secret_named_variables(isolated, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdef")
    monkeypatch.setenv("MY_DB_PASSWORD", "hunter22")
    monkeypatch.setenv("HARMLESS", "visible")
    secrets = load_settings().secret_values()
    assert "sk-abcdef" in secrets and "hunter22" in secrets and "visible" not in secrets


def test_the_secret_names_of_design_7b_and_the_config_secrets_list(isolated, monkeypatch):
    for name in ("SVC_AUTH", "BROWSER_COOKIE", "CLOUD_CREDENTIALS", "X_SECRET", "GH_TOKEN"):
        monkeypatch.setenv(name, f"value-of-{name}")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Alice Author")  # a public identity, not a secret
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # too short to be a credential
    monkeypatch.setenv("MODE", "test")
    monkeypatch.setenv("DEPLOY_PIN", "4821")
    write_project(isolated, "secrets: [DEPLOY_PIN]\n")
    named = load_settings().named_secrets()
    values = set(named.values())
    for name in ("SVC_AUTH", "BROWSER_COOKIE", "CLOUD_CREDENTIALS", "X_SECRET", "GH_TOKEN"):
        assert f"value-of-{name}" in values
    assert not values & {"Alice Author", "false", "test"}
    assert named["$DEPLOY_PIN (secrets:)"] == "4821"  # declared: kept however short


def test_an_explicit_config_file_must_exist(isolated):
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(config_file=isolated / "missing.yaml")


def test_malformed_config_points_at_the_line(isolated):
    write_project(isolated, "jobs: 2\nmodel: [unclosed\n")
    with pytest.raises(ConfigError, match=r"agent-runner.yaml:3:1: config is not valid YAML"):
        load_settings()


def test_invalid_setting_is_named_without_echoing_the_value(isolated, monkeypatch):
    monkeypatch.setenv("AGENT_RUNNER_JOBS", "sekrit-value")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "jobs" in str(caught.value) and "sekrit-value" not in str(caught.value)


def test_unknown_setting_is_an_error(isolated):
    write_project(isolated, "jbos: 2\n")
    with pytest.raises(ConfigError, match="jbos"):
        load_settings()
