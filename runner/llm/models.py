"""Known models: context window and USD prices per million tokens; config adds or overrides.

Prices are list prices at the time of writing; cache writes are Anthropic's 5-minute cache price
(OpenAI charges nothing extra for caching, so its cache writes cost the input price).
"""

from __future__ import annotations

from collections.abc import Mapping

from runner.llm.base import Usage
from runner.settings import ModelInfo, Settings

__all__ = [
    "MODELS",
    "UNKNOWN_MODEL_MAX_OUTPUT",
    "cost_usd",
    "lookup_model",
    "max_output_tokens_for",
]

UNKNOWN_MODEL_MAX_OUTPUT = 4096
"""The reply limit of a model the table does not know, unless configured (DESIGN section 23):
asking a local server for 8192 tokens can fill its whole window with one runaway reply."""


def _info(
    context_window: int,
    input_usd: float,
    output_usd: float,
    cache_read_usd: float | None = None,
    cache_write_usd: float | None = None,
) -> ModelInfo:
    return ModelInfo(
        context_window=context_window,
        input_usd_per_mtok=input_usd,
        output_usd_per_mtok=output_usd,
        cache_read_usd_per_mtok=cache_read_usd,
        cache_write_usd_per_mtok=cache_write_usd,
    )


MODELS: Mapping[str, ModelInfo] = {
    # OpenAI
    "gpt-5": _info(400_000, 1.25, 10.00, 0.125),
    "gpt-5-mini": _info(400_000, 0.25, 2.00, 0.025),
    "gpt-5-nano": _info(400_000, 0.05, 0.40, 0.005),
    "gpt-4.1": _info(1_047_576, 2.00, 8.00, 0.50),
    "gpt-4.1-mini": _info(1_047_576, 0.40, 1.60, 0.10),
    "gpt-4.1-nano": _info(1_047_576, 0.10, 0.40, 0.025),
    "gpt-4o": _info(128_000, 2.50, 10.00, 1.25),
    "gpt-4o-mini": _info(128_000, 0.15, 0.60, 0.075),
    "o3": _info(200_000, 2.00, 8.00, 0.50),
    "o3-mini": _info(200_000, 1.10, 4.40, 0.55),
    "o4-mini": _info(200_000, 1.10, 4.40, 0.275),
    # Anthropic
    "claude-opus-4-5": _info(200_000, 5.00, 25.00, 0.50, 6.25),
    "claude-opus-4-1": _info(200_000, 15.00, 75.00, 1.50, 18.75),
    "claude-opus-4": _info(200_000, 15.00, 75.00, 1.50, 18.75),
    "claude-sonnet-4-5": _info(200_000, 3.00, 15.00, 0.30, 3.75),
    "claude-sonnet-4": _info(200_000, 3.00, 15.00, 0.30, 3.75),
    "claude-haiku-4-5": _info(200_000, 1.00, 5.00, 0.10, 1.25),
    "claude-3-7-sonnet": _info(200_000, 3.00, 15.00, 0.30, 3.75),
    "claude-3-5-sonnet": _info(200_000, 3.00, 15.00, 0.30, 3.75),
    "claude-3-5-haiku": _info(200_000, 0.80, 4.00, 0.08, 1.00),
    "claude-3-haiku": _info(200_000, 0.25, 1.25, 0.03, 0.30),
}
"""The built-in table, keyed by model name or by the prefix of its dated names."""


def lookup_model(name: str, overrides: Mapping[str, ModelInfo]) -> ModelInfo | None:
    """The entry for `name`: an exact override, else the longest matching name or prefix.

    A prefix matches at a `-` boundary, so `claude-sonnet-4-5-20250929` is `claude-sonnet-4-5`
    while `gpt-5.1` is unknown rather than priced as `gpt-5`.
    """
    if name in overrides:
        return overrides[name]
    table = {**MODELS, **overrides}
    matches = [key for key in table if name == key or name.startswith(key + "-")]
    if not matches:
        return None
    return table[max(matches, key=len)]


def cost_usd(usage: Usage, info: ModelInfo | None) -> float:
    """USD cost of `usage` at `info`'s prices; 0.0 for a model missing from the table."""
    if info is None:
        return 0.0
    cache_read = info.cache_read_usd_per_mtok
    cache_write = info.cache_write_usd_per_mtok
    total = (
        usage.input_tokens * info.input_usd_per_mtok
        + usage.output_tokens * info.output_usd_per_mtok
        + usage.cache_read_tokens * (info.input_usd_per_mtok if cache_read is None else cache_read)
        + usage.cache_write_tokens
        * (info.input_usd_per_mtok if cache_write is None else cache_write)
    )
    return total / 1_000_000


def max_output_tokens_for(model: str, settings: Settings) -> int:
    """The largest reply to ask `model` for: its `models` entry's `max_output_tokens`, else the
    run's `max_output_tokens` (capped at `UNKNOWN_MODEL_MAX_OUTPUT` for an unknown model unless
    the operator set it)."""
    info = lookup_model(model, settings.models)
    if info is not None and info.max_output_tokens is not None:
        return info.max_output_tokens
    if info is None and "max_output_tokens" not in settings.model_fields_set:
        return min(settings.max_output_tokens, UNKNOWN_MODEL_MAX_OUTPUT)
    return settings.max_output_tokens
