"""Providers by name: the built-in ones imported lazily, third-party ones from entry points.

Importing this module imports no SDK; only the chosen provider's module is imported.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import re
from typing import cast

from runner.errors import ConfigError
from runner.llm.base import LLM, ProviderFactory
from runner.settings import Settings

__all__ = [
    "BUILTIN_PROVIDERS",
    "ENTRY_POINT_GROUP",
    "create_llm",
    "provider_names",
    "spec_problem",
    "split_spec",
]

ENTRY_POINT_GROUP = "agent_runner.providers"
BUILTIN_PROVIDERS: dict[str, str] = {
    "openai": "runner.llm.providers.openai",
    "anthropic": "runner.llm.providers.anthropic",
    "replay": "runner.llm.providers.replay",
}
"""Provider name -> module whose `create(model, settings)` builds it."""

_OPENAI_MODELS = re.compile(r"^(gpt|chatgpt|o1|o3|o4)([-.]|$)")


def provider_names() -> list[str]:
    """Every provider a spec may name: built-in first, then installed entry points."""
    third_party = sorted(ep.name for ep in _entry_points() if ep.name not in BUILTIN_PROVIDERS)
    return [*BUILTIN_PROVIDERS, *third_party]


def split_spec(spec: str, settings: Settings) -> tuple[str, str]:
    """`PROVIDER:MODEL` -> (provider, model); a bare model name gets its provider detected."""
    spec = spec.strip()
    if ":" in spec:
        provider, model = spec.split(":", 1)
        return provider, model
    if spec.startswith("claude"):
        return "anthropic", spec
    if _OPENAI_MODELS.match(spec):
        return "openai", spec
    if settings.openai_base_url:
        return "openai", spec
    raise ConfigError(
        f"cannot tell the provider of model {spec!r}: write PROVIDER:MODEL,"
        f" e.g. openai:{spec} (providers: {', '.join(provider_names())})"
    )


def spec_problem(spec: str) -> tuple[str, str] | None:
    """(message, hint) when a `PROVIDER:MODEL` spec names an unknown provider or no model; None
    when it looks right (or is a bare model name, whose provider only the settings can tell).
    Imports no provider, so `validate` can ask."""
    if ":" not in spec:
        return None
    provider, model = spec.strip().split(":", 1)
    known = provider_names()
    if provider not in known:
        close = difflib.get_close_matches(provider, known, n=1)
        hint = f"did you mean {close[0]}:{model}?" if close else f"known: {', '.join(known)}"
        return f"unknown model provider {provider!r}", hint
    if not model and provider != "replay":
        return f"model spec {spec!r} names no model", f"write {provider}:MODEL"
    return None


def create_llm(spec: str, settings: Settings) -> LLM:
    """The model a `--model` spec names, ready to call."""
    provider, model = split_spec(spec, settings)
    if not model and provider != "replay":
        raise ConfigError(f"model spec {spec!r} names no model: write {provider}:MODEL")
    return _factory(provider)(model, settings)


def _factory(provider: str) -> ProviderFactory:
    module_name = BUILTIN_PROVIDERS.get(provider)
    if module_name is not None:
        module = importlib.import_module(module_name)
        return cast(ProviderFactory, module.create)
    for entry_point in _entry_points():
        if entry_point.name == provider:
            try:
                loaded = entry_point.load()
            except Exception as exc:
                raise ConfigError(
                    f"provider {provider!r} ({entry_point.value}) failed to load: {exc!r};"
                    " reinstall the package that provides it"
                ) from None
            return cast(ProviderFactory, loaded)
    hint = ""
    if "." in provider or "/" in provider:
        hint = f"; for a model name with ':' in it, write openai:{provider}:..."
    close = difflib.get_close_matches(provider, provider_names(), n=1)
    if close:
        hint += f"; did you mean {close[0]!r}?"
    raise ConfigError(
        f"unknown model provider {provider!r}: known providers are"
        f" {', '.join(provider_names())}{hint}"
    )


def _entry_points() -> importlib.metadata.EntryPoints:
    return importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
