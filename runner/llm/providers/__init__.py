"""The built-in providers and what they share on the wire (DESIGN sections 6, 16 and 23).

`openai` (Chat Completions, against OpenAI or any compatible server), `anthropic` (the Messages
API) and `replay` (a recorded session played back) each offer `create(model, settings)`;
`runner.llm.registry` imports the chosen one by its module name, so importing this face imports
no SDK. What the SDK-backed two share: `sdk_provider` (the client built in the background by
`preload`, retried calls), `streaming` (idle timeouts, the drain of a finished stream, usage
estimates), `limiter` (one rate gate per provider and server), `native_wire` (native tool calls
in both wire formats), `promptcache` (Anthropic's rolling cache marks) and `context_window` (the
window of a model behind an OpenAI-compatible server, and a reply that fits it).
"""

from __future__ import annotations

from runner.llm.providers.context_window import context_window_of

__all__ = ["context_window_of"]
