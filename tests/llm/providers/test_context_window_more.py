"""More of the context window's rules (runner.llm.providers.context_window), each pinned for
every source it holds for: a strict window (config, the server, learned) refuses a prompt over it
whatever the reply limit; how the server is asked (the paths, the key, the bounds, the log) over
a real HTTP server; what a reasonless stream end and a length stop teach, and when they do not."""

from __future__ import annotations

import asyncio
import dataclasses
import http.server
import json
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from runner.errors import ContextLengthError
from runner.llm.base import Message, Usage
from runner.llm.providers import context_window as cw
from runner.llm.providers.context_window import (
    PROBE_MAX_BYTES,
    ContextWindow,
    Planned,
    ServerFacts,
    parse_models,
)
from runner.llm.providers.streaming import Slot
from runner.llm.retry import is_context_length
from runner.settings import ModelInfo

pytestmark = pytest.mark.anyio
LOGGER = "runner.llm.providers.context_window"


class _Server:
    """A real HTTP server on 127.0.0.1 answering GETs from `routes` (path as sent -> status,
    body) and recording each request's path and headers."""

    def __init__(self, routes: dict[str, tuple[int, bytes]]) -> None:
        self.routes = routes
        self.seen: list[tuple[str, dict[str, str]]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                # As sent: http.server makes `//props` `/props` in `self.path`.
                path = self.requestline.split()[1]
                outer.seen.append((path, {k.lower(): v for k, v in self.headers.items()}))
                status, body = outer.routes.get(path, (404, b"{}"))
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.root = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.seen]


@contextmanager
def _serving(routes: dict[str, tuple[int, bytes]]) -> Iterator[_Server]:
    server = _Server(routes)
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
        thread.join()


def _json(payload: Any) -> tuple[int, bytes]:
    return 200, json.dumps(payload).encode()


def _props(n_ctx: int) -> tuple[int, bytes]:
    return _json({"default_generation_settings": {"n_ctx": n_ctx}, "n_ctx": n_ctx})


def _models(model: str, size: int) -> tuple[int, bytes]:
    return _json({"data": [{"id": model, "max_model_len": size}]})


@contextmanager
def _silent() -> Iterator[str]:
    """A port that takes connections and never answers: a base URL on it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        listener.close()


async def _get(window: ContextWindow) -> int | None:
    return await asyncio.wait_for(window.get(), 60)


# A strict window refuses a prompt over it, whatever the reply limit.

BIG = [Message("user", "x" * 400_000)]  # about 100,000 tokens


async def _refused_when_over(window: ContextWindow, max_output_tokens: int) -> None:
    with pytest.raises(ContextLengthError, match="context window"):
        await window.plan("", BIG, max_output_tokens)


@pytest.mark.parametrize("max_output_tokens", [4096, 200, 8000])
async def test_a_configured_window_refuses_a_prompt_over_it_whatever_the_reply_limit(
    max_output_tokens: int,
) -> None:
    """64k configured: the least reply is min(limit, 4096), so with a limit of 4096 or 200 it is
    the whole limit, and a prompt of 100k tokens must still be refused before it is sent."""
    window = ContextWindow("local", {"local": ModelInfo(context_window=65_536)}, None, None)
    await _refused_when_over(window, max_output_tokens)


async def test_a_servers_window_refuses_a_prompt_over_it_whatever_the_reply_limit() -> None:
    with _serving({"/props": _props(65_536)}) as server:
        window = ContextWindow("local", {}, server.root + "/v1", None)
        await _refused_when_over(window, 4096)
        await _refused_when_over(window, 200)


async def test_a_learned_window_refuses_a_prompt_over_it_whatever_the_reply_limit() -> None:
    window = ContextWindow("local-unknown", {}, None, None)
    planned = await window.plan("s", [Message("user", "x" * 4000)], 65_536)
    window.succeeded(planned, Usage(input_tokens=1000, output_tokens=64_536), "length")
    assert await window.get() == 65_536
    await _refused_when_over(window, 4096)


async def test_the_tables_window_asks_for_the_least_reply_for_a_prompt_over_it() -> None:
    """gpt-4o's 128,000 from the table: not strict, the server decides (no refusal)."""
    window = ContextWindow("gpt-4o", {}, None, None)
    huge = [Message("user", "x" * 600_000)]
    assert (await window.plan("", huge, 4096)).max_tokens == 4096
    assert (await window.plan("", huge, 9000)).max_tokens == 128_000 // 16


async def test_a_whole_reply_that_fits_is_planned_with_the_prompts_tokens_rounded_up() -> None:
    """System and messages both count, rounded up: 3 + 4,002 characters are 1,002 tokens, whether
    the reply fits whole (the shortcut) or is clamped."""
    messages = [Message("user", "x" * 4002)]
    roomy = ContextWindow("local", {"local": ModelInfo(context_window=64_000)}, None, None)
    fits = await roomy.plan("sss", messages, 4096)
    assert fits == Planned(max_tokens=4096, prompt_tokens=1002)
    tight = ContextWindow("local", {"local": ModelInfo(context_window=5000)}, None, None)
    clamped = await tight.plan("sss", messages, 4096)
    assert clamped.prompt_tokens == 1002 and clamped.max_tokens < 4096
    unknown = await ContextWindow("local-unknown", {}, None, None).plan("sss", messages, 4096)
    assert unknown == Planned(max_tokens=4096, prompt_tokens=1002)


async def test_a_reply_that_fits_exactly_is_asked_for_whole() -> None:
    """A prompt estimated at 4,263 tokens (see the rules file) and a window of 4,263 + 4,096."""
    messages = [Message("user", "a"), Message("assistant", "x" * 16_002)]
    window = ContextWindow("local", {"local": ModelInfo(context_window=4263 + 4096)}, None, None)
    assert (await window.plan("", messages, 4096)).max_tokens == 4096
    assert (await window.plan("", messages, 4097)).max_tokens == 4096


# What a server is asked, and how.


async def test_props_is_asked_at_the_servers_root_and_models_under_the_base_url() -> None:
    """Whatever the base URL's form (with `/v1`, a trailing slash, or without), `/props` is the
    root's and `/models` the base URL's; `/props` answering ends the probe."""
    for suffix in ("/v1", "/v1/", ""):
        with _serving({"/props": _props(4096), "/v1/models": _models("m", 9)}) as server:
            window = ContextWindow("m", {}, server.root + suffix, None)
            assert await _get(window) == 4096
            assert server.paths == ["/props"]
        with _serving({"/v1/models": _models("m", 8000), "/models": _models("m", 7000)}) as server:
            window = ContextWindow("m", {}, server.root + suffix, None)
            expected = 7000 if suffix == "" else 8000
            assert await _get(window) == expected
            models = "/models" if suffix == "" else "/v1/models"
            assert server.paths == ["/props", models]


async def test_both_requests_send_the_api_key_as_a_bearer_and_ask_for_json() -> None:
    with _serving({"/v1/models": _models("m", 8000)}) as server:
        assert await _get(ContextWindow("m", {}, server.root + "/v1", "sk-local-1")) == 8000
        assert len(server.seen) == 2
        for _, headers in server.seen:
            assert headers["authorization"] == "Bearer sk-local-1"
            assert headers["accept"] == "application/json"
    with _serving({"/v1/models": _models("m", 8000)}) as server:
        assert await _get(ContextWindow("m", {}, server.root + "/v1", None)) == 8000
        assert len(server.seen) == 2
        assert all("authorization" not in headers for _, headers in server.seen)


def _padded(payload: Any, size: int) -> tuple[int, bytes]:
    body = json.dumps(payload).encode()
    return 200, body + b" " * (size - len(body))


async def test_an_answer_of_the_bound_is_read_and_one_byte_more_is_ignored() -> None:
    props = {"n_ctx": 4096}
    with _serving({"/props": _padded(props, PROBE_MAX_BYTES)}) as server:
        assert await _get(ContextWindow("m", {}, server.root, None)) == 4096
    with _serving({"/props": _padded(props, PROBE_MAX_BYTES + 1)}) as server:
        assert await _get(ContextWindow("m", {}, server.root, None)) is None


async def test_a_server_that_never_answers_costs_the_probes_time_and_no_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each request is bounded by what is left of the probe's time: the table's window then."""
    monkeypatch.setattr(cw, "PROBE_TIMEOUT_S", 0.3)
    with _silent() as url:
        assert await _get(ContextWindow("gpt-4o", {}, url, None)) == 128_000


class _Clock:
    """`time` for the probe: the deadline is taken at 0, every later reading is `later`."""

    def __init__(self, later: float) -> None:
        self.readings = iter([0.0])
        self.later = later

    def monotonic(self) -> float:
        return next(self.readings, self.later)


async def test_a_request_is_sent_while_any_of_the_probes_time_is_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With 0.999 s of the 5 left the server is asked; with none left it is not."""
    with _serving({"/props": _props(4096)}) as server:
        monkeypatch.setattr(cw, "time", _Clock(later=cw.PROBE_TIMEOUT_S - 0.999))
        assert await _get(ContextWindow("m", {}, server.root, None)) == 4096
    with _serving({"/props": _props(4096)}) as server:
        monkeypatch.setattr(cw, "time", _Clock(later=cw.PROBE_TIMEOUT_S))
        assert await _get(ContextWindow("m", {}, server.root, None)) is None
        assert server.seen == []


async def test_the_probe_runs_in_a_named_daemon_thread_that_never_holds_the_process() -> None:
    with _silent() as url:
        window = ContextWindow("m", {}, url, None)
        probes = [t for t in threading.enumerate() if t.name == "context-window-probe"]
        assert probes and all(t.daemon for t in probes)
    assert await _get(window) is None  # the listener closed: the probe ends


async def test_a_failed_request_is_a_debug_line_naming_the_url_and_the_errors_kind(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    with _serving({}) as server:
        assert await _get(ContextWindow("m", {}, server.root + "/v1", None)) is None
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert f"context window: GET {server.root}/props failed: HTTPError" in lines
    assert f"context window: GET {server.root}/v1/models failed: HTTPError" in lines


async def test_an_answer_over_the_bound_is_a_debug_line_naming_the_url_and_the_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    with _serving({"/props": _padded({"n_ctx": 1}, PROBE_MAX_BYTES + 1)}) as server:
        assert await _get(ContextWindow("m", {}, server.root, None)) is None
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    expected = f"context window: GET {server.root}/props answered more than 4000000 bytes"
    assert expected in lines


async def test_a_base_url_that_is_no_url_leaves_the_window_to_the_table_with_a_debug_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    assert await _get(ContextWindow("gpt-4o", {}, "no-scheme-here", None)) == 128_000
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    failed = "context window: probe of no-scheme-here failed: "
    assert any(line.startswith(failed) for line in lines)


@pytest.mark.parametrize("path", ["/props", "/v1/models"])
async def test_the_servers_window_is_logged_once_with_where_it_came_from(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    route = _props(4096) if path == "/props" else _models("m", 4096)
    with _serving({path: route}) as server:
        window = ContextWindow("m", {}, server.root + "/v1", None)
        assert await _get(window) == 4096
        assert await _get(window) == 4096
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert lines == [f"context window of m: 4096 tokens ({server.root}{path})"]


async def test_an_entry_that_configures_no_window_leaves_the_window_to_the_server() -> None:
    """A price alone configured for `m` (or for the family `m-...` is dated from) is not the
    operator's word on the window."""
    priced = ModelInfo(input_usd_per_mtok=1.0)
    for model, overrides in (("m", {"m": priced}), ("m-2025", {"m": priced})):
        with _serving({"/props": _props(4096)}) as server:
            assert await _get(ContextWindow(model, overrides, server.root, None)) == 4096


# What a stream cut and a length stop teach.


def test_what_a_server_said_and_a_plan_are_values_that_do_not_change() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        ServerFacts(n_ctx=1).n_ctx = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Planned(1, 2).max_tokens = 3  # type: ignore[misc]


def test_entries_that_say_no_window_do_not_hide_the_ones_after_them() -> None:
    payload = {"data": ["junk", {"max_model_len": 5}, {"id": "a"}, {"id": "b", "max_model_len": 7}]}
    assert parse_models(payload) == {"b": 7}


async def _after_a_success(window: ContextWindow) -> None:
    first = await window.plan("s", [Message("user", "x" * 40)], 100)
    window.succeeded(first, Usage(input_tokens=10, output_tokens=5), "stop")


async def test_a_stream_cut_beside_another_request_is_an_interruption_every_time() -> None:
    """Even where it would be an overflow guess (past every success): retried, one request at a
    time from then on, logged once."""
    window = ContextWindow("m", {"m": ModelInfo(max_concurrency=3)}, None, None)
    assert window.slots.limit == 3
    await _after_a_success(window)
    cut = Slot(overlapped=True)
    for _ in range(2):
        error = window.broken_stream(Planned(100, 50_000), cut)
        assert error.kind == "broken_stream" and "one request at a time" in error.message
    assert window.slots.limit == 1
    assert await window.get() is None


async def test_the_interruption_is_logged_only_when_it_serializes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    window = ContextWindow("m", {}, None, None)
    window.broken_stream(Planned(100, 50), Slot(overlapped=True))
    window.broken_stream(Planned(100, 50), Slot(overlapped=True))
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert lines == [
        "requests to m: one at a time from now on (a stream was cut while another request was"
        " in flight)"
    ]


async def test_a_stream_cut_alone_is_read_by_size_as_without_a_slot() -> None:
    window = ContextWindow("m", {}, None, None)
    await _after_a_success(window)
    alone = Slot(overlapped=False)
    guess = window.broken_stream(Planned(100, 50_000), alone)
    assert is_context_length(guess) and guess.status == 400
    assert guess.code == "context_length_exceeded"
    assert window.slots.limit is None


async def test_a_stream_cut_at_exactly_the_tables_window_teaches_nothing() -> None:
    """gpt-4o's 128,000 from the table: a cut on a prompt of 128,000 says nothing new, so the
    window stays the table's (not strict: a larger prompt still gets the least reply)."""
    window = ContextWindow("gpt-4o", {}, None, None)
    await _after_a_success(window)
    assert is_context_length(window.broken_stream(Planned(100, 128_000)))
    assert await window.get() == 128_000
    huge = [Message("user", "x" * 600_000)]
    assert (await window.plan("", huge, 9000)).max_tokens == 128_000 // 16


async def test_a_stream_cut_below_the_largest_exchange_done_is_a_broken_stream() -> None:
    """The server completed 10,000 tokens in all: a cut on a 9,999-token prompt (larger than
    any prompt that succeeded) is no overflow; on a 10,000-token one it is."""
    window = ContextWindow("m", {}, None, None)
    window.succeeded(Planned(100, 10), Usage(input_tokens=10, output_tokens=9990), "stop")
    assert window.broken_stream(Planned(100, 9999)).kind == "broken_stream"
    assert is_context_length(window.broken_stream(Planned(100, 10_000)))


async def test_a_success_after_an_overflow_guess_allows_the_next_guess() -> None:
    window = ContextWindow("m", {}, None, None)
    await _after_a_success(window)
    assert is_context_length(window.broken_stream(Planned(100, 50_000)))
    assert window.broken_stream(Planned(100, 60_000)).kind == "broken_stream"
    window.succeeded(Planned(100, 20), Usage(input_tokens=20, output_tokens=5), "stop")
    assert is_context_length(window.broken_stream(Planned(100, 40_000)))
    assert await window.get() == 40_000


async def test_an_empty_prompts_success_counts_as_a_success() -> None:
    """A success on an empty prompt (0 tokens, estimated usage): a cut on a 1-token prompt is
    past it, so an overflow guess."""
    window = ContextWindow("m", {}, None, None)
    window.succeeded(Planned(100, 0), Usage(estimated=True), "stop")
    assert is_context_length(window.broken_stream(Planned(100, 1)))


async def test_a_learned_window_is_never_below_an_exchange_the_server_completed() -> None:
    """10,000 tokens done, then a length stop short of the limit at 6,000 in all: 10,000."""
    window = ContextWindow("m", {}, None, None)
    window.succeeded(Planned(100, 10), Usage(input_tokens=9000, output_tokens=1000), "stop")
    window.succeeded(Planned(4096, 10), Usage(input_tokens=5000, output_tokens=1000), "length")
    assert await window.get() == 10_000


@pytest.mark.parametrize(("estimated", "counted"), [(False, ""), (True, "estimated ")])
async def test_a_learned_window_is_logged_with_why(
    estimated: bool, counted: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    window = ContextWindow("m", {}, None, None)
    usage = Usage(input_tokens=5000, output_tokens=1000, estimated=estimated)
    window.succeeded(Planned(4096, 5000), usage, "length")
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert lines == [
        f"context window of m: 6000 tokens, learned (a reply stopped at `length` after 1000"
        f" {counted}of the 4096 output tokens asked for)"
    ]


def test_a_prompt_that_leaves_exactly_the_least_reply_gets_it_even_when_strict() -> None:
    """A prompt of 4,263 tokens (see the rules file) in a window of 4,547: the least reply is
    4,547 // 16 = 284, and 284 are left."""
    two = [Message("user", "a"), Message("assistant", "b")]
    assert cw.reply_limit(4547, "", two, 8000, chars=16_003) == 284
    with pytest.raises(ContextLengthError, match="leaves 283 of the 4546-token"):
        cw.reply_limit(4546, "", two, 8000, chars=16_003)


async def test_the_largest_prompt_that_succeeded_is_kept_when_a_smaller_one_follows() -> None:
    """Prompts of 10,000 then 100 tokens succeeded (the server reported a tiny usage, so the
    largest exchange done says nothing): a cut on 5,000 is below a success, a broken stream."""
    window = ContextWindow("m", {}, None, None)
    window.succeeded(Planned(100, 10_000), Usage(input_tokens=1, output_tokens=1), "stop")
    window.succeeded(Planned(100, 100), Usage(input_tokens=1, output_tokens=1), "stop")
    assert window.broken_stream(Planned(100, 5000)).kind == "broken_stream"
    assert window.broken_stream(Planned(100, 10_000)).kind == "broken_stream"  # no larger
    assert is_context_length(window.broken_stream(Planned(100, 10_001)))


async def test_every_message_counts_its_template_tokens_even_when_empty() -> None:
    """A thousand empty messages are 4 x 1,001 = 4,004 tokens of chat template: over a window
    of 4,000 whatever the reply limit, and the plan refuses them as `reply_limit` does."""
    empty = [Message("user", "") for _ in range(1000)]
    window = ContextWindow("local", {"local": ModelInfo(context_window=4000)}, None, None)
    for limit in (100, 4096):
        with pytest.raises(ContextLengthError, match="about 4004 tokens"):
            await window.plan("", empty, limit)
