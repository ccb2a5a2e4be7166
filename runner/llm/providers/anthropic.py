"""The `anthropic` provider: the Messages API, streamed, with rolling prompt-cache marks."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from runner.errors import ConfigError
from runner.llm.base import Message, Usage, capped
from runner.llm.inflight import streamed
from runner.llm.models import lookup_model, max_output_tokens_for
from runner.llm.native import NativeTools
from runner.llm.providers.native_wire import AnthropicCalls, anthropic_messages, anthropic_tools
from runner.llm.providers.promptcache import with_breakpoints
from runner.llm.providers.sdk_provider import Attempt, SdkProvider
from runner.llm.providers.streaming import IdleWatch, ack_promptly, estimate_usage
from runner.llm.retry import CallError, CallTarget, Sleep
from runner.settings import Settings

if TYPE_CHECKING:
    import anthropic
    import httpx2
    from anthropic.types import MessageParam, TextBlockParam

__all__ = ["DEFAULT_BASE_URL", "KEY_ENV", "AnthropicMessages", "create"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
KEY_ENV = "ANTHROPIC_API_KEY"
# Error events inside a 200 stream carry only a type; these are the statuses they stand for.
_STREAM_ERROR_STATUS = {
    "overloaded_error": 529,
    "api_error": 500,
    "rate_limit_error": 429,
    "timeout_error": 504,
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
}


class AnthropicMessages(SdkProvider["anthropic.AsyncAnthropic"]):
    """An Anthropic model over the Messages API, streamed, retried by `runner.llm.retry`."""

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        settings: Settings,
        *,
        http_client: httpx2.AsyncClient | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if settings.anthropic_api_key is None or not settings.anthropic_api_key.get_secret_value():
            raise ConfigError(
                f"the anthropic provider needs an API key: set {KEY_ENV}"
                " (or AGENT_RUNNER_ANTHROPIC_API_KEY)"
            )
        self.model = model
        self.info = lookup_model(model, settings.models)
        self._max_output = max_output_tokens_for(model, settings)
        base_url = settings.anthropic_base_url or DEFAULT_BASE_URL
        target = CallTarget(self.provider, model, base_url, KEY_ENV)
        timeout = settings.retry.request_timeout_s
        api_key = settings.anthropic_api_key.get_secret_value()

        def build() -> anthropic.AsyncAnthropic:
            # Imported here, in the preload thread: the SDK's import is most of a cold start.
            import anthropic
            import httpx2

            client = anthropic.AsyncAnthropic(
                api_key=api_key,
                base_url=base_url,
                max_retries=0,
                timeout=httpx2.Timeout(timeout, connect=min(timeout, 30.0)),
                http_client=http_client,
            )
            _ = client.messages  # the SDK imports its resources on first access
            return client

        super().__init__(settings=settings, target=target, sleep=sleep, build=build)

    async def _attempt(
        self, system: str, messages: Sequence[Message], tools: NativeTools | None = None
    ) -> Attempt:
        import anthropic
        import httpx2

        try:
            return await self._stream(system, messages, tools)
        except anthropic.APIStatusError as exc:
            raise _status_error(exc) from exc
        except anthropic.APITimeoutError as exc:
            raise CallError("timeout", f"request timed out: {exc}") from exc
        except anthropic.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise CallError("connection", f"connection failed: {cause!r}") from exc
        # The SDK does not wrap transport errors raised while a stream is read.
        except httpx2.TimeoutException as exc:
            raise CallError("timeout", f"stream read timed out: {exc!r}") from exc
        except httpx2.TransportError as exc:
            raise CallError("connection", f"stream broke: {exc!r}") from exc

    async def _stream(
        self, system: str, messages: Sequence[Message], tools: NativeTools | None
    ) -> Attempt:
        idle_s = self._settings.retry.idle_timeout_s
        # The 2.x SDK has no `temperature` argument; the API still takes it.
        temperature = self._settings.temperature
        extra: dict[str, Any] = {} if temperature is None else {"temperature": temperature}
        mode = self._settings.anthropic_prompt_cache
        calls = AnthropicCalls(tools) if tools is not None else None
        offered = anthropic_tools(calls.tools, calls.names) if calls is not None else {}
        plain = anthropic_messages(messages, calls.names) if calls is not None else None
        cached_system, wire, marked = with_breakpoints(
            system, plain or _wire_messages(messages), offered.get("tools", ()), mode=mode
        )
        if offered:  # the native tools, the last one marked for the cache
            extra.update(offered, tools=marked)
        parts: list[str] = []
        counts: dict[str, int] = {}
        stop_reason = "end_turn"
        model = self.model
        finished = False
        # The client first: waiting for its import (the first call) is not the server's silence.
        client = self._client
        async with IdleWatch(idle_s, self._target.base_url) as watch:
            stream = await client.messages.create(
                model=self.model,
                max_tokens=capped(self._max_output),
                system=cast("list[TextBlockParam]", cached_system),
                messages=cast("list[MessageParam]", wire),
                stream=True,
                extra_body=extra or None,
            )
            watch.alive()
            ack_promptly(stream.response)
            try:
                while (event := await anext(stream, None)) is not None:
                    watch.alive()
                    streamed(_streamed_chars(event))
                    if event.type == "message_start":
                        model = event.message.model or model
                        _take_usage(counts, getattr(event.message, "usage", None))
                    elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                        parts.append(event.delta.text)
                    elif calls is not None and event.type.startswith("content_block_"):
                        calls.feed(event)
                    elif event.type == "message_delta":
                        stop_reason = event.delta.stop_reason or stop_reason
                        _take_usage(counts, getattr(event, "usage", None))
                    elif event.type == "message_stop":
                        # The last event: the body's end is read in the background (`Drains`).
                        finished = True
                        break
            finally:
                if finished:
                    self._drains.add(stream)
                else:
                    await stream.close()
        if not finished:
            raise CallError("broken_stream", "stream ended before message_stop")
        text = "".join(parts)
        native = calls.calls() if calls is not None else ()
        if not counts:
            return text, estimate_usage(system, messages, text), stop_reason, model, native
        usage = Usage(
            input_tokens=counts.get("input_tokens", 0),
            output_tokens=counts.get("output_tokens", 0),
            cache_read_tokens=counts.get("cache_read_input_tokens", 0),
            cache_write_tokens=counts.get("cache_creation_input_tokens", 0),
        )
        return text, usage, stop_reason, model, native


def create(model: str, settings: Settings) -> AnthropicMessages:
    """The provider factory the registry calls for `anthropic:MODEL`."""
    return AnthropicMessages(model, settings)


def _wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [message.wire for message in messages]


def _take_usage(counts: dict[str, int], usage: Any) -> None:
    # message_delta repeats or updates the counts of message_start; later values win.
    for name in (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ):
        value = getattr(usage, name, None)
        if isinstance(value, int):
            counts[name] = value


def _status_error(exc: anthropic.APIStatusError) -> CallError:
    body: dict[str, Any] = exc.body if isinstance(exc.body, dict) else {}
    raw_error = body.get("error")
    error: dict[str, Any] = raw_error if isinstance(raw_error, dict) else {}
    kind = error.get("type") if isinstance(error.get("type"), str) else None
    message = error.get("message") if isinstance(error.get("message"), str) else None
    status = exc.status_code
    if status < 400 and kind is not None:
        status = _STREAM_ERROR_STATUS.get(kind, 500)
    return CallError(
        "status",
        message or exc.message,
        status=status,
        headers=dict(exc.response.headers),
        code=kind,
    )


def _streamed_chars(event: Any) -> int:
    """Characters of reply text or tool-call input in one event (for the heartbeat)."""
    delta = getattr(event, "delta", None)
    return len(getattr(delta, "text", None) or getattr(delta, "partial_json", None) or "")
