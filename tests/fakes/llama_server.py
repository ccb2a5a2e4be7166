"""A fake of llama.cpp's server: a small context, said in `/props`, and its real overflow error.

`LlamaServer` is `tests.fakes.model_server.FakeModelServer` (OpenAI wire format, scripted steps)
with what llama.cpp's `llama-server` adds around it:

- `GET /props` with `default_generation_settings.n_ctx` (and `n_ctx`), `GET /v1/models` (which,
  like llama.cpp's, says nothing of the context it runs with), `GET /health`;
- a prompt counted at `chars_per_token` characters a token; one over `n_ctx` is refused the way
  llama.cpp refuses it: a 400 with `type: exceed_context_size_error` (current versions, which
  hold the headers back until the prompt is taken), or with `error_in_stream` an error event
  inside a 200 stream (older versions, and proxies that start streaming at once).

With `flavour="llama-cpp-python"` it behaves like llama-cpp-python's server (0.3.x) instead,
measured against the real one (DESIGN section 23): no `/props` (404), nothing about the window
in `/v1/models`; a reply generates until `max_tokens` or the window is full, whichever comes
first, and stops at `length` (with the usage it reports); and a prompt over the window raises
inside the stream: a 200 whose stream ends with no event, no finish reason and no error text.

Every chat request is recorded with its prompt size and `max_tokens` (`LlamaServer.seen`).

Two more of llama-cpp-python's ways, on request: `no_usage` (its streams carry no usage at all,
so the runner only has its own estimates), and `interrupt_requests` (its server's flag, on by
default there): a stream still running when another request arrives ends at once with `[DONE]`
and no finish reason (counted in `LlamaServer.cuts`). So that a second request can arrive while
one streams, each stream waits after its first event until another request arrives, or for
`rival_wait_s`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.fakes.model_server import (
    FakeModelServer,
    RecordedRequest,
    Step,
    _Handler,
    _State,
)

__all__ = ["Flavour", "LlamaServer", "Seen", "prompt_chars"]

Flavour = Literal["llama.cpp", "llama-cpp-python"]


@dataclass(frozen=True)
class Seen:
    """One chat request as the fake server counted it."""

    prompt_tokens: int
    max_tokens: int | None
    rejected: bool


def prompt_chars(body: Any) -> int:
    """Characters of every message's text in a chat request."""
    total = 0
    for message in body.get("messages", []) if isinstance(body, dict) else []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(str(p.get("text", ""))) for p in content if isinstance(p, dict))
    return total


@dataclass
class _LlamaState(_State):
    n_ctx: int = 8192
    chars_per_token: float = 4.0
    error_in_stream: bool = False
    flavour: Flavour = "llama.cpp"
    seen: list[Seen] = field(default_factory=list)
    interrupt_requests: bool = False
    rival_wait_s: float = 0.5
    arrivals: int = 0
    """Chat requests received so far (the later ones interrupt a running stream)."""
    cuts: int = 0
    """Streams ended by a later request."""
    rivals: threading.Condition = field(default_factory=threading.Condition)

    def take(self, request: RecordedRequest) -> Step | None:
        if self.script is not None:  # recorded all the same: the tests read what was sent
            with self.lock:
                self.requests.append(request)
        return super().take(request)


class _LlamaHandler(_Handler):
    def do_GET(self) -> None:
        state = self.server.state
        assert isinstance(state, _LlamaState)
        path = self.path.split("?", 1)[0]
        if path == "/props" and state.flavour == "llama.cpp":
            self._json(200, _props(state.n_ctx))
        elif path in ("/v1/models", "/models"):
            entry = {"id": "local.gguf", "object": "model", "owned_by": "llamacpp"}
            self._json(
                200, {"object": "list", "data": [{**entry, "meta": {"n_ctx_train": 131072}}]}
            )
        elif path == "/health":
            self._json(200, {"status": "ok"})
        else:
            self._json(
                404,
                {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}},
            )

    def do_POST(self) -> None:
        state = self.server.state
        assert isinstance(state, _LlamaState)
        sent = self._read_body()
        body = sent if isinstance(sent, dict) else {}
        tokens = math.ceil(prompt_chars(body) / state.chars_per_token)
        limit = body.get("max_tokens", body.get("max_completion_tokens"))
        rejected = tokens > state.n_ctx
        with state.lock:
            state.seen.append(Seen(tokens, limit if isinstance(limit, int) else None, rejected))
        with state.rivals:
            self._arrival = state.arrivals
            self._sent = 0
            self._cut = False
            state.arrivals += 1
            state.rivals.notify_all()
        if rejected:
            self._overflow(state, tokens, bool(body.get("stream")))
            return
        self._answer(sent)

    def _overflow(self, state: _LlamaState, tokens: int, stream: bool) -> None:
        if state.flavour == "llama-cpp-python" and stream:
            # The exception is raised in the stream's generator: the body just ends.
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            return
        error = {
            "code": 400,
            "message": f"request ({tokens} tokens) exceeds the available context size"
            f" ({state.n_ctx} tokens), try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": tokens,
            "n_ctx": state.n_ctx,
        }
        if not (stream and state.error_in_stream):
            self._json(400, {"error": error})
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self._chunk(f"data: {json.dumps({'error': error})}\n\n".encode())
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        state = self.server.state
        assert isinstance(state, _LlamaState)
        if not state.interrupt_requests:
            super()._chunk(data)
            return
        if self._cut:
            return  # the rest of the reply, its finish reason among it, is never sent
        with state.rivals:
            if self._sent == 1:  # after the first event: let a second request arrive
                state.rivals.wait_for(
                    lambda: state.arrivals > self._arrival + 1, state.rival_wait_s
                )
            interrupted = state.arrivals > self._arrival + 1
            if interrupted:
                state.cuts += 1
        self._sent += 1
        if interrupted:
            self._cut = True
            super()._chunk(b"data: [DONE]\n\n")
            return
        super()._chunk(data)


def _generating(
    script: Callable[[Any], Step], n_ctx: int, chars_per_token: float, no_usage: bool = False
) -> Callable[[Any], Step]:
    """`script` with generation as a server does it: a reply longer than `max_tokens`, or than
    the room the window leaves, is cut there and stops at `length`; usage counts the prompt."""

    def answer(body: Any) -> Step:
        step = script(body)
        prompt = math.ceil(prompt_chars(body) / chars_per_token)
        asked = body.get("max_tokens", body.get("max_completion_tokens"))
        room = n_ctx - prompt
        if isinstance(asked, int):
            room = min(room, asked)
        wanted = step.output_tokens
        if wanted is None:
            wanted = math.ceil(len(step.text) / chars_per_token)
        if wanted > room:
            text = step.text[: int(room * chars_per_token)]
            return dataclasses.replace(
                step,
                text=text,
                input_tokens=prompt,
                output_tokens=room,
                stop_reason="length",
                fault=step.fault or ("no_usage" if no_usage else None),
            )
        fault = step.fault or ("no_usage" if no_usage else None)
        return dataclasses.replace(step, input_tokens=prompt, output_tokens=wanted, fault=fault)

    return answer


def _props(n_ctx: int) -> dict[str, Any]:
    return {
        "default_generation_settings": {"n_ctx": n_ctx, "params": {"n_predict": -1}},
        "total_slots": 1,
        "model_path": "/models/local.gguf",
        "chat_template": "",
        "build_info": "b0000-fake",
    }


class LlamaServer(FakeModelServer):
    """A FakeModelServer that behaves, at its edges, like llama.cpp's server."""

    def __init__(
        self,
        *,
        script: Callable[[Any], Step],
        n_ctx: int = 8192,
        chars_per_token: float = 4.0,
        error_in_stream: bool = False,
        flavour: Flavour = "llama.cpp",
        no_usage: bool = False,
        interrupt_requests: bool = False,
        rival_wait_s: float = 0.5,
    ) -> None:
        """`script(body)` answers each chat request that fits."""
        super().__init__()
        if flavour == "llama-cpp-python":
            script = _generating(script, n_ctx, chars_per_token, no_usage)
        state = _LlamaState(
            self._state.steps,
            None,
            script=script,
            n_ctx=n_ctx,
            chars_per_token=chars_per_token,
            error_in_stream=error_in_stream,
            flavour=flavour,
            interrupt_requests=interrupt_requests,
            rival_wait_s=rival_wait_s,
        )
        self._serve_with(state, _LlamaHandler)

    @property
    def seen(self) -> list[Seen]:
        """Every chat request so far, as counted."""
        state = self._state
        assert isinstance(state, _LlamaState)
        with state.lock:
            return list(state.seen)

    @property
    def cuts(self) -> int:
        """Streams a later request interrupted (`interrupt_requests`)."""
        state = self._state
        assert isinstance(state, _LlamaState)
        with state.rivals:
            return state.cuts
