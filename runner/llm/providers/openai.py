"""The `openai` provider: Chat Completions, streamed, against OpenAI or any compatible server.

With `openai_base_url` set this is the route to vLLM, llama.cpp, Ollama, OpenRouter, Groq,
DeepSeek and Gemini's compatible endpoint; see docs/providers.md.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from runner.errors import ConfigError
from runner.llm.base import Message, Usage, capped
from runner.llm.inflight import streamed
from runner.llm.models import lookup_model, max_output_tokens_for
from runner.llm.native import NativeTools
from runner.llm.providers.context_window import ContextWindow
from runner.llm.providers.native_wire import OpenAICalls, openai_messages, openai_tools
from runner.llm.providers.promptcache import prompt_cache_key, sends_prompt_cache_key
from runner.llm.providers.sdk_provider import Attempt, SdkProvider
from runner.llm.providers.streaming import IdleWatch, Slot, ack_promptly, estimate_usage
from runner.llm.retry import CallError, CallTarget, Sleep, stream_error
from runner.settings import Settings

if TYPE_CHECKING:
    import httpx2
    import openai
    from openai.types.chat import ChatCompletionMessageParam

__all__ = ["DEFAULT_BASE_URL", "KEY_ENV", "OpenAIChat", "create"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_ENV = "OPENAI_API_KEY"
# Local servers (llama.cpp, vLLM, Ollama) ignore the key, but the SDK insists on one.
_PLACEHOLDER_KEY = "not-needed"
# Reasoning models reject `max_tokens`; compatible servers do not all know the newer name.
_COMPLETION_TOKENS_MODELS = re.compile(r"^(o\d|gpt-5)")


class OpenAIChat(SdkProvider["openai.AsyncOpenAI"]):
    """An OpenAI Chat Completions model, streamed, retried by `runner.llm.retry`."""

    provider = "openai"

    def __init__(
        self,
        model: str,
        settings: Settings,
        *,
        http_client: httpx2.AsyncClient | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        base_url = settings.openai_base_url
        if not key and base_url is None:
            raise ConfigError(
                f"the openai provider needs an API key: set {KEY_ENV}"
                " (or AGENT_RUNNER_OPENAI_API_KEY), or set OPENAI_BASE_URL to a compatible server"
                " that needs none"
            )
        self.model = model
        self.info = lookup_model(model, settings.models)
        self._max_output = max_output_tokens_for(model, settings)
        self._cache_key = sends_prompt_cache_key(settings.openai_prompt_cache_key, base_url)
        self._window = ContextWindow(model, settings.models, base_url, key)
        """Config's, the server's (asked in the background from now on) or the table's."""
        target = CallTarget(
            self.provider, model, base_url or DEFAULT_BASE_URL, KEY_ENV if key else None
        )
        timeout = settings.retry.request_timeout_s

        def build() -> openai.AsyncOpenAI:
            # Imported here, in the preload thread: the SDK's import is most of a cold start.
            import httpx2
            import openai

            client = openai.AsyncOpenAI(
                api_key=key or _PLACEHOLDER_KEY,
                base_url=base_url or DEFAULT_BASE_URL,
                max_retries=0,
                timeout=httpx2.Timeout(timeout, connect=min(timeout, 30.0)),
                http_client=http_client,
            )
            _ = client.chat.completions  # the SDK imports its resources on first access
            return client

        super().__init__(settings=settings, target=target, sleep=sleep, build=build)

    async def _attempt(
        self, system: str, messages: Sequence[Message], tools: NativeTools | None = None
    ) -> Attempt:
        import openai

        try:
            return await self._stream(system, messages, tools)
        except openai.APIStatusError as exc:
            raise _status_error(exc) from exc
        except openai.APITimeoutError as exc:
            raise CallError("timeout", f"request timed out: {exc}") from exc
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise CallError("connection", f"connection failed: {cause!r}") from exc
        except openai.APIError as exc:
            # An error event inside a 200 stream: retried whole, unless the prompt does not fit.
            raise stream_error(exc.message) from exc

    async def context_window(self) -> int | None:
        """The model's context window: config, the server or the table (`ContextWindow`)."""
        return await self._window.get()

    async def _stream(
        self, system: str, messages: Sequence[Message], tools: NativeTools | None
    ) -> Attempt:
        async with self._window.slots.request() as slot:
            return await self._stream_in(system, messages, tools, slot)

    async def _stream_in(
        self, system: str, messages: Sequence[Message], tools: NativeTools | None, slot: Slot
    ) -> Attempt:
        import openai
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        idle_s = self._settings.retry.idle_timeout_s
        planned = await self._window.plan(system, messages, capped(self._max_output))
        parts: list[str] = []
        usage: Usage | None = None
        stop_reason: str | None = None
        model = self.model
        calls = OpenAICalls(tools) if tools is not None else None
        # The client first: waiting for its import (the first call) is not the server's silence.
        client = self._client
        async with IdleWatch(idle_s, self._target.base_url) as watch:
            # The body goes out through `post`, the SDK's documented call for a body sent as it
            # is: `chat.completions.create` runs its TypedDict transform over every message of
            # every request (6 ms of CPU at 20 messages, 70 ms at 400), and on these plain
            # string messages the transform returns what it was given.
            body = self._body(system, messages, calls, planned.max_tokens)
            stream = await client.post(
                "/chat/completions",
                body=body,
                cast_to=ChatCompletion,
                stream=True,
                stream_cls=openai.AsyncStream[ChatCompletionChunk],
            )
            watch.alive()
            ack_promptly(stream.response)
            complete = False
            try:
                while (chunk := await anext(stream, None)) is not None:
                    watch.alive()
                    model = chunk.model or model
                    if chunk.usage is not None:
                        usage = _usage(chunk.usage)
                    for choice in chunk.choices:
                        if choice.delta.content:
                            parts.append(choice.delta.content)
                            streamed(len(choice.delta.content))
                        if calls is not None and choice.delta.tool_calls:
                            calls.feed(choice.delta.tool_calls)
                            streamed(_arguments_chars(choice.delta.tool_calls))
                        if choice.finish_reason:
                            stop_reason = choice.finish_reason
                    # The usage chunk is the last before `[DONE]`: the reply is complete, and
                    # the body's end is read in the background (see `Drains`). A server that
                    # sends no usage is read to the end here.
                    complete = stop_reason is not None and usage is not None
                    if complete:
                        break
            finally:
                if complete:
                    self._drains.add(stream)
                else:
                    await stream.close()
        text = "".join(parts)
        if stop_reason is None:
            # No finish reason and no error text: an overflow the server could not word, maybe.
            raise self._window.broken_stream(planned, slot)
        usage = usage or estimate_usage(system, messages, text)
        self._window.succeeded(planned, usage, stop_reason)
        return text, usage, stop_reason, model, calls.calls() if calls is not None else ()

    def _body(
        self,
        system: str,
        messages: Sequence[Message],
        calls: OpenAICalls | None,
        limit: int,
    ) -> dict[str, Any]:
        new_limit_name = bool(_COMPLETION_TOKENS_MODELS.match(self.model))
        body: dict[str, Any] = {
            "model": self.model,
            "messages": _wire_messages(system, messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            ("max_completion_tokens" if new_limit_name else "max_tokens"): limit,
        }
        if self._settings.temperature is not None:
            body["temperature"] = self._settings.temperature
        if calls is not None:
            body["messages"] = openai_messages(system, messages, calls.names)
            body.update(openai_tools(calls.tools, calls.names))
        if self._cache_key and messages:
            body["prompt_cache_key"] = prompt_cache_key(system, messages[0].content)
        return body


def create(model: str, settings: Settings) -> OpenAIChat:
    """The provider factory the registry calls for `openai:MODEL`."""
    return OpenAIChat(model, settings)


def _arguments_chars(deltas: Any) -> int:
    """Characters of tool-call arguments in one chunk's deltas (for the heartbeat)."""
    total = 0
    for delta in deltas:
        function = getattr(delta, "function", None)
        total += len(getattr(function, "arguments", None) or "")
    return total


def _wire_messages(system: str, messages: Sequence[Message]) -> list[ChatCompletionMessageParam]:
    wire: list[ChatCompletionMessageParam] = [{"role": "system", "content": system}]
    wire.extend(cast("ChatCompletionMessageParam", message.wire) for message in messages)
    return wire


def _usage(raw: Any) -> Usage:
    details = getattr(raw, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
    prompt = raw.prompt_tokens or 0
    return Usage(
        input_tokens=max(0, prompt - cached),
        output_tokens=raw.completion_tokens or 0,
        cache_read_tokens=cached,
    )


def _status_error(exc: openai.APIStatusError) -> CallError:
    body = exc.body if isinstance(exc.body, dict) else {}
    message = body.get("message") if isinstance(body.get("message"), str) else None
    return CallError(
        "status",
        message or exc.message,
        status=exc.status_code,
        headers=dict(exc.response.headers),
        code=exc.code,
    )
