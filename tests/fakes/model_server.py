"""Fake model servers speaking OpenAI's and Anthropic's real wire formats, with fault injection.

One server answers both `POST /v1/chat/completions` (OpenAI Chat Completions) and
`POST /v1/messages` (Anthropic Messages), streamed (SSE) or not, from one scripted queue of
steps. Each request takes the next step; an empty queue plays `default`, or fails with a 400.

    with FakeModelServer([reply("hi"), fault("rate_limit", retry_after="2"), reply("ok")]) as srv:
        OpenAI(base_url=srv.openai_base_url, ...)       # http://127.0.0.1:PORT/v1
        Anthropic(base_url=srv.anthropic_base_url, ...)  # http://127.0.0.1:PORT
        srv.requests                                     # every request, for assertions

From a shell (benchmarks): `python -m tests.fakes.model_server --text "done"` prints one JSON
line with the URLs and serves the same reply to every request until interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import signal
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from tests.fakes.native_wire import (
    FakeCall,
    anthropic_blocks,
    anthropic_events,
    openai_chunks,
    openai_message,
)
from tests.fakes.prompt_cache import PromptCache

__all__ = [
    "FINISH",
    "READ_NOTES",
    "FakeModelServer",
    "Fault",
    "RecordedRequest",
    "Step",
    "fault",
    "main",
    "reply",
    "turns_then_done",
]

Fault = Literal[
    "rate_limit",  # 429 with the step's retry-after / retry-after-ms headers
    "server_error",  # 500
    "unavailable",  # 503
    "overloaded",  # 529 (Anthropic's overloaded_error)
    "http_error",  # the step's `status`, generic body
    "context_length",  # 400 in the provider's own context-length wording
    "unauthorized",  # 401
    "model_not_found",  # 404
    "cut",  # stream ends cleanly before its final event
    "drop",  # connection closed mid-stream, no chunked terminator
    "stall",  # stream stops after its first event until `release()` or shutdown
    "drip",  # each event after the first waits for a `drip()` (or `release()`, or shutdown)
    "stream_error",  # an error event inside a 200 stream (Anthropic: overloaded_error)
    "no_usage",  # stream and body carry no usage at all (llama.cpp style)
]


@dataclass(frozen=True)
class Step:
    """What the server does with one request."""

    text: str = "ok"
    """Assistant text of a successful reply."""
    input_tokens: int = 12
    """Uncached prompt tokens reported."""
    output_tokens: int | None = None
    """Reply tokens reported; None = about a token per four characters."""
    cache_read_tokens: int = 0
    """Prompt tokens reported as read from the cache."""
    cache_write_tokens: int = 0
    """Prompt tokens reported as written to the cache (Anthropic only)."""
    stop_reason: str | None = None
    """Finish/stop reason; None = `stop` (OpenAI) or `end_turn` (Anthropic)."""
    fault: Fault | None = None
    """The failure to inject instead of (or in the middle of) the reply."""
    status: int = 500
    """HTTP status for `http_error`."""
    retry_after: str | None = None
    """`retry-after` header value sent with an error."""
    retry_after_ms: str | None = None
    """`retry-after-ms` header value sent with an error."""
    chunks: int = 3
    """Pieces the text is streamed in."""
    hold_until: int | None = None
    """Hold the answer until the server has received this many requests in all (bounded by
    `hold_timeout_s`; a hold that times out is counted in `hold_timeouts`)."""
    hold_timeout_s: float = 20.0
    hold_end_until: int | None = None
    """Send every event of a streamed reply, then withhold the body's end (OpenAI's
    `data: [DONE]`, the chunked terminator) until the server has received this many requests in
    all (bounded by `hold_timeout_s`, counted in `hold_timeouts`): a client that waits for the
    end before its next request waits out the bound."""
    tool_calls: tuple[FakeCall, ...] = ()
    """Native tool calls streamed after the text (tests.fakes.native_wire); the stop reason
    becomes `tool_calls` (OpenAI) or `tool_use` (Anthropic) unless `stop_reason` says another."""


def reply(text: str, **fields: Any) -> Step:
    """A successful step."""
    return Step(text=text, **fields)


def fault(kind: Fault, **fields: Any) -> Step:
    """A failing step."""
    return Step(fault=kind, **fields)


READ_NOTES = "<read_file>\n<path>notes.txt</path>\n</read_file>"
"""The scripted agent's tool turn: a read_file call of notes.txt (XML tool mode)."""
FINISH = "<attempt_completion>\n<result>done</result>\n</attempt_completion>"
"""The scripted agent's last reply."""


def turns_then_done(n: int) -> Callable[[Any], Step]:
    """A script by request (`_State.script`): `n` read_file turns, then attempt_completion. The
    turn a request is for is the number of assistant messages it carries (both wire formats)."""
    read, done = Step(text=READ_NOTES), Step(text=FINISH)

    def script(body: Any) -> Step:
        messages = body.get("messages", []) if isinstance(body, dict) else []
        turns = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        return read if turns < n else done

    return script


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The parsed JSON body (None when it was not JSON)."""

    @property
    def wire(self) -> Literal["openai", "anthropic", "other"]:
        """Which API the request spoke."""
        if self.path.endswith("/chat/completions"):
            return "openai"
        if self.path.endswith("/messages"):
            return "anthropic"
        return "other"


@dataclass
class _State:
    steps: deque[Step]
    default: Step | None
    routes: dict[str, deque[Step]] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    arrived: threading.Condition = field(default_factory=threading.Condition)
    hold_timeouts: int = 0
    released: threading.Event = field(default_factory=threading.Event)
    stalled: threading.Event = field(default_factory=threading.Event)
    dripped: threading.Event = field(default_factory=threading.Event)
    connections: set[socket.socket] = field(default_factory=set)
    accepted: int = 0
    cache: PromptCache | None = None
    """Set: Anthropic replies report the usage `PromptCache` bills, not the step's counts."""
    script: Callable[[Any], Step] | None = None
    """Set: each request is answered with `script(body)` instead of the steps, and is not
    recorded (stateless: concurrent tasks each follow their own conversation)."""

    def take(self, request: RecordedRequest) -> Step | None:
        if self.script is not None:
            return self.script(request.body)
        with self.lock:
            self.requests.append(request)
            first = _first_user_text(request.body)
            for marker, queue in self.routes.items():
                if marker in first:
                    return queue.popleft() if queue else self.default
            if self.steps:
                return self.steps.popleft()
            return self.default

    def hold(self, step: Step, until: int | None = None) -> None:
        """Wait until `until` (default `step.hold_until`) requests have arrived, or the step's
        timeout."""
        count = step.hold_until if until is None else until
        if count is None:
            return
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.requests) >= count, step.hold_timeout_s):
                self.hold_timeouts += 1


class FakeModelServer:
    """A scripted model server on 127.0.0.1 in a background thread; a context manager."""

    def __init__(
        self,
        steps: Iterable[Step] = (),
        *,
        default: Step | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        routes: dict[str, Iterable[Step]] | None = None,
        prompt_cache: bool = False,
    ) -> None:
        """`routes`: a request whose first user message contains a route's key takes its steps
        from that route (in order) instead of the main script: concurrent sessions each get their
        own script. `prompt_cache`: Anthropic usage follows the requests' `cache_control` marks
        (`tests.fakes.prompt_cache`) instead of the steps' token counts."""
        routes_ = {key: deque(steps) for key, steps in (routes or {}).items()}
        cache = PromptCache() if prompt_cache else None
        self._state = _State(deque(steps), default, routes_, cache=cache)
        self._httpd = _Server((host, port), _Handler, self._state)
        self._thread: threading.Thread | None = None

    def _serve_with(self, state: _State, handler: type[_Handler]) -> None:
        """For a subclass: serve from `state` (a `_State` subclass) with `handler`."""
        self._state = state
        self._httpd.state = state
        self._httpd.RequestHandlerClass = handler

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT`."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        """Base URL for the OpenAI SDK (`.../v1`)."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for the Anthropic SDK (it appends `/v1/messages`)."""
        return self.url

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def hold_timeouts(self) -> int:
        """Held answers whose wait for other requests timed out (0: every hold was met)."""
        return self._state.hold_timeouts

    @property
    def connections_accepted(self) -> int:
        """TCP connections accepted so far (a kept-alive client reuses one)."""
        with self._state.lock:
            return self._state.accepted

    def push(self, *steps: Step) -> None:
        """Append steps to the script."""
        with self._state.lock:
            self._state.steps.extend(steps)

    def release(self) -> None:
        """Let stalled streams go on (they also end at shutdown)."""
        self._state.released.set()

    def drip(self) -> None:
        """Let a dripping stream (`fault="drip"`) send its next event."""
        self._state.dripped.set()

    def wait_for_stall(self, timeout: float = 5.0) -> bool:
        """Block until a stream has stalled; False after `timeout` seconds."""
        return self._state.stalled.wait(timeout)

    def start(self) -> FakeModelServer:
        """Serve in a daemon thread; the socket is already listening, so no readiness wait."""
        # A short poll interval keeps shutdown quick; serve_forever's default is 0.5 s.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="fake-model-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, free stalled handlers and close every connection."""
        self._state.released.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        with self._state.lock:
            connections = list(self._state.connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    # socketserver's default backlog of 5 drops the SYNs of a burst of connections (32 tasks
    # starting at once), and the kernel retries them only after a second.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[_Handler], state: _State) -> None:
        self.state = state
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Small SSE writes otherwise wait on delayed ACKs: about 40 ms per request on loopback.
    disable_nagle_algorithm = True
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.state.lock:
            self.server.state.connections.add(self.connection)
            self.server.state.accepted += 1

    def finish(self) -> None:
        with self.server.state.lock:
            self.server.state.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def handle(self) -> None:
        # The client may go away mid-stream (idle timeout, cut stream): nothing to answer then.
        with contextlib.suppress(OSError):
            super().handle()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self._answer(self._read_body())

    def _read_body(self) -> Any:
        """The request's JSON body, or None when it is empty or not JSON."""
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            return json.loads(raw) if raw else None
        except ValueError:  # not JSON, or not UTF-8
            return None

    def _answer(self, body: Any) -> None:
        """Answer a POST whose body (`_read_body`) has been read: the wrapping fakes read it
        first to decide (delay, refuse, count), then answer through here."""
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = RecordedRequest("POST", self.path, headers, body)
        step = self.server.state.take(request)
        with self.server.state.arrived:
            self.server.state.arrived.notify_all()
        if step is not None:
            self.server.state.hold(step)
        if request.wire == "other":
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        if step is None:
            message = "fake model server: the script has no step left for this request"
            self._json(400, _error_body(request.wire, "invalid_request_error", message))
            return
        body = body if isinstance(body, dict) else {}
        if self.server.state.cache is not None and request.wire == "anthropic":
            billed = self.server.state.cache.usage(body)
            step = dataclasses.replace(
                step,
                input_tokens=billed.input_tokens,
                cache_read_tokens=billed.cache_read_tokens,
                cache_write_tokens=billed.cache_write_tokens,
            )
        wire = _OpenAIWire(step, body) if request.wire == "openai" else _AnthropicWire(step, body)
        if step.fault in _ERRORS:
            self._error(request.wire, step, body)
        elif body.get("stream"):
            self._stream(wire, step)
        else:
            self._json(200, wire.whole())

    def _error(self, wire_name: str, step: Step, body: dict[str, Any]) -> None:
        status, kind, message = _ERRORS[step.fault or "server_error"](wire_name, step, body)
        extra = {}
        if step.retry_after is not None:
            extra["retry-after"] = step.retry_after
        if step.retry_after_ms is not None:
            extra["retry-after-ms"] = step.retry_after_ms
        error = _error_body(wire_name, kind, message)
        if wire_name == "openai" and step.fault == "context_length":
            error["error"].update(param="messages", code="context_length_exceeded")
        elif wire_name == "openai" and step.fault in ("unauthorized", "model_not_found"):
            code = "invalid_api_key" if step.fault == "unauthorized" else "model_not_found"
            error["error"].update(param=None, code=code)
        self._json(status, error, extra)

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, wire: _OpenAIWire | _AnthropicWire, step: Step) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        if step.fault == "cut":
            # Said up front, as a server that closes after a response does: closed unannounced,
            # the client could send its retry on the pooled connection first and count a second
            # (connection) retry, at random.
            self.send_header("connection", "close")
        self.end_headers()
        events = list(wire.events())
        cut_at = wire.final_index(events)
        held = False
        for index, event in enumerate(events):
            if step.hold_end_until is not None and event == _DONE:
                held = True  # OpenAI's `[DONE]` is part of the body's end, after the reply
                self.server.state.hold(step, step.hold_end_until)
            if step.fault == "stall" and index == 1:
                self.server.state.stalled.set()
                self.server.state.released.wait()
            if step.fault == "drip" and index >= 1:
                self._wait_for_drip()
            if step.fault in ("cut", "drop") and index == cut_at:
                break
            self._chunk(event)
        if step.fault == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if step.hold_end_until is not None and not held:
            self.server.state.hold(step, step.hold_end_until)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _wait_for_drip(self) -> None:
        state = self.server.state
        state.stalled.set()
        while not state.released.is_set():
            if state.dripped.wait(0.05):
                state.dripped.clear()
                return

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


_DONE = b"data: [DONE]\n\n"


def _first_user_text(body: Any) -> str:
    """The text of the request's first user message (either wire), or ''."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages or []:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(
                    str(part.get("text", "")) for part in content if isinstance(part, dict)
                )
            return str(content or "")
    return ""


def _error_body(wire_name: str, kind: str, message: str) -> dict[str, Any]:
    if wire_name == "openai":
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake"}


def _model(body: dict[str, Any]) -> str:
    return str(body.get("model", "unknown"))


_ERRORS: dict[str, Any] = {
    "rate_limit": lambda w, s, b: (
        429,
        "rate_limit_error" if w == "anthropic" else "requests",
        "Rate limit reached for requests. Please try again later."
        if w == "openai"
        else "Number of request tokens has exceeded your per-minute rate limit",
    ),
    "server_error": lambda w, s, b: (
        500,
        "api_error" if w == "anthropic" else "server_error",
        "The server had an error while processing your request. Sorry about that!"
        if w == "openai"
        else "Internal server error",
    ),
    "unavailable": lambda w, s, b: (
        503,
        "api_error" if w == "anthropic" else "server_error",
        "The engine is currently overloaded, please try again later",
    ),
    "overloaded": lambda w, s, b: (529, "overloaded_error", "Overloaded"),
    "http_error": lambda w, s, b: (s.status, "api_error", f"fake failure {s.status}"),
    "context_length": lambda w, s, b: (
        400,
        "invalid_request_error",
        "This model's maximum context length is 128000 tokens. However, your messages resulted"
        " in 130512 tokens. Please reduce the length of the messages."
        if w == "openai"
        else "prompt is too long: 215089 tokens > 200000 maximum",
    ),
    "unauthorized": lambda w, s, b: (
        401,
        "invalid_request_error" if w == "openai" else "authentication_error",
        "Incorrect API key provided: sk-fake***. You can find your API key at"
        " https://platform.openai.com/account/api-keys."
        if w == "openai"
        else "invalid x-api-key",
    ),
    "model_not_found": lambda w, s, b: (
        404,
        "invalid_request_error" if w == "openai" else "not_found_error",
        f"The model `{_model(b)}` does not exist or you do not have access to it."
        if w == "openai"
        else f"model: {_model(b)}",
    ),
}


def _pieces(text: str, count: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, count)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _output_tokens(step: Step) -> int:
    return step.output_tokens if step.output_tokens is not None else max(1, len(step.text) // 4)


class _OpenAIWire:
    def __init__(self, step: Step, body: dict[str, Any]) -> None:
        self.step = step
        self.model = _model(body)
        options = body.get("stream_options") or {}
        self.include_usage = bool(options.get("include_usage")) and step.fault != "no_usage"

    def usage(self) -> dict[str, Any]:
        prompt = self.step.input_tokens + self.step.cache_read_tokens
        output = _output_tokens(self.step)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
            "prompt_tokens_details": {"cached_tokens": self.step.cache_read_tokens},
        }

    def whole(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.step.text}
        if self.step.tool_calls:
            message["tool_calls"] = openai_message(self.step.tool_calls)
        result: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": self.model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": self._finish()},
            ],
        }
        if self.step.fault != "no_usage":
            result["usage"] = self.usage()
        return result

    def _finish(self) -> str:
        return self.step.stop_reason or ("tool_calls" if self.step.tool_calls else "stop")

    def _chunk(self, choices: list[dict[str, Any]], **extra: Any) -> bytes:
        chunk = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": self.model,
            "choices": choices,
            **extra,
        }
        return f"data: {json.dumps(chunk)}\n\n".encode()

    def events(self) -> Iterator[bytes]:
        delta: dict[str, Any] = {"role": "assistant", "content": ""}
        yield self._chunk([{"index": 0, "delta": delta, "finish_reason": None}])
        for piece in _pieces(self.step.text, self.step.chunks):
            content = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
            yield self._chunk([content])
        yield from openai_chunks(self.step.tool_calls, self._chunk)
        if self.step.fault == "stream_error":
            error = {"message": "The server had an error while processing your request."}
            yield f"data: {json.dumps({'error': {**error, 'type': 'server_error'}})}\n\n".encode()
            return
        yield self._chunk([{"index": 0, "delta": {}, "finish_reason": self._finish()}])
        if self.include_usage:
            yield self._chunk([], usage=self.usage())
        yield _DONE

    def final_index(self, events: list[bytes]) -> int:
        """Index of the finish_reason chunk: a cut stream stops before it."""
        return len(events) - (3 if self.include_usage else 2)


class _AnthropicWire:
    def __init__(self, step: Step, body: dict[str, Any]) -> None:
        self.step = step
        self.model = _model(body)

    def _start_usage(self) -> dict[str, Any]:
        return {
            "input_tokens": self.step.input_tokens,
            "output_tokens": 1,
            "cache_creation_input_tokens": self.step.cache_write_tokens,
            "cache_read_input_tokens": self.step.cache_read_tokens,
        }

    def _message(self, content: list[dict[str, Any]], stop: str | None) -> dict[str, Any]:
        message: dict[str, Any] = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
        }
        if self.step.fault != "no_usage":
            message["usage"] = self._start_usage()
        return message

    def whole(self) -> dict[str, Any]:
        content = [
            {"type": "text", "text": self.step.text},
            *anthropic_blocks(self.step.tool_calls),
        ]
        message = self._message(content, self._stop())
        if "usage" in message:
            message["usage"]["output_tokens"] = _output_tokens(self.step)
        return message

    def _stop(self) -> str:
        return self.step.stop_reason or ("tool_use" if self.step.tool_calls else "end_turn")

    @staticmethod
    def _event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    def events(self) -> Iterator[bytes]:
        start = {"type": "message_start", "message": self._message([], None)}
        yield self._event("message_start", start)
        block = {"type": "content_block_start", "index": 0, "content_block": _text_block("")}
        yield self._event("content_block_start", block)
        yield self._event("ping", {"type": "ping"})
        for piece in _pieces(self.step.text, self.step.chunks):
            delta = {"type": "content_block_delta", "index": 0, "delta": _text_delta(piece)}
            yield self._event("content_block_delta", delta)
        if self.step.fault == "stream_error":
            error = _error_body("anthropic", "overloaded_error", "Overloaded")
            yield self._event("error", error)
            return
        yield self._event("content_block_stop", {"type": "content_block_stop", "index": 0})
        yield from anthropic_events(self.step.tool_calls, 1, self._event)
        message_delta: dict[str, Any] = {
            "type": "message_delta",
            "delta": {"stop_reason": self._stop(), "stop_sequence": None},
        }
        if self.step.fault != "no_usage":
            message_delta["usage"] = {"output_tokens": _output_tokens(self.step)}
        yield self._event("message_delta", message_delta)
        yield self._event("message_stop", {"type": "message_stop"})

    def final_index(self, events: list[bytes]) -> int:
        """Index of the first content_block_stop: a cut stream stops before it."""
        return (
            len(events) - 3
            if not self.step.tool_calls
            else 4 + len(_pieces(self.step.text, self.step.chunks))
        )


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _text_delta(text: str) -> dict[str, Any]:
    return {"type": "text_delta", "text": text}


def main(argv: list[str] | None = None) -> int:
    """Serve one reply forever, printing the URLs as a JSON line (for benchmarks)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    done_call = "<attempt_completion><result>done</result></attempt_completion>"
    parser.add_argument("--text", default=done_call)
    parser.add_argument("--input-tokens", type=int, default=12)
    parser.add_argument("--prompt-cache", action="store_true", help="model Anthropic's cache")
    args = parser.parse_args(argv)
    default = Step(text=args.text, input_tokens=args.input_tokens)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with FakeModelServer(default=default, port=args.port, prompt_cache=args.prompt_cache) as server:
        urls = {
            "url": server.url,
            "openai_base_url": server.openai_base_url,
            "anthropic_base_url": server.anthropic_base_url,
        }
        print(json.dumps(urls), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            done.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
