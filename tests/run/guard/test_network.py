"""A task's network allowlist (DESIGN 19): the task's list and --allow-host together, and the
config file's and command line's hosts checked before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.run.guard.network import allowlist, check_network
from runner.settings import SandboxSettings, Settings, load_settings


def test_allow_host_adds_to_the_task_list_and_opens_a_closed_network() -> None:
    flags = Settings(allow_hosts=("pypi.org", "files.pythonhosted.org"))
    listed = SandboxSettings(network=("pypi.org", "*.npmjs.org"))
    assert allowlist(listed, flags) == ("pypi.org", "*.npmjs.org", "files.pythonhosted.org")
    assert allowlist(SandboxSettings(network=False), flags) == flags.allow_hosts
    assert allowlist(SandboxSettings(network=True), flags) is None  # already everything
    assert allowlist(SandboxSettings(network=False), Settings()) is None


def test_bad_hosts_of_the_flag_and_the_config_are_named() -> None:
    settings = Settings(
        allow_hosts=("ok.org", "py*.org"), sandbox=SandboxSettings(network=("x.org:99999",))
    )
    with pytest.raises(ConfigError) as caught:
        check_network(settings)
    text = str(caught.value)
    assert "--allow-host 'py*.org': " in text and "a wildcard may only start" in text
    assert "sandbox.network[0]: 'x.org:99999': the port must be" in text
    check_network(Settings(allow_hosts=("ok.org",)))  # fine: no error


def test_a_bad_host_of_the_config_file_names_its_line(tmp_path: Path) -> None:
    config = tmp_path / "agent-runner.yaml"
    config.write_text("sandbox:\n  network:\n    - pypi.org\n    - pypi.org/simple\n", "utf-8")
    with pytest.raises(ConfigError) as caught:
        check_network(load_settings(config_file=config))
    assert f"{config}:2:3: sandbox.network[1]: 'pypi.org/simple' is a URL" in str(caught.value)
