"""Model providers behind one interface (DESIGN section 6).

`base` is the seam (the `LLM` Protocol, messages, usage), `models` the table of known models,
`retry` the retries of model calls, `registry` the providers by name, and `native` the native tool
calls and results with the reversible mapping of tool names, and `inflight` what a task waits for
right now (for the heartbeat). The providers themselves and what
they share on the wire are the room `providers` (`native_wire` puts native calls on OpenAI's and
Anthropic's wire, DESIGN section 16). Importing this package imports no SDK: `create_llm`
imports the chosen provider's module.
"""

from __future__ import annotations

from runner.llm.base import (
    LLM,
    Message,
    MessageChars,
    ProviderFactory,
    Reply,
    RetryEvent,
    Usage,
    capped,
    reply_cap,
)
from runner.llm.inflight import CHARS_PER_TOKEN, Activity, InFlight, activity, streamed, track
from runner.llm.models import cost_usd, lookup_model, max_output_tokens_for
from runner.llm.native import NativeCall, NativeResult, NativeTools, wire_name
from runner.llm.providers import context_window_of
from runner.llm.registry import create_llm, provider_names, spec_problem, split_spec

__all__ = [
    "CHARS_PER_TOKEN",
    "LLM",
    "Activity",
    "InFlight",
    "Message",
    "MessageChars",
    "NativeCall",
    "NativeResult",
    "NativeTools",
    "ProviderFactory",
    "Reply",
    "RetryEvent",
    "Usage",
    "activity",
    "capped",
    "context_window_of",
    "cost_usd",
    "create_llm",
    "lookup_model",
    "max_output_tokens_for",
    "provider_names",
    "reply_cap",
    "spec_problem",
    "split_spec",
    "streamed",
    "track",
    "wire_name",
]
