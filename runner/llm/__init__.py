"""Model providers behind one interface (DESIGN section 6).

Importing this package imports no SDK: `create_llm` imports the chosen provider's module.
"""

from __future__ import annotations

from runner.llm.base import LLM, Message, ProviderFactory, Reply, RetryEvent, Usage
from runner.llm.context_window import context_window_of
from runner.llm.models import cost_usd, lookup_model
from runner.llm.registry import create_llm, provider_names, spec_problem

__all__ = [
    "LLM",
    "Message",
    "ProviderFactory",
    "Reply",
    "RetryEvent",
    "Usage",
    "context_window_of",
    "cost_usd",
    "create_llm",
    "lookup_model",
    "provider_names",
    "spec_problem",
]
