"""The context window of a model behind an OpenAI-compatible server, and a reply that fits it.

A local server (llama.cpp, vLLM) runs with the context it was started with, often 4k-32k, and
the model table does not know it. Where the window comes from, first match wins:

1. config: `models: {NAME: {context_window: N}}` (the operator's word, also for a server that
   reports a wrong or no size);
2. the server, asked once per run and base URL, in a background thread from the moment the
   model is made: llama.cpp's `GET /props` (`default_generation_settings.n_ctx`, the size per
   slot, else `n_ctx`), then `GET /v1/models` (`max_model_len` on vLLM, `context_length` or
   `context_window` elsewhere) for the entry of this model;
3. the built-in model table.

Asking is bounded (`PROBE_TIMEOUT_S` in all, `PROBE_MAX_BYTES` per answer) and its failures are
quiet (a debug line): plenty of servers answer neither path. docs/providers.md has the details.

With a window known, `max_tokens` is clamped so that the estimated prompt plus the reply fit;
when not even `min_reply_tokens` fit, `ContextLengthError` is raised before anything is sent,
and the loop compacts the history and tries once more (DESIGN section 7).

When nothing says the window (llama-cpp-python's server answers neither path), the replies
teach it (DESIGN section 23, `ContextWindow.learn_from_reply`): a reply that stops at `length`
with fewer output tokens than were asked for was stopped by the window, not the limit, so the
window is the prompt plus that output. And a stream that ends with no finish reason and no error
on a request larger than any that succeeded is taken as an overflow once
(`ContextWindow.broken_stream`): the loop compacts and sends again, instead of the same request
being retried until the attempts run out. Without usage in the stream (llama-cpp-python sends
none), the estimated counts teach it, when the reply fell clearly short of the limit.

A learned window is never smaller than a prompt plus reply the server completed. A stream cut
while another request to the same server was in flight is an interruption, not an overflow
(`Slots`): retried, with one request at a time from then on; `max_concurrency` in the model
table sets that limit up front.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.errors import ContextLengthError
from runner.llm.base import LLM, Message, MessageChars, Usage
from runner.llm.models import lookup_model
from runner.llm.providers.streaming import CHARS_PER_TOKEN, Slot, Slots
from runner.llm.retry import CallError
from runner.settings import ModelInfo

__all__ = [
    "PROBE_MAX_BYTES",
    "PROBE_TIMEOUT_S",
    "ContextWindow",
    "Planned",
    "ServerFacts",
    "min_reply_tokens",
    "parse_models",
    "parse_props",
    "context_window_of",
    "reply_limit",
]

_log = logging.getLogger(__name__)
PROBE_TIMEOUT_S = 5.0
"""Seconds both requests of a probe may take together."""
PROBE_MAX_BYTES = 4_000_000
"""A larger answer is ignored (OpenRouter's model list is about 1 MB)."""
_LARGEST_WINDOW = 100_000_000
_ESTIMATE_SHORT = 0.9
"""An estimated output below this share of `max_tokens` was stopped by the window."""
_PROBES: dict[str, concurrent.futures.Future[ServerFacts]] = {}
_PROBES_LOCK = threading.Lock()


@dataclass(frozen=True)
class ServerFacts:
    """What a server said about its context."""

    n_ctx: int | None = None
    """llama.cpp's context per slot, from `/props`: it holds whatever model is asked for."""
    models: Mapping[str, int] = field(default_factory=dict)
    """Context length by model id, from `/v1/models`."""
    source: str = ""
    """The URL the answer came from, for the log."""

    def window(self, model: str) -> int | None:
        """The window for `model`: the server's n_ctx, its entry, or the only entry listed."""
        if self.n_ctx is not None:
            return self.n_ctx
        if model in self.models:
            return self.models[model]
        return next(iter(self.models.values())) if len(self.models) == 1 else None


def _size(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 < value < _LARGEST_WINDOW else None


def parse_props(payload: Any) -> int | None:
    """llama.cpp's `/props`: the context per slot, else the server's whole context."""
    if not isinstance(payload, dict):
        return None
    settings = payload.get("default_generation_settings")
    per_slot = _size(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return per_slot or _size(payload.get("n_ctx"))


def parse_models(payload: Any) -> dict[str, int]:
    """`/v1/models`: context length by model id, for the entries that say one."""
    entries = payload.get("data") if isinstance(payload, dict) else None
    found: dict[str, int] = {}
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        for key in ("max_model_len", "context_length", "context_window"):
            size = _size(entry.get(key))
            if size is not None:
                found[entry["id"]] = size
                break
    return found


def _get_json(url: str, api_key: str | None, deadline: float) -> Any:
    import urllib.request  # only in the probe's thread

    left = deadline - time.monotonic()
    if left <= 0:
        return None
    request = urllib.request.Request(url, headers={"accept": "application/json"})
    if api_key:
        request.add_header("authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=left) as response:
            data = response.read(PROBE_MAX_BYTES + 1)
    except Exception as error:  # a server without the path, or none at all: quietly nothing
        _log.debug("context window: GET %s failed: %s", url, type(error).__name__)
        return None
    if len(data) > PROBE_MAX_BYTES:
        _log.debug("context window: GET %s answered more than %d bytes", url, PROBE_MAX_BYTES)
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def _probe(base_url: str, api_key: str | None) -> ServerFacts:
    deadline = time.monotonic() + PROBE_TIMEOUT_S
    base = base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    n_ctx = parse_props(_get_json(f"{root}/props", api_key, deadline))
    if n_ctx is not None:
        return ServerFacts(n_ctx=n_ctx, source=f"{root}/props")
    models = parse_models(_get_json(f"{base}/models", api_key, deadline))
    return ServerFacts(models=models, source=f"{base}/models")


def _start_probe(base_url: str, api_key: str | None) -> concurrent.futures.Future[ServerFacts]:
    """The run's one probe of `base_url`, started now unless it already was."""
    with _PROBES_LOCK:
        future = _PROBES.get(base_url)
        if future is not None:
            return future
        future = _PROBES[base_url] = concurrent.futures.Future()

    def run() -> None:
        try:
            future.set_result(_probe(base_url, api_key))
        except Exception as error:  # never fatal: the window just stays unknown
            _log.debug("context window: probe of %s failed: %r", base_url, error)
            future.set_result(ServerFacts())

    threading.Thread(target=run, name="context-window-probe", daemon=True).start()
    return future


def min_reply_tokens(window: int, max_output_tokens: int) -> int:
    """The smallest reply worth asking for: a sixteenth of the window (at least 256 tokens), or
    the configured maximum when that is smaller. Compaction at 80 % of the window leaves room
    for it, margin included."""
    return min(max_output_tokens, max(256, window // 16))


def _prompt_estimate(chars: int, messages: int) -> int:
    """A prompt's tokens: its characters' estimate, a sixteenth more for the chat template and
    the estimate's error, and 4 per message and one more."""
    estimate = -(-chars // CHARS_PER_TOKEN)
    return estimate + estimate // 16 + 4 * (messages + 1)


def reply_limit(
    window: int | None,
    system: str,
    messages: Sequence[Message],
    max_output_tokens: int,
    *,
    strict: bool = True,
    chars: int | None = None,
) -> int:
    """`max_output_tokens`, clamped so that the prompt (estimated, with a margin for the chat
    template and the estimate's error) plus the reply fit `window`.

    When not even `min_reply_tokens` fit: `strict` (a window config or the server gave) raises
    `ContextLengthError`, and the loop compacts before anything is sent; otherwise (the model
    table's window of a hosted model, which counts better than this estimate and says so itself)
    the least reply is asked for and the server decides.
    """
    if window is None:
        return max_output_tokens
    if chars is None:
        chars = len(system) + sum(m.chars for m in messages)
    prompt = _prompt_estimate(chars, len(messages))
    room = window - prompt
    least = min_reply_tokens(window, max_output_tokens)
    if room < least:
        if not strict:
            return least
        raise ContextLengthError(
            f"the prompt (about {prompt} tokens) leaves {max(room, 0)} of the {window}-token"
            f" context window, less than the {least} a reply needs"
        )
    return min(max_output_tokens, room)


@dataclass(frozen=True)
class Planned:
    """One request's reply limit, and the prompt's size it was judged by."""

    max_tokens: int
    """What to ask for as `max_tokens`."""
    prompt_tokens: int
    """The prompt's estimated tokens (characters / `CHARS_PER_TOKEN`), for `succeeded` and
    `broken_stream`."""


class ContextWindow:
    """Where one model's window comes from (config, the server, the table, the replies),
    resolved once and learned on the way. One instance serves every task on the model."""

    def __init__(
        self,
        model: str,
        overrides: Mapping[str, ModelInfo],
        base_url: str | None,
        api_key: str | None,
    ) -> None:
        configured = any(
            (model == key or model.startswith(key + "-")) and entry.context_window is not None
            for key, entry in overrides.items()
        )
        info = lookup_model(model, overrides)
        self._model = model
        self._window: int | None = info.context_window if info else None
        self._configured = configured
        """The operator's word: nothing learned overrides it."""
        self._strict = configured
        """Whether the window is the operator's, the server's or learned (not the table's)."""
        self._probe = None if configured or base_url is None else _start_probe(base_url, api_key)
        self._chars = MessageChars()
        self._largest_ok: int | None = None
        """The largest prompt (estimated tokens) of a request that succeeded."""
        self._largest_done = 0
        """The largest prompt plus reply the server completed: the window holds at least it."""
        self.slots = Slots(info.max_concurrency if info else None)
        """The requests in flight to the server (`max_concurrency` from the model table)."""
        self._may_guess_overflow = True
        """One overflow guess per success: a second reasonless end in a row is a broken stream."""

    async def get(self) -> int | None:
        """The window in tokens, None when nothing says it."""
        if self._probe is not None:
            facts = await asyncio.wrap_future(self._probe)
            self._probe = None
            server = facts.window(self._model)
            if server is not None:
                _log.info("context window of %s: %d tokens (%s)", self._model, server, facts.source)
                self._window = server
                self._strict = True
        return self._window

    async def reply_limit(
        self, system: str, messages: Sequence[Message], max_output_tokens: int
    ) -> int:
        """`reply_limit` with this model's window (strict when config or the server gave it)."""
        return (await self.plan(system, messages, max_output_tokens)).max_tokens

    async def plan(
        self, system: str, messages: Sequence[Message], max_output_tokens: int
    ) -> Planned:
        """The reply limit for this request and the prompt's estimated size."""
        window = await self.get()
        # The running count is exact while the loop only appends, and too high (never too low)
        # after a compaction cleared results in place: enough to see that the whole reply fits.
        # (The whole reply fitting is room for it, not a limit equal to it: a least reply equal
        # to the whole one is also what a prompt over the window gets when not strict.)
        upper = len(system) + self._chars.count(messages)
        tokens = -(-upper // CHARS_PER_TOKEN)
        if window is None or window - _prompt_estimate(upper, len(messages)) >= max_output_tokens:
            return Planned(max_output_tokens, tokens)
        self._chars.reset()
        chars = len(system) + self._chars.count(messages)
        limit = reply_limit(
            window, system, messages, max_output_tokens, strict=self._strict, chars=chars
        )
        return Planned(limit, -(-chars // CHARS_PER_TOKEN))

    def succeeded(self, planned: Planned, usage: Usage, stop_reason: str) -> None:
        """A reply arrived: remember its size, and learn the window from a `length` stop short
        of the limit (reported usage only: an estimate of the output could fall short of the
        limit when the real count did not)."""
        self._largest_ok = max(self._largest_ok or 0, planned.prompt_tokens)
        self._may_guess_overflow = True
        prompt = planned.prompt_tokens if usage.estimated else usage.input_tokens
        prompt += 0 if usage.estimated else usage.cache_read_tokens
        self._largest_done = max(self._largest_done, prompt + usage.output_tokens)
        if stop_reason != "length" or self._window is not None:
            return  # only an unknown window is learned: config, the server or the table said it
        # An estimated output (a server that streams no usage, as llama-cpp-python's) may fall
        # short of a limit the real count reached: only a clear shortfall says "the window".
        limit = planned.max_tokens * (_ESTIMATE_SHORT if usage.estimated else 1.0)
        if usage.output_tokens >= limit:
            return  # the limit stopped it, not the window
        counted = "estimated " if usage.estimated else ""
        self._learn(
            prompt + usage.output_tokens,
            f"a reply stopped at `length` after {usage.output_tokens} {counted}of the"
            f" {planned.max_tokens} output tokens asked for",
        )

    def broken_stream(self, planned: Planned, slot: Slot | None = None) -> CallError:
        """The error for a stream that ended with no finish reason and no error text.

        A stream another request to the server ran beside (`slot.overlapped`) was interrupted
        by it (llama-cpp-python's `interrupt_requests`): retried, and requests to the server go
        one at a time from then on. Otherwise, on a request larger than any that succeeded and
        than the largest exchange the server completed, it is taken as a context overflow (some
        servers, llama-cpp-python's among them, raise inside the stream and just end it): the
        window is taken as at most this prompt, and the loop compacts and sends once more. Once
        per success: otherwise, and on the first request, it is a broken stream, retried."""
        if slot is not None and slot.overlapped:
            if self.slots.serialize():
                _log.info(
                    "requests to %s: one at a time from now on (a stream was cut while another"
                    " request was in flight)",
                    self._model,
                )
            return CallError(
                "broken_stream",
                "the stream ended with no finish reason while another request to the server"
                " was in flight: taken as the server interrupting it (llama-cpp-python's"
                " interrupt_requests), retried with one request at a time",
            )
        largest = self._largest_ok
        if (
            not self._may_guess_overflow
            or largest is None
            or planned.prompt_tokens <= largest
            or planned.prompt_tokens < self._largest_done
        ):
            return CallError("broken_stream", "stream ended before its finish_reason")
        self._may_guess_overflow = False
        if not self._configured and (self._window is None or self._window > planned.prompt_tokens):
            self._learn(
                planned.prompt_tokens,
                "a stream ended with no finish reason on the largest request yet",
            )
        return CallError(
            "status",
            f"the stream ended with no finish reason on a request of about"
            f" {planned.prompt_tokens} tokens, larger than any that succeeded: taken as a"
            " context overflow",
            status=400,
            code="context_length_exceeded",
        )

    def _learn(self, window: int, why: str) -> None:
        # Never below what the server has done: it completed a prompt plus reply that large.
        window = max(window, self._largest_done)
        _log.info("context window of %s: %d tokens, learned (%s)", self._model, window, why)
        self._window = window
        self._strict = True


async def context_window_of(llm: LLM) -> int | None:
    """`llm`'s context window: its own `context_window()` where it has one (a provider that asks
    its server), else the model table's entry."""
    ask = getattr(llm, "context_window", None)
    if ask is not None:
        window: int | None = await ask()
        return window
    return llm.info.context_window if llm.info else None
