"""The governor a shard holds: the store down (`on_error: fail` and `local`), waits counted, the
run key found, and the `governor:` settings read from the config file and the environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.errors import ConfigError, ExitCode
from runner.fleet import (
    FleetCapReached,
    Governor,
    GovernorSettings,
    MemoryStore,
    StoreDown,
    default_run_key,
    open_governor,
    open_store,
    run_key,
)
from runner.settings import load_settings

pytestmark = pytest.mark.anyio

DOWN = "redis://:hunter2@127.0.0.1:1/0"
"""A Redis nobody listens on (port 1), with a password that must never be shown."""


def governor(on_error: str, url: str = DOWN, cap: float | None = 0.1) -> Governor:
    settings = GovernorSettings(url=url, run="r", on_error=on_error, timeout_s=2)  # type: ignore[arg-type]
    return Governor(settings, open_store(url, 2), url=url, run="r", max_cost_usd=cap)


async def test_on_error_fail_ends_the_call_as_an_infrastructure_error_before_sending() -> None:
    gov = governor("fail")
    with pytest.raises(StoreDown) as caught:
        await gov.reserve(0.01)
    assert caught.value.exit_code == ExitCode.INFRASTRUCTURE
    assert "on_error: fail" in str(caught.value)
    assert "hunter2" not in str(caught.value)
    with pytest.raises(StoreDown):  # and every later decision, without waiting on the store
        await gov.admit("openai", "gpt-4.1", 10)
    await gov.aclose()


async def test_on_error_local_goes_on_with_the_cap_held_by_this_process_alone() -> None:
    said: list[str] = []
    gov = governor("local")
    gov._say = said.append
    ticket = await gov.reserve(0.05)
    assert gov.local
    await gov.settle(ticket, 0.05)
    await gov.reserve(0.04)
    with pytest.raises(FleetCapReached):
        await gov.reserve(0.02)
    (warning,) = gov.figures.warnings
    assert "per-process limits" in warning and "hunter2" not in warning
    assert said == [f"warning: {warning}"]
    report = await gov.report()
    assert report["mode"] == "local" and report["warnings"] == [warning]
    assert report["store"] == "redis://:***@127.0.0.1:1/0"


async def test_a_settle_the_store_missed_fails_the_next_reservation() -> None:
    settings = GovernorSettings(url="memory://", run="r", on_error="fail")
    store = MemoryStore()
    gov = Governor(settings, store, url="memory://", run="r", max_cost_usd=None)
    ticket = await gov.reserve(0.01)

    async def down(*_: object) -> None:
        raise StoreDown("governor store memory://: gone")

    store.settle = down  # type: ignore[method-assign]
    await gov.settle(ticket, 0.01)  # already spent: not an error of this call
    with pytest.raises(StoreDown, match="gone"):
        await gov.reserve(0.01)


async def test_a_shared_pause_is_waited_out_and_counted() -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        await store.pause("r", "other", "openai", -1.0)  # let time "pass": the pause is over
        store._runs["r"]["pauses"]["openai"] = 0.0

    store = MemoryStore()
    settings = GovernorSettings(url="memory://", run="r")
    gov = Governor(settings, store, url="memory://", run="r", max_cost_usd=None, sleep=sleep)
    await store.pause("r", "other", "openai", 3.0)
    await gov.admit("openai", "gpt-4.1", 100)
    assert len(slept) == 1 and 2.5 < slept[0] <= 3.0
    assert (gov.figures.waits, round(gov.figures.wait_s)) == (1, 3)
    assert (await store.status("r"))["waits"] == 1


@pytest.mark.parametrize(
    ("env", "key"),
    [
        ({"GITHUB_RUN_ID": "123", "GITHUB_RUN_ATTEMPT": "2"}, "gh-123-2"),
        ({"GITHUB_RUN_ID": "123"}, "gh-123-1"),
        ({"JOB_NAME": "agents-7"}, "k8s-agents-7"),
        ({"GITHUB_RUN_ID": "9", "JOB_NAME": "agents-7"}, "gh-9-1"),
        ({}, None),
    ],
)
def test_the_run_key_comes_from_the_ci(env: dict[str, str], key: str | None) -> None:
    assert default_run_key(env) == key


def test_no_run_key_anywhere_is_a_config_error_that_says_where_to_set_one() -> None:
    with pytest.raises(ConfigError, match=r"governor\.run"):
        run_key(GovernorSettings(url="memory://"), {})
    assert run_key(GovernorSettings(run="mine"), {"GITHUB_RUN_ID": "1"}) == "mine"


def test_a_fleet_cap_without_a_store_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="need a governor"):
        open_governor(GovernorSettings(), {}, None, 5.0)
    with pytest.raises(ConfigError, match="need a governor"):
        open_governor(GovernorSettings(limits={"openai:*": {"rpm": 5}}), {})  # type: ignore[dict-item]
    assert open_governor(GovernorSettings(), {}) is None


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("AGENT_RUNNER_", "GITHUB_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_governor_block_is_read_from_the_config_and_the_flags_win(isolated: Path) -> None:
    (isolated / "agent-runner.yaml").write_text(
        "governor:\n  url: redis://redis:6379/0\n  run: nightly\n  max_cost_usd: 50\n"
        "  limits: {'openai:*': {rpm: 500, tpm: 200000}, 'anthropic:*': {rpm: 50}}\n"
        "  on_error: local\n",
        encoding="utf-8",
    )
    settings = load_settings({"governor_url": "file:///tmp/fleet.json"})
    assert settings.governor.limits["openai:*"].tpm == 200000
    assert settings.governor.on_error == "local"
    gov = open_governor(settings.governor, {}, settings.governor_url, 7.0)
    assert gov is not None and gov.url == "file:///tmp/fleet.json" and gov.max_cost_usd == 7.0


def test_the_environment_names_the_store(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_RUNNER_GOVERNOR_URL", "rediss://cache:6380/0")
    monkeypatch.setenv("AGENT_RUNNER_GOVERNOR__RUN", "from-env")
    settings = load_settings()
    assert settings.governor_url == "rediss://cache:6380/0"
    assert settings.governor.run == "from-env"


@pytest.mark.parametrize(
    ("block", "found"),
    [
        ("  on_eror: local\n", "did you mean 'on_error'"),
        ("  on_error: retry\n", "governor.on_error"),
        ("  limits: {gpt-4: {rpm: 5}}\n", "is not `provider:model`"),
        ("  limits: {'openai:*': {rpm: 0}}\n", "governor.limits"),
        ("  limits: {'openai:*': {rps: 5}}\n", "did you mean 'rpm'"),
        ("  run: 'a b'\n", "the run key may hold"),
        ("  max_cost_usd: -1\n", "governor.max_cost_usd"),
    ],
)
def test_a_malformed_governor_block_is_named_with_its_place(
    isolated: Path, block: str, found: str
) -> None:
    (isolated / "agent-runner.yaml").write_text("governor:\n" + block, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert found in str(caught.value)
    assert "agent-runner.yaml:2:" in str(caught.value)


def test_the_store_password_is_a_secret_the_reports_mask(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_RUNNER_GOVERNOR_URL", "rediss://default:s3cr%40t-pass@cache:6380/0")
    (isolated / "agent-runner.yaml").write_text(
        "governor:\n  url: redis://:other-secret-1@redis:6379/0\n", encoding="utf-8"
    )
    secrets = load_settings().secret_values()
    assert "s3cr@t-pass" in secrets
    assert "other-secret-1" in secrets
