"""Choosing a provider by name: built-ins, auto-detection, entry points, lazy SDK imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.llm.base import Message
from runner.llm.registry import create_llm, provider_names, split_spec
from tests.llm.conftest import make_settings

REPO = Path(__file__).resolve().parents[2]


def test_explicit_provider_and_model_are_split_once() -> None:
    settings = make_settings()

    assert split_spec("openai:gpt-4.1", settings) == ("openai", "gpt-4.1")
    assert split_spec("openai:llama3.1:8b", settings) == ("openai", "llama3.1:8b")


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("claude-sonnet-4-5", "anthropic"),
        ("claude-3-5-haiku-20241022", "anthropic"),
        ("gpt-4.1", "openai"),
        ("gpt-5-mini", "openai"),
        ("o3", "openai"),
        ("o4-mini", "openai"),
        ("chatgpt-4o-latest", "openai"),
    ],
)
def test_bare_model_names_get_their_provider_detected(model: str, provider: str) -> None:
    assert split_spec(model, make_settings()) == (provider, model)


def test_bare_unknown_model_goes_to_a_configured_compatible_server() -> None:
    settings = make_settings(openai_base_url="http://127.0.0.1:8000/v1")

    assert split_spec("qwen2.5-coder", settings) == ("openai", "qwen2.5-coder")


def test_bare_unknown_model_without_base_url_asks_for_provider_model() -> None:
    with pytest.raises(ConfigError, match=r"write PROVIDER:MODEL, e\.g\. openai:qwen2\.5-coder"):
        split_spec("qwen2.5-coder", make_settings())


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as raised:
        create_llm("bedrock:claude", make_settings())

    assert "unknown model provider 'bedrock'" in str(raised.value)
    assert "openai, anthropic, replay" in str(raised.value)
    assert raised.value.exit_code == 2


def test_missing_key_is_a_config_error_that_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY") as raised:
        create_llm("openai:gpt-4.1", make_settings())
    assert raised.value.exit_code == 2


def test_key_value_never_appears_in_errors() -> None:
    settings = make_settings(openai_api_key="sk-very-secret")

    with pytest.raises(ConfigError) as raised:
        create_llm("openai:", settings)

    assert "sk-very-secret" not in str(raised.value)


def test_builtin_providers_are_created_by_name() -> None:
    settings = make_settings(openai_api_key="k", anthropic_api_key="k")

    assert create_llm("openai:gpt-4.1", settings).provider == "openai"
    assert create_llm("claude-sonnet-4-5", settings).provider == "anthropic"


def _install_entry_point(site: Path, value: str) -> None:
    """A real (if tiny) installed distribution declaring an agent_runner.providers entry point."""
    dist = site / "echo_provider-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-provider\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[agent_runner.providers]\necho = {value}\n")
    (site / "echo_provider.py").write_text(
        textwrap.dedent(
            """
            from runner.llm.base import Reply, Usage

            class Echo:
                provider = "echo"
                info = None

                def __init__(self, model, settings):
                    self.model = model

                async def complete(self, system, messages, *, on_retry=None):
                    return Reply(messages[-1].content, Usage(), "stop", 0.0, 0, self.model)

            def factory(model, settings):
                return Echo(model, settings)
            """
        )
    )


@pytest.mark.anyio
async def test_entry_point_provider_is_found_and_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install_entry_point(tmp_path, "echo_provider:factory")
    monkeypatch.syspath_prepend(str(tmp_path))

    llm = create_llm("echo:parrot-1", make_settings())

    assert "echo" in provider_names()
    assert llm.model == "parrot-1"
    assert (await llm.complete("s", [Message("user", "polly")])).text == "polly"


def test_entry_point_that_fails_to_load_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install_entry_point(tmp_path, "echo_provider:no_such_factory")
    monkeypatch.syspath_prepend(str(tmp_path))

    with pytest.raises(ConfigError, match=r"provider 'echo' .* failed to load"):
        create_llm("echo:parrot-1", make_settings())


def test_importing_the_registry_imports_no_sdk() -> None:
    code = (
        "import sys, runner.llm, runner.llm.registry, runner.llm.retry,"
        " runner.llm.providers.replay;"
        "print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout

    assert out.strip() == "[]"


def test_choosing_openai_imports_only_openai() -> None:
    code = (
        "import sys; from runner.llm.registry import create_llm;"
        "from runner.settings import Settings;"
        "create_llm('openai:gpt-4.1', Settings(openai_api_key='k'));"
        # The client is built in a preload thread: wait for it before looking.
        "import threading; [t.join() for t in threading.enumerate() if t.name.endswith('-client')];"
        "print('openai' in sys.modules, 'anthropic' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout

    assert out.strip() == "True False"
