"""The model table, config overrides, costs and usage arithmetic."""

from __future__ import annotations

import pytest

from runner.llm.base import Usage
from runner.llm.models import cost_usd, lookup_model
from runner.settings import ModelInfo


@pytest.mark.parametrize(
    ("name", "window"),
    [
        ("gpt-4.1", 1_047_576),
        ("gpt-4.1-mini-2025-04-14", 1_047_576),
        ("gpt-4o-mini", 128_000),
        ("o3", 200_000),
        ("gpt-5-mini-2025-08-07", 400_000),
        ("claude-sonnet-4-5-20250929", 200_000),
        ("claude-3-5-haiku-20241022", 200_000),
    ],
)
def test_known_models_and_their_dated_names_are_found(name: str, window: int) -> None:
    info = lookup_model(name, {})

    assert info is not None
    assert info.context_window == window


def test_dated_names_take_the_longest_matching_entry() -> None:
    mini = lookup_model("gpt-4o-mini-2024-07-18", {})

    assert mini is not None
    assert mini.input_usd_per_mtok == 0.15


def test_a_prefix_only_matches_at_a_dash() -> None:
    assert lookup_model("gpt-5.1", {}) is None
    assert lookup_model("o3x", {}) is None


def test_config_overrides_and_adds_models() -> None:
    cheap = ModelInfo(context_window=32_000, input_usd_per_mtok=0.1, output_usd_per_mtok=0.2)

    assert lookup_model("gpt-4.1", {"gpt-4.1": cheap}) == cheap
    assert lookup_model("qwen2.5-coder-32b", {"qwen2.5-coder": cheap}) == cheap


def test_cost_uses_each_price() -> None:
    info = lookup_model("claude-sonnet-4-5", {})
    usage = Usage(
        input_tokens=1_000_000,
        output_tokens=1_000_000,
        cache_read_tokens=1_000_000,
        cache_write_tokens=1_000_000,
    )

    assert cost_usd(usage, info) == pytest.approx(3.0 + 15.0 + 0.30 + 3.75)


def test_cache_prices_default_to_the_input_price() -> None:
    info = ModelInfo(context_window=1000, input_usd_per_mtok=2.0, output_usd_per_mtok=4.0)

    assert cost_usd(Usage(cache_read_tokens=500_000, cache_write_tokens=500_000), info) == 2.0


def test_unknown_model_costs_nothing() -> None:
    assert cost_usd(Usage(input_tokens=10**9), None) == 0.0


def test_usages_add_up_and_stay_estimated_if_any_part_was() -> None:
    total = Usage(1, 2, 3, 4) + Usage(10, 20, 30, 40, estimated=True)

    assert total == Usage(11, 22, 33, 44, estimated=True)
    assert total.total == 110
